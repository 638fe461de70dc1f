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

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Instant;

use mcp_jsonrpc::{ErrorObject, Extensions, Id, RawJson};
use mcp_types::ProtocolVersion;
use opentelemetry::global::{self, BoxedSpan, BoxedTracer};
use opentelemetry::metrics::{Histogram, Meter, MeterProvider};
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{
    FutureExt, Link, SpanKind, Status, TraceContextExt, Tracer, TracerProvider,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue};
use serde::Deserialize;
use serde_json::value::RawValue;

/// The attribute and metric names this crate emits, as the MCP semantic conventions spell
/// them.
pub mod names {
    /// The request or notification method.
    pub const MCP_METHOD_NAME: &str = "mcp.method.name";
    /// The session (stateful sessions over HTTP).
    pub const MCP_SESSION_ID: &str = "mcp.session.id";
    /// The protocol revision the message is served under.
    pub const MCP_PROTOCOL_VERSION: &str = "mcp.protocol.version";
    /// The resource of `resources/read`, `resources/subscribe`, `resources/unsubscribe`.
    pub const MCP_RESOURCE_URI: &str = "mcp.resource.uri";
    /// The tool of `tools/call`.
    pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
    /// The prompt of `prompts/get`.
    pub const GEN_AI_PROMPT_NAME: &str = "gen_ai.prompt.name";
    /// `execute_tool` on `tools/call`.
    pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
    /// The JSON-RPC id of a request.
    pub const JSONRPC_REQUEST_ID: &str = "jsonrpc.request.id";
    /// The JSON-RPC error code of an error answer.
    pub const RPC_RESPONSE_STATUS_CODE: &str = "rpc.response.status_code";
    /// The class of error: the JSON-RPC error code, `tool_error`, `cancelled`.
    pub const ERROR_TYPE: &str = "error.type";
    /// `pipe` (stdio and other byte streams) or `tcp` (HTTP).
    pub const NETWORK_TRANSPORT: &str = "network.transport";
    /// `http` over HTTP.
    pub const NETWORK_PROTOCOL_NAME: &str = "network.protocol.name";
    /// The HTTP version over HTTP.
    pub const NETWORK_PROTOCOL_VERSION: &str = "network.protocol.version";
    /// Histogram (seconds) of the requests and notifications the server received.
    pub const MCP_SERVER_OPERATION_DURATION: &str = "mcp.server.operation.duration";
    /// Histogram (seconds) of the server's sessions.
    pub const MCP_SERVER_SESSION_DURATION: &str = "mcp.server.session.duration";
    /// Histogram (seconds) of the requests and notifications the server sent (sampling,
    /// elicitation, roots, progress, log messages): the server is their sender.
    pub const MCP_CLIENT_OPERATION_DURATION: &str = "mcp.client.operation.duration";
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

/// The bucket boundaries (seconds) the conventions give for the MCP duration histograms.
pub const DURATION_BUCKETS: &[f64] = &[
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Where the trace context of a message is read from (and, on the client, written to).
enum Propagator {
    /// The application's global propagator (`opentelemetry::global::set_text_map_propagator`).
    Global,
    /// One given to [`Telemetry::propagator`].
    Own(Box<dyn TextMapPropagator + Send + Sync>),
}

/// The tracer, the instruments and the propagator the server's spans and metrics use.
pub struct Telemetry {
    tracer: BoxedTracer,
    operation: Histogram<f64>,
    /// What the server sends.
    sent: Histogram<f64>,
    session: Histogram<f64>,
    propagator: Propagator,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry").finish_non_exhaustive()
    }
}

fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("mcp-server")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

impl Telemetry {
    /// Spans, metrics and propagation through the application's global OpenTelemetry
    /// providers and propagator, as they are when this is called.
    pub fn global() -> Self {
        Self::with(
            global::tracer_with_scope(scope()),
            global::meter_with_scope(scope()),
        )
    }

