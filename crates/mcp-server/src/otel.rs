//! OpenTelemetry spans and metrics for what a server receives (feature `otel`), named as the
//! OpenTelemetry semantic conventions for MCP name them (`docs/telemetry.md`).
//!
//! One hook sees every request and notification, whatever the transport and the era: a
//! `SERVER` span named `{mcp.method.name} {target}` (the target is the tool or the prompt), its
//! parent the trace context the client put in `params._meta` (`traceparent`, `tracestate`,
//! `baggage`), the HTTP request's own `traceparent` only as a link; the handler runs inside
//! the span's context, so spans the handler makes (with the OpenTelemetry API, or with
//! `tracing` through `tracing-opentelemetry`) are its children. The outcome classifies the
//! error: the JSON-RPC error code, or `tool_error` for a tool result with `isError`. Durations
//! go to the `mcp.server.operation.duration` and `mcp.server.session.duration` histograms.
//!
//! Built on the OpenTelemetry API directly rather than on `tracing` spans bridged by
//! `tracing-opentelemetry`: the conventions need a span kind, a remote parent taken from the
//! message and links, which the bridge only offers through its own extension traits and only
//! when the application's subscriber has its layer; a library that depends on the API alone
//! leaves the choice of SDK, exporter and subscriber to the application, and costs nothing
//! until [`install`] is called (one branch on a static per request).
//!
//! ```no_run
//! // Once, at start-up, after the application has set up its OpenTelemetry SDK:
//! mcp_server::otel::install(mcp_server::otel::Telemetry::global()).ok();
//! ```

use std::time::Instant;

use mcp_jsonrpc::{ErrorObject, Extensions, Id, RawJson};
use mcp_otel::{Direction, Outcome, Peek};
use mcp_types::ProtocolVersion;
use opentelemetry::global::BoxedSpan;
use opentelemetry::trace::{FutureExt, Link, SpanBuilder, SpanKind, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};
use serde_json::value::RawValue;

pub use mcp_otel::DURATION_BUCKETS;

/// The attribute and metric names this crate emits, as the MCP semantic conventions spell
/// them.
pub mod names {
    pub use mcp_otel::names::{
        ERROR_TYPE, GEN_AI_OPERATION_NAME, GEN_AI_PROMPT_NAME, GEN_AI_TOOL_NAME,
        JSONRPC_REQUEST_ID, MCP_CLIENT_OPERATION_DURATION, MCP_METHOD_NAME, MCP_PROTOCOL_VERSION,
        MCP_RESOURCE_URI, MCP_SERVER_OPERATION_DURATION, MCP_SERVER_SESSION_DURATION,
        MCP_SESSION_ID, NETWORK_PROTOCOL_NAME, NETWORK_PROTOCOL_VERSION, NETWORK_TRANSPORT,
        RPC_RESPONSE_STATUS_CODE,
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
        NETWORK_PROTOCOL_VERSION,
        MCP_SERVER_OPERATION_DURATION,
        MCP_SERVER_SESSION_DURATION,
        MCP_CLIENT_OPERATION_DURATION,
    ];
}

use names::*;

mcp_otel::telemetry! {
    side: Server;
    /// The tracer, the instruments and the propagator the server's spans and metrics use.
    pub struct Telemetry;
    /// Turns the server's telemetry on for this process: every server then records its
    /// requests, notifications and sessions with `telemetry`. Once only; a second call gives
    /// its argument back.
    pub fn install;
}

/// What the hook reads of an inbound message when it starts.
pub(crate) struct Inbound<'a> {
    pub(crate) method: &'a str,
    /// `None` for a notification.
    pub(crate) id: Option<&'a Id>,
    pub(crate) params: Option<&'a RawValue>,
    pub(crate) extensions: &'a Extensions,
    /// The revision the message is served under, when known.
    pub(crate) version: Option<ProtocolVersion>,
}

/// One request or notification being served, or sent by the server: its span and what its
/// duration is recorded with. Ended by [`Operation::end`] (or [`Operation::end_sent`]);
/// dropped unended (the request was cancelled, or its connection closed), it ends with
/// `error.type` `cancelled`.
pub(crate) struct Operation(mcp_otel::Operation);

