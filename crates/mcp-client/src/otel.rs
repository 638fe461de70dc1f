//! OpenTelemetry spans and metrics for what a client sends (feature `otel`), named as the
//! OpenTelemetry semantic conventions for MCP name them (`docs/telemetry.md`).
//!
//! One hook sees every request and notification the client sends (the session's connection
//! sends them all through one place): a `CLIENT` span named `{mcp.method.name} {target}`
//! (the target is the tool or the prompt), child of the caller's current context; that span's
//! context is injected into the message's `params._meta` (`traceparent`, `tracestate`,
//! `baggage`, unprefixed as the conventions write them), so the server's span is its child.
//! The outcome classifies the error: the JSON-RPC error code, `tool_error` for a tool result
//! with `isError`, `timeout`, `cancelled`. Durations go to the `mcp.client.operation.duration`
//! and `mcp.client.session.duration` histograms.
//!
//! Built on the OpenTelemetry API directly, not on `tracing` + `tracing-opentelemetry`, for the
//! reasons `mcp_server::otel` gives: span kind and injection are the API's own, the SDK and
//! the exporter stay the application's choice, and nothing runs until [`install`] is called.
//!
//! ```no_run
//! // Once, at start-up, after the application has set up its OpenTelemetry SDK:
//! mcp_client::otel::install(mcp_client::otel::Telemetry::global()).ok();
//! ```

use std::time::Instant;

use mcp_otel::{Direction, Peek};
use mcp_types::ProtocolVersion;
use opentelemetry::trace::{SpanBuilder, SpanKind};
use opentelemetry::{Context, KeyValue};
use serde_json::value::RawValue;

pub use mcp_otel::DURATION_BUCKETS;
pub(crate) use mcp_otel::Outcome;

/// The attribute and metric names this crate emits, as the MCP semantic conventions spell
/// them.
pub mod names {
    pub use mcp_otel::names::{
        ERROR_TYPE, GEN_AI_OPERATION_NAME, GEN_AI_PROMPT_NAME, GEN_AI_TOOL_NAME,
        JSONRPC_REQUEST_ID, MCP_CLIENT_OPERATION_DURATION, MCP_CLIENT_SESSION_DURATION,
        MCP_METHOD_NAME, MCP_PROTOCOL_VERSION, MCP_RESOURCE_URI, MCP_SERVER_OPERATION_DURATION,
        MCP_SESSION_ID, NETWORK_PROTOCOL_NAME, NETWORK_TRANSPORT, RPC_RESPONSE_STATUS_CODE,
    };

    /// Every name above: attributes first, then the metrics.
    pub const ALL: &[&str] = &[
        MCP_METHOD_NAME,
        MCP_SESSION_ID,
        MCP_PROTOCOL_VERSION,
        MCP_RESOURCE_URI,
        GEN_AI_TOOL_NAME,
        GEN_AI_PROMPT_NAME,
        GEN_AI_OPERATION_NAME,
        JSONRPC_REQUEST_ID,
        RPC_RESPONSE_STATUS_CODE,
        ERROR_TYPE,
        NETWORK_TRANSPORT,
        NETWORK_PROTOCOL_NAME,
        MCP_CLIENT_OPERATION_DURATION,
        MCP_CLIENT_SESSION_DURATION,
        MCP_SERVER_OPERATION_DURATION,
    ];
}

mcp_otel::telemetry! {
    side: Client;
    /// The tracer, the instruments and the propagator the client's spans and metrics use.
    pub struct Telemetry;
    /// Turns the client's telemetry on for this process: every session then records what it
    /// sends with `telemetry`. Once only; a second call gives its argument back.
    pub fn install;
}

/// What the spans say of the connection: its transport, and over HTTP the session.
#[derive(Clone, Default)]
pub(crate) enum Transport {
    /// stdio, or any connection that is not the HTTP client's (`network.transport` `pipe`).
    #[default]
    Pipe,
    /// The Streamable HTTP client's (`tcp`, `http`), whose handle knows the session id.
    #[cfg(feature = "http")]
    Http(mcp_transport_http::client::HttpClientHandle),
}

impl Transport {
    /// What `connection`'s transport attached: the HTTP client's handle, or nothing.
    pub(crate) fn of(connection: &mcp_jsonrpc::Connection) -> Self {
        #[cfg(feature = "http")]
        if let Some(handle) = connection
            .extensions()
            .get::<mcp_transport_http::client::HttpClientHandle>()
        {
            return Transport::Http(handle.clone());
        }
        let _ = connection;
        Transport::Pipe
    }