    /// Spans from `tracers`, metrics from `meters`; the trace context is read with the
    /// global propagator unless [`propagator`](Self::propagator) names one.
    pub fn new<T, M>(tracers: &T, meters: &M) -> Self
    where
        T: TracerProvider,
        T::Tracer: Send + Sync + 'static,
        <T::Tracer as Tracer>::Span: Send + Sync + 'static,
        M: MeterProvider,
    {
        let tracer = BoxedTracer::new(Box::new(tracers.tracer_with_scope(scope())));
        Self::with(tracer, meters.meter_with_scope(scope()))
    }

    fn with(tracer: BoxedTracer, meter: Meter) -> Self {
        let histogram = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build()
        };
        Telemetry {
            tracer,
            operation: histogram(
                MCP_SERVER_OPERATION_DURATION,
                "MCP request or notification duration as observed on the receiver",
            ),
            sent: histogram(
                MCP_CLIENT_OPERATION_DURATION,
                "The duration of the MCP request or notification as observed on the sender",
            ),
            session: histogram(
                MCP_SERVER_SESSION_DURATION,
                "The duration of the MCP session as observed on the MCP server",
            ),
            propagator: Propagator::Global,
        }
    }

    /// Reads (and, in what the server sends, writes) the trace context of messages with
    /// `propagator` instead of the global one
    /// (W3C Trace Context and Baggage, for the keys the conventions put in `_meta`).
    pub fn propagator(
        mut self,
        propagator: impl TextMapPropagator + Send + Sync + 'static,
    ) -> Self {
        self.propagator = Propagator::Own(Box::new(propagator));
        self
    }

    fn extract(&self, carrier: &dyn Extractor) -> Context {
        match &self.propagator {
            Propagator::Global => global::get_text_map_propagator(|p| p.extract(carrier)),
            Propagator::Own(p) => p.extract(carrier),
        }
    }

    fn inject(&self, cx: &Context, carrier: &mut HashMap<String, String>) {
        match &self.propagator {
            Propagator::Global => {
                global::get_text_map_propagator(|p| p.inject_context(cx, carrier));
            }
            Propagator::Own(p) => p.inject_context(cx, carrier),
        }
    }
}

static INSTALLED: OnceLock<Telemetry> = OnceLock::new();

/// Turns the server's telemetry on for this process: every server then records its requests,
/// notifications and sessions with `telemetry`. Once only; a second call gives its argument
/// back.
pub fn install(telemetry: Telemetry) -> Result<(), Telemetry> {
    INSTALLED.set(telemetry)
}

/// The installed telemetry, if any: the one branch a request pays when it is off.
#[inline]
pub(crate) fn installed() -> Option<&'static Telemetry> {
    INSTALLED.get()
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

/// The members of params the span reads: the target and the trace context.
#[derive(Deserialize, Default)]
struct Peek<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    uri: Option<Cow<'a, str>>,
    #[serde(rename = "_meta", default, borrow)]
    meta: Option<MetaPeek<'a>>,
}

/// The trace context keys of `_meta`, unprefixed as the conventions write them.
#[derive(Deserialize, Default)]
struct MetaPeek<'a> {
    #[serde(default, borrow)]
    traceparent: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tracestate: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    baggage: Option<Cow<'a, str>>,
}

impl Extractor for MetaPeek<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => self.traceparent.as_deref(),
            "tracestate" => self.tracestate.as_deref(),
            "baggage" => self.baggage.as_deref(),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        [
            ("traceparent", &self.traceparent),
            ("tracestate", &self.tracestate),
            ("baggage", &self.baggage),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_ref().map(|_| k))
        .collect()
    }
}