impl Telemetry {
    /// Starts the span of an inbound message.
    pub(crate) fn start(&'static self, inbound: Inbound<'_>) -> Operation {
        let start = Instant::now();
        let method = inbound.method;
        let peek = Peek::of(inbound.params);
        let (mut attributes, target) =
            peek.attributes(method, inbound.version.map(ProtocolVersion::as_str));
        let mut links = Vec::new();
        let mut http_version = None;
        let mut session = None;
        // Over HTTP the transport attaches the request's head.
        if let Some(parts) = inbound.extensions.get::<http::request::Parts>() {
            http_version = Some(match parts.version {
                http::Version::HTTP_09 => "0.9",
                http::Version::HTTP_10 => "1.0",
                http::Version::HTTP_2 => "2",
                http::Version::HTTP_3 => "3",
                _ => "1.1",
            });
            session = parts
                .headers
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok());
            // The HTTP exchange's context is the transport's, not the message's: a link.
            let transport = self.0.extract(&mcp_otel::HeaderCarrier(&parts.headers));
            let linked = transport.span().span_context().clone();
            if linked.is_valid() {
                links.push(Link::with_context(linked));
            }
        }
        match http_version {
            Some(v) => {
                attributes.push(KeyValue::new(NETWORK_TRANSPORT, "tcp"));
                attributes.push(KeyValue::new(NETWORK_PROTOCOL_NAME, "http"));
                attributes.push(KeyValue::new(NETWORK_PROTOCOL_VERSION, v));
            }
            None => attributes.push(KeyValue::new(NETWORK_TRANSPORT, "pipe")),
        }
        // The metric's attributes are the low-cardinality ones gathered so far.
        let mut span_attributes = attributes.clone();
        span_attributes.extend(inbound.id.map(mcp_otel::request_id));
        if let Some(session) = session {
            span_attributes.push(KeyValue::new(MCP_SESSION_ID, session.to_owned()));
        }
        span_attributes.extend(peek.resource(method));
        // The parent is the client's context from `_meta`; the ambient one (a span the
        // application opened around the server) is then a link. Without `_meta` context the
        // ambient context is the parent.
        let ambient = Context::current();
        let parent = match self.0.remote_parent(&peek) {
            Some(cx) => {
                let ambient_span = ambient.span().span_context().clone();
                if ambient_span.is_valid() {
                    links.push(Link::with_context(ambient_span));
                }
                cx
            }
            None => ambient,
        };
        let span = SpanBuilder::from_name(mcp_otel::span_name(method, target))
            .with_kind(SpanKind::Server)
            .with_attributes(span_attributes)
            .with_links(links);
        Operation(
            self.0
                .operation(Direction::Received, start, parent, span, attributes),
        )
    }

    /// Starts the span of a request or notification the server sends (kind `CLIENT`, as the
    /// conventions have the sender's span), child of the current context: the span of the
    /// request whose handler sends it; a root for the list-changed and resource-updated
    /// notifications each session's fan-out sends, which belong to no request. `params` give
    /// `notifications/resources/updated` its `mcp.resource.uri`.
    pub(crate) fn start_sent(
        &'static self,
        method: &str,
        version: Option<ProtocolVersion>,
        params: Option<&RawValue>,
    ) -> Operation {
        let start = Instant::now();
        let mut attributes = vec![KeyValue::new(MCP_METHOD_NAME, method.to_owned())];
        if let Some(version) = version {
            attributes.push(KeyValue::new(MCP_PROTOCOL_VERSION, version.as_str()));
        }
        let mut span_attributes = attributes.clone();
        if method == "notifications/resources/updated" {
            span_attributes.extend(Peek::of(params).uri());
        }
        let span = SpanBuilder::from_name(method.to_owned())
            .with_kind(SpanKind::Client)
            .with_attributes(span_attributes);
        Operation(
            self.0
                .operation(Direction::Sent, start, Context::current(), span, attributes),
        )
    }

    /// Records the duration of a session that ended; `version` is the revision it
    /// negotiated.
    pub(crate) fn session_ended(&self, started: Instant, version: ProtocolVersion, failed: bool) {
        self.0.session_ended(started, version.as_str(), failed);
    }
}

impl Operation {
    /// The context the handler runs in: the span's.
    pub(crate) fn context(&self) -> Context {
        self.0.context()
    }

    /// `params` carrying this span's context in `_meta` (what the server sends).
    pub(crate) fn inject(&self, params: Option<Box<RawValue>>) -> Option<Box<RawValue>> {
        self.0.inject(params)
    }

    /// `options` that name a request the server sends on its span (`jsonrpc.request.id`)
    /// when the engine numbers it.
    pub(crate) fn options(
        &self,
        options: mcp_jsonrpc::RequestOptions,
    ) -> mcp_jsonrpc::RequestOptions {
        options.on_id(self.0.id_recorder())
    }