    /// The low-cardinality attributes: the metric's as well as the span's.
    fn attributes(&self, attributes: &mut Vec<KeyValue>) {
        match self {
            Transport::Pipe => attributes.push(KeyValue::new(names::NETWORK_TRANSPORT, "pipe")),
            #[cfg(feature = "http")]
            Transport::Http(_) => {
                attributes.push(KeyValue::new(names::NETWORK_TRANSPORT, "tcp"));
                attributes.push(KeyValue::new(names::NETWORK_PROTOCOL_NAME, "http"));
            }
        }
    }

    /// `mcp.session.id`, when the server gave one (stateful sessions over HTTP).
    fn session(&self) -> Option<KeyValue> {
        match self {
            Transport::Pipe => None,
            #[cfg(feature = "http")]
            Transport::Http(handle) => handle
                .session_id()
                .map(|id| KeyValue::new(names::MCP_SESSION_ID, id)),
        }
    }
}

/// One request or notification being sent, or received from the server: its span and what
/// its duration is recorded with. Dropped unended (the caller dropped the request), it ends
/// with `error.type` `cancelled`.
pub(crate) struct Operation {
    inner: mcp_otel::Operation,
    /// The connection, while the span still lacks `mcp.session.id` (the session id comes with
    /// the answer to `initialize`).
    session: Option<Transport>,
}

impl Telemetry {
    /// Starts the span of an outgoing message, child of the caller's current context.
    pub(crate) fn start(
        &'static self,
        method: &str,
        params: Option<&RawValue>,
        version: Option<ProtocolVersion>,
        transport: &Transport,
    ) -> Operation {
        let start = Instant::now();
        let peek = Peek::of(params);
        let (mut attributes, target) =
            peek.attributes(method, version.map(ProtocolVersion::as_str));
        transport.attributes(&mut attributes);
        let mut span_attributes = attributes.clone();
        span_attributes.extend(peek.resource(method));
        let session = transport.session();
        let pending = session.is_none().then(|| transport.clone());
        span_attributes.extend(session);
        let span = SpanBuilder::from_name(mcp_otel::span_name(method, target))
            .with_kind(SpanKind::Client)
            .with_attributes(span_attributes);
        Operation {
            inner: self
                .0
                .operation(Direction::Sent, start, Context::current(), span, attributes),
            session: pending,
        }
    }

    /// Starts the span of a request or notification the server sent (kind `SERVER`, as the
    /// conventions have the receiver's span), its parent the context in `params._meta`, else
    /// the current one.
    pub(crate) fn start_received(
        &'static self,
        method: &str,
        id: Option<&mcp_jsonrpc::Id>,
        params: Option<&RawValue>,
    ) -> Operation {
        let start = Instant::now();
        let peek = Peek::of(params);
        let attributes = vec![KeyValue::new(names::MCP_METHOD_NAME, method.to_owned())];
        let mut span_attributes = attributes.clone();
        span_attributes.extend(id.map(mcp_otel::request_id));
        if method == "notifications/resources/updated" {
            span_attributes.extend(peek.uri());
        }
        let parent = self.0.remote_parent(&peek).unwrap_or_else(Context::current);
        let span = SpanBuilder::from_name(method.to_owned())
            .with_kind(SpanKind::Server)
            .with_attributes(span_attributes);
        Operation {
            inner: self
                .0
                .operation(Direction::Received, start, parent, span, attributes),
            session: None,
        }
    }

    /// Records the duration of a session that ended.
    pub(crate) fn session_ended(&self, started: Instant, version: ProtocolVersion) {
        self.0.session_ended(started, version.as_str(), false);
    }
}

impl Operation {
    /// The context the message is sent in: the span's.
    pub(crate) fn context(&self) -> Context {
        self.inner.context()
    }

    /// `params` carrying this span's context in `_meta`.
    pub(crate) fn inject(&self, params: Option<Box<RawValue>>) -> Option<Box<RawValue>> {
        self.inner.inject(params)
    }

    /// `options` that name the request on its span (`jsonrpc.request.id`) when the engine
    /// numbers it.
    pub(crate) fn options(
        &self,
        options: mcp_jsonrpc::RequestOptions,
    ) -> mcp_jsonrpc::RequestOptions {
        options.on_id(self.inner.id_recorder())
    }

    /// Ends the span with how the message ended.
    pub(crate) fn end(mut self, outcome: Outcome<'_>) {
        // A method the client does not have (asked by the server, or refused by it) leaves
        // the metric's attributes: the peer cannot multiply the series.
        if matches!(
            outcome,
            Outcome::Error(mcp_jsonrpc::codes::METHOD_NOT_FOUND, _)
        ) {
            self.inner.hide_method();
        }
        if let Some(session) = self.session.take().and_then(|t| t.session()) {
            self.inner.set_span_attribute(session);
        }
        self.inner.end(outcome);
    }
}