/// An HTTP request's headers as a carrier.
struct Headers<'a>(&'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// One request or notification being served: its span and what its duration is recorded
/// with. Ended by [`Operation::end`]; dropped unended (the request was cancelled, or its
/// connection closed), it ends with `error.type` `cancelled`.
pub(crate) struct Operation {
    /// Where its duration goes: what the server received, or what it sent.
    histogram: &'static Histogram<f64>,
    telemetry: &'static Telemetry,
    cx: Context,
    start: Instant,
    /// The attributes of the duration metric.
    attributes: Vec<KeyValue>,
    /// `tools/call`: a result with `isError` is a `tool_error`.
    tool_call: bool,
    ended: bool,
}

impl Telemetry {
    /// Starts the span of an inbound message.
    pub(crate) fn start(&'static self, inbound: Inbound<'_>) -> Operation {
        let start = Instant::now();
        let method = inbound.method;
        let peek: Peek<'_> = inbound
            .params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_default();
        let mut attributes = Vec::with_capacity(8);
        attributes.push(KeyValue::new(MCP_METHOD_NAME, method.to_owned()));
        let mut target = None;
        let tool_call = method == "tools/call";
        match method {
            "tools/call" => {
                if let Some(name) = &peek.name {
                    attributes.push(KeyValue::new(GEN_AI_TOOL_NAME, name.to_string()));
                    target = Some(name.as_ref());
                }
                attributes.push(KeyValue::new(GEN_AI_OPERATION_NAME, "execute_tool"));
            }
            "prompts/get" => {
                if let Some(name) = &peek.name {
                    attributes.push(KeyValue::new(GEN_AI_PROMPT_NAME, name.to_string()));
                    target = Some(name.as_ref());
                }
            }
            _ => {}
        }
        if let Some(version) = inbound.version {
            attributes.push(KeyValue::new(MCP_PROTOCOL_VERSION, version.as_str()));
        }
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
            let transport = self.extract(&Headers(&parts.headers));
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
        if let Some(id) = inbound.id {
            let id = match id {
                Id::Number(n) => n.to_string(),
                Id::String(s) => s.clone(),
            };
            span_attributes.push(KeyValue::new(JSONRPC_REQUEST_ID, id));
        }
        if let Some(session) = session {
            span_attributes.push(KeyValue::new(MCP_SESSION_ID, session.to_owned()));
        }
        if matches!(
            method,
            "resources/read" | "resources/subscribe" | "resources/unsubscribe"
        ) {
            if let Some(uri) = &peek.uri {
                span_attributes.push(KeyValue::new(MCP_RESOURCE_URI, uri.to_string()));
            }
        }
        // The parent is the client's context from `_meta`; the ambient one (a span the
        // application opened around the server) is then a link. Without `_meta` context the
        // ambient context is the parent.
        let ambient = Context::current();
        let from_meta = peek
            .meta
            .as_ref()
            .map(|meta| self.extract(meta))
            .filter(|cx| cx.span().span_context().is_valid());
        let parent = match from_meta {
            Some(cx) => {
                let ambient_span = ambient.span().span_context().clone();
                if ambient_span.is_valid() {
                    links.push(Link::with_context(ambient_span));
                }
                cx
            }
            None => ambient,
        };
        let name = match target {
            Some(target) => format!("{method} {target}"),
            None => method.to_owned(),
        };
        let span: BoxedSpan = self.tracer.build_with_context(
            self.tracer
                .span_builder(name)
                .with_kind(SpanKind::Server)
                .with_attributes(span_attributes)
                .with_links(links),
            &parent,
        );
        Operation {
            histogram: &self.operation,
            telemetry: self,
            cx: parent.with_span(span),
            start,
            attributes,
            tool_call,
            ended: false,
        }
    }