    /// Ends the span with the answer (`None` for a notification, which has none).
    pub(crate) fn end(mut self, outcome: Option<Result<&RawJson, &ErrorObject>>) {
        let outcome = match outcome {
            Some(Err(error)) => {
                self.bound_cardinality(error.code);
                Outcome::Error(error.code, &error.message)
            }
            Some(Ok(raw)) => Outcome::Done(Some(raw.get())),
            None => Outcome::Done(None),
        };
        self.0.end(outcome);
    }

    /// The method and the target come from the client: a method that does not exist, or a
    /// tool or prompt that was refused, leaves the metric's attributes (the span keeps them),
    /// so a client cannot grow the number of time series at will.
    fn bound_cardinality(&mut self, code: i64) {
        use mcp_jsonrpc::codes::{INVALID_PARAMS, METHOD_NOT_FOUND};
        if code == METHOD_NOT_FOUND {
            self.0.hide_method();
        }
        if code == INVALID_PARAMS || code == METHOD_NOT_FOUND {
            self.0.hide_target();
        }
    }

    /// Ends the span of a request the server sent with the client's answer.
    pub(crate) fn end_sent(self, answer: &Result<Box<RawValue>, mcp_jsonrpc::CallError>) {
        self.0.end(Outcome::of(answer));
    }
}

/// Runs a tool inside a span of its own, `execute_tool {name}` (kind `INTERNAL`, as the GenAI
/// conventions name a tool's execution), child of the request's span: what the tool records
/// (with the OpenTelemetry API, or `tracing` bridged by `tracing-opentelemetry`) nests in it.
/// Without installed telemetry the tool's future is returned as it is.
pub(crate) fn in_tool_span<F: std::future::Future>(
    name: &str,
    tool: F,
) -> tokio_util::either::Either<opentelemetry::context::WithContext<F>, F> {
    use tokio_util::either::Either;
    let Some(telemetry) = installed() else {
        return Either::Right(tool);
    };
    let parent = Context::current();
    let tracer = telemetry.0.tracer();
    let span: BoxedSpan = tracer.build_with_context(
        tracer
            .span_builder(format!("execute_tool {name}"))
            .with_kind(SpanKind::Internal)
            .with_attributes([
                KeyValue::new(GEN_AI_TOOL_NAME, name.to_owned()),
                KeyValue::new(GEN_AI_OPERATION_NAME, "execute_tool"),
            ]),
        &parent,
    );
    // The span ends when the tool's future is dropped (done or cancelled).
    Either::Left(tool.with_context(parent.with_span(span)))
}

/// Serves `answer` inside the span of `operation` and ends the span with the answer.
pub(crate) async fn traced<F>(operation: Operation, answer: F) -> Result<RawJson, ErrorObject>
where
    F: std::future::Future<Output = Result<RawJson, ErrorObject>>,
{
    let result = answer.with_context(operation.context()).await;
    operation.end(Some(result.as_ref()));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_methods_and_targets_leave_the_metric() {
        // The global providers are no-ops here: spans and records cost nothing.
        let telemetry: &'static Telemetry = Box::leak(Box::new(Telemetry::global()));
        let extensions = Extensions::default();
        let params = mcp_jsonrpc::to_raw(&serde_json::json!({"name": "random-123"}));
        let start = |method| {
            telemetry.start(Inbound {
                method,
                id: None,
                params: params.as_deref().ok(),
                extensions: &extensions,
                version: None,
            })
        };
        let value = |op: &Operation, key: &str| {
            op.0.attributes()
                .iter()
                .find(|kv| kv.key.as_str() == key)
                .map(|kv| kv.value.as_str().into_owned())
        };
        let mut unknown = start("tools/call");
        assert_eq!(
            value(&unknown, GEN_AI_TOOL_NAME).as_deref(),
            Some("random-123")
        );
        unknown.bound_cardinality(mcp_jsonrpc::codes::INVALID_PARAMS);
        assert_eq!(value(&unknown, GEN_AI_TOOL_NAME), None);
        assert_eq!(
            value(&unknown, MCP_METHOD_NAME).as_deref(),
            Some("tools/call")
        );
        let mut missing = start("acme/random-123");
        missing.bound_cardinality(mcp_jsonrpc::codes::METHOD_NOT_FOUND);
        assert_eq!(value(&missing, MCP_METHOD_NAME).as_deref(), Some("_OTHER"));
        let mut known = start("tools/call");
        known.bound_cardinality(-32000);
        assert_eq!(
            value(&known, GEN_AI_TOOL_NAME).as_deref(),
            Some("random-123")
        );
        for op in [unknown, missing, known] {
            op.end(None);
        }
    }
}