    /// Starts the span of a request or notification the server sends (kind `CLIENT`, as the
    /// conventions have the sender's span), child of the current context: the span of the
    /// request whose handler sends it.
    pub(crate) fn start_sent(
        &'static self,
        method: &str,
        version: Option<ProtocolVersion>,
    ) -> Operation {
        let start = Instant::now();
        let mut attributes = vec![KeyValue::new(MCP_METHOD_NAME, method.to_owned())];
        if let Some(version) = version {
            attributes.push(KeyValue::new(MCP_PROTOCOL_VERSION, version.as_str()));
        }
        let parent = Context::current();
        let span: BoxedSpan = self.tracer.build_with_context(
            self.tracer
                .span_builder(method.to_owned())
                .with_kind(SpanKind::Client)
                .with_attributes(attributes.clone()),
            &parent,
        );
        Operation {
            histogram: &self.sent,
            telemetry: self,
            cx: parent.with_span(span),
            start,
            attributes,
            tool_call: false,
            ended: false,
        }
    }

    /// Records the duration of a session that ended; `version` is the revision it
    /// negotiated.
    pub(crate) fn session_ended(&self, started: Instant, version: ProtocolVersion, failed: bool) {
        let mut attributes = vec![KeyValue::new(MCP_PROTOCOL_VERSION, version.as_str())];
        if failed {
            attributes.push(KeyValue::new(ERROR_TYPE, "_OTHER"));
        }
        self.session
            .record(started.elapsed().as_secs_f64(), &attributes);
    }
}

/// `params` with the trace context in its `_meta` (made when absent). Params that are not an
/// object, or a `_meta` that is not one, are sent as they are.
fn with_trace_context(
    params: Option<Box<RawValue>>,
    context: HashMap<String, String>,
) -> Option<Box<RawValue>> {
    use serde_json::{Map, Value};
    if context.is_empty() {
        return params;
    }
    let mut object = match params.as_deref() {
        None => Map::new(),
        Some(raw) => match serde_json::from_str::<Value>(raw.get()) {
            Ok(Value::Object(object)) => object,
            _ => return params,
        },
    };
    let meta = object
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(meta) = meta else {
        return params;
    };
    for (key, value) in context {
        meta.insert(key, Value::String(value));
    }
    mcp_jsonrpc::to_raw(&object).ok().or(params)
}

/// Whether a `tools/call` result says the tool failed (`isError: true`).
fn tool_failed(raw: &RawJson) -> bool {
    #[derive(Deserialize)]
    struct IsError {
        #[serde(rename = "isError", default)]
        is_error: Option<bool>,
    }
    serde_json::from_str::<IsError>(raw.get()).is_ok_and(|r| r.is_error == Some(true))
}

impl Operation {
    /// The context the handler runs in: the span's.
    pub(crate) fn context(&self) -> Context {
        self.cx.clone()
    }

    /// Ends the span with the answer (`None` for a notification, which has none).
    pub(crate) fn end(mut self, outcome: Option<Result<&RawJson, &ErrorObject>>) {
        match outcome {
            Some(Err(error)) => {
                self.bound_cardinality(error.code);
                let code = error.code.to_string();
                self.fail(code.clone(), Some(code), error.message.to_string());
            }
            Some(Ok(raw)) if self.tool_call && tool_failed(raw) => {
                self.fail("tool_error".into(), None, "tool_error".into());
            }
            _ => {}
        }
        self.finish();
    }

    /// The method and the target come from the client: a method that does not exist, or a
    /// tool or prompt that was refused, leaves the metric's attributes (the span keeps them),
    /// so a client cannot grow the number of time series at will.
    fn bound_cardinality(&mut self, code: i64) {
        use mcp_jsonrpc::codes::{INVALID_PARAMS, METHOD_NOT_FOUND};
        if code == METHOD_NOT_FOUND {
            for kv in &mut self.attributes {
                if kv.key.as_str() == MCP_METHOD_NAME {
                    kv.value = "_OTHER".into();
                }
            }
        }
        if code == INVALID_PARAMS || code == METHOD_NOT_FOUND {
            self.attributes.retain(|kv| {
                kv.key.as_str() != GEN_AI_TOOL_NAME && kv.key.as_str() != GEN_AI_PROMPT_NAME
            });
        }
    }

    fn fail(&mut self, error_type: String, code: Option<String>, message: String) {
        let span = self.cx.span();
        span.set_attribute(KeyValue::new(ERROR_TYPE, error_type.clone()));
        self.attributes.push(KeyValue::new(ERROR_TYPE, error_type));
        if let Some(code) = code {
            span.set_attribute(KeyValue::new(RPC_RESPONSE_STATUS_CODE, code.clone()));
            self.attributes
                .push(KeyValue::new(RPC_RESPONSE_STATUS_CODE, code));
        }
        span.set_status(Status::error(message));
    }

    fn finish(&mut self) {
        self.ended = true;
        self.cx.span().end();
        self.histogram
            .record(self.start.elapsed().as_secs_f64(), &self.attributes);
    }

    /// `params` carrying this span's context in `_meta` (what the server sends).
    pub(crate) fn inject(&self, params: Option<Box<RawValue>>) -> Option<Box<RawValue>> {
        let mut carrier = HashMap::new();
        self.telemetry.inject(&self.cx, &mut carrier);
        with_trace_context(params, carrier)
    }

    /// Ends the span of a request the server sent with the client's answer.
    pub(crate) fn end_sent(mut self, answer: &Result<Box<RawValue>, mcp_jsonrpc::CallError>) {
        use mcp_jsonrpc::CallError as E;
        match answer {
            Ok(_) => {}
            Err(E::Rpc(error)) => {
                let code = error.code.to_string();
                self.fail(code.clone(), Some(code), error.message.clone());
            }
            Err(E::Timeout) => self.fail("timeout".into(), None, "timeout".into()),
            Err(E::Cancelled) => self.fail("cancelled".into(), None, "cancelled".into()),
            Err(other) => self.fail("_OTHER".into(), None, other.to_string()),
        }
        self.finish();
    }
}

impl Drop for Operation {
    fn drop(&mut self) {
        if !self.ended {
            self.fail("cancelled".into(), None, "cancelled".into());
            self.finish();
        }
    }
}

/// Runs a tool inside a span of its own, `execute_tool {name}` (kind `INTERNAL`, as the GenAI
/// conventions name a tool's execution), child of the request's span: what the tool records
/// (with the OpenTelemetry API, or `tracing` bridged by `tracing-opentelemetry`) nests in it.
/// Without installed telemetry the tool's future is returned as it is.
pub(crate) fn in_tool_span<F: std::future::Future>(
    name: &str,
    tool: F,
) -> futures_util::future::Either<opentelemetry::context::WithContext<F>, F> {
    use futures_util::future::Either;
    let Some(telemetry) = installed() else {
        return Either::Right(tool);
    };
    let parent = Context::current();
    let span: BoxedSpan = telemetry.tracer.build_with_context(
        telemetry
            .tracer
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
    fn tool_results_with_is_error_are_tool_errors() {
        let failed = RawJson::serialize(&serde_json::json!({"content": [], "isError": true}));
        let fine = RawJson::serialize(&serde_json::json!({"content": [], "isError": false}));
        assert!(failed.is_ok_and(|r| tool_failed(&r)));
        assert!(fine.is_ok_and(|r| !tool_failed(&r)));
    }

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
            op.attributes
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

    #[test]
    fn meta_trace_context_is_read_unprefixed() {
        let params = r#"{"name":"t","_meta":{"traceparent":"00-a-b-01","baggage":"k=v","x":1}}"#;
        let peek: Peek<'_> = serde_json::from_str(params).unwrap_or_default();
        let meta = peek.meta.unwrap_or_default();
        assert_eq!(meta.get("traceparent"), Some("00-a-b-01"));
        assert_eq!(meta.get("baggage"), Some("k=v"));
        assert_eq!(meta.get("tracestate"), None);
        assert_eq!(meta.keys(), vec!["traceparent", "baggage"]);
        assert_eq!(peek.name.as_deref(), Some("t"));
    }
}
