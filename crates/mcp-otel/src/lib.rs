//! What the OpenTelemetry support of `mcp-client` and `mcp-server` (their `otel` feature)
//! shares: the names the MCP semantic conventions give, the duration histograms and their
//! buckets, the propagator that reads and writes the trace context in `params._meta`, and the
//! bookkeeping of one operation's span and metric (its error class, its end, its
//! cancellation). Each of those crates makes its own spans on it in its `otel` module, which
//! is where an application turns telemetry on (`docs/telemetry.md`); this crate is pulled in
//! by their `otel` feature and is not built without it.
//!
//! Only the OpenTelemetry API, as in those crates: the SDK and the exporter are the
//! application's.

#![deny(missing_docs)]

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::Instant;

use mcp_jsonrpc::{CallError, Id};
use opentelemetry::global::{self, BoxedSpan, BoxedTracer};
use opentelemetry::metrics::{Histogram, Meter, MeterProvider};
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{SpanBuilder, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, InstrumentationScope, KeyValue};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The OpenTelemetry API, for what [`telemetry!`] expands to.
#[doc(hidden)]
pub use opentelemetry as __opentelemetry;

/// The attribute and metric names both crates emit, as the MCP semantic conventions spell
/// them.
pub mod names {
    /// The request or notification method.
    pub const MCP_METHOD_NAME: &str = "mcp.method.name";
    /// The protocol revision: the one the session negotiated, or the one the message is
    /// served under.
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
    /// The session (stateful sessions over HTTP: `Mcp-Session-Id`).
    pub const MCP_SESSION_ID: &str = "mcp.session.id";
    /// `pipe` (stdio and other byte streams) or `tcp` (HTTP).
    pub const NETWORK_TRANSPORT: &str = "network.transport";
    /// `http` over HTTP.
    pub const NETWORK_PROTOCOL_NAME: &str = "network.protocol.name";
    /// The HTTP version over HTTP.
    pub const NETWORK_PROTOCOL_VERSION: &str = "network.protocol.version";
    /// The JSON-RPC error code of an error answer.
    pub const RPC_RESPONSE_STATUS_CODE: &str = "rpc.response.status_code";
    /// The class of error: the JSON-RPC error code, `tool_error`, `timeout`, `cancelled`,
    /// `_OTHER`.
    pub const ERROR_TYPE: &str = "error.type";
    /// Histogram (seconds) of the requests and notifications sent, on their sender: the
    /// client's requests, and on the server what it sends (sampling, elicitation, roots,
    /// progress, log messages).
    pub const MCP_CLIENT_OPERATION_DURATION: &str = "mcp.client.operation.duration";
    /// Histogram (seconds) of the requests and notifications received, on their receiver:
    /// the server's requests, and on the client what the server sends it.
    pub const MCP_SERVER_OPERATION_DURATION: &str = "mcp.server.operation.duration";
    /// Histogram (seconds) of the client's sessions.
    pub const MCP_CLIENT_SESSION_DURATION: &str = "mcp.client.session.duration";
    /// Histogram (seconds) of the server's sessions.
    pub const MCP_SERVER_SESSION_DURATION: &str = "mcp.server.session.duration";
}

use names::*;

/// The bucket boundaries (seconds) the conventions give for the MCP duration histograms.
pub const DURATION_BUCKETS: &[f64] = &[
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The end of the protocol a crate's telemetry observes: it names the instrumentation scope
/// (`mcp-client`, `mcp-server`) and the histogram of the sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// `mcp-client`.
    Client,
    /// `mcp-server`.
    Server,
}

impl Side {
    fn scope(self, version: &'static str) -> InstrumentationScope {
        let name = match self {
            Side::Client => "mcp-client",
            Side::Server => "mcp-server",
        };
        InstrumentationScope::builder(name)
            .with_version(version)
            .build()
    }
}

/// Which histogram an [`Operation`] records its duration in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// A message this side sent: `mcp.client.operation.duration`.
    Sent,
    /// A message this side received: `mcp.server.operation.duration`.
    Received,
}

/// Where the trace context of a message is read from and written to.
enum Propagator {
    /// The application's global propagator (`opentelemetry::global::set_text_map_propagator`).
    Global,
    /// One given to [`Core::propagator`].
    Own(Box<dyn TextMapPropagator + Send + Sync>),
}

/// The tracer, the instruments and the propagator one side's spans and metrics use; the
/// `Telemetry` of `mcp-client` and `mcp-server` wraps one (see [`telemetry!`]).
pub struct Core {
    tracer: BoxedTracer,
    /// `mcp.client.operation.duration`: what this side sent.
    sent: Histogram<f64>,
    /// `mcp.server.operation.duration`: what this side received.
    received: Histogram<f64>,
    session: Histogram<f64>,
    propagator: Propagator,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core").finish_non_exhaustive()
    }
}

impl Core {
    /// Spans, metrics and propagation through the application's global OpenTelemetry
    /// providers and propagator, as they are when this is called; `version` is the version of
    /// the instrumentation scope.
    pub fn global(side: Side, version: &'static str) -> Self {
        Self::with(
            global::tracer_with_scope(side.scope(version)),
            &global::meter_with_scope(side.scope(version)),
            side,
        )
    }

    /// Spans from `tracers`, metrics from `meters`; the trace context is read and written
    /// with the global propagator unless [`propagator`](Self::propagator) names one.
    pub fn new<T, M>(tracers: &T, meters: &M, side: Side, version: &'static str) -> Self
    where
        T: TracerProvider,
        T::Tracer: Send + Sync + 'static,
        <T::Tracer as Tracer>::Span: Send + Sync + 'static,
        M: MeterProvider,
    {
        let tracer = BoxedTracer::new(Box::new(tracers.tracer_with_scope(side.scope(version))));
        Self::with(tracer, &meters.meter_with_scope(side.scope(version)), side)
    }

    fn with(tracer: BoxedTracer, meter: &Meter, side: Side) -> Self {
        let histogram = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build()
        };
        let sent = || {
            histogram(
                MCP_CLIENT_OPERATION_DURATION,
                "The duration of the MCP request or notification as observed on the sender",
            )
        };
        let received = || {
            histogram(
                MCP_SERVER_OPERATION_DURATION,
                "MCP request or notification duration as observed on the receiver",
            )
        };
        let (session, description) = match side {
            Side::Client => (
                MCP_CLIENT_SESSION_DURATION,
                "The duration of the MCP session as observed on the MCP client",
            ),
            Side::Server => (
                MCP_SERVER_SESSION_DURATION,
                "The duration of the MCP session as observed on the MCP server",
            ),
        };
        // Each side's own operations first, then the other way, then its sessions.
        let (sent, received) = match side {
            Side::Client => (sent(), received()),
            Side::Server => {
                let received = received();
                (sent(), received)
            }
        };
        let session = histogram(session, description);
        Core {
            tracer,
            sent,
            received,
            session,
            propagator: Propagator::Global,
        }
    }

    /// Reads and writes the trace context of messages with `propagator` instead of the global
    /// one (W3C Trace Context and Baggage, for the keys the conventions put in `_meta`).
    pub fn propagator(
        mut self,
        propagator: impl TextMapPropagator + Send + Sync + 'static,
    ) -> Self {
        self.propagator = Propagator::Own(Box::new(propagator));
        self
    }

    /// The tracer the spans are made with.
    pub fn tracer(&self) -> &BoxedTracer {
        &self.tracer
    }

    /// The context `carrier` holds, read with the propagator.
    pub fn extract(&self, carrier: &dyn Extractor) -> Context {
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

    /// The context the sender put in `params._meta`, if it holds a valid span context.
    pub fn remote_parent(&self, peek: &Peek<'_>) -> Option<Context> {
        peek.meta
            .as_ref()
            .map(|meta| self.extract(meta))
            .filter(|cx| cx.span().span_context().is_valid())
    }

    /// Starts an operation: the span `span` describes, child of `parent`, and its duration
    /// (from `start`) recorded in the histogram of `direction` with `attributes` when it ends.
    /// A tool call (`gen_ai.operation.name` in `attributes`, as [`Peek::attributes`] gives it
    /// to `tools/call`) whose result has `isError` ends as a `tool_error`.
    pub fn operation(
        &'static self,
        direction: Direction,
        start: Instant,
        parent: Context,
        span: SpanBuilder,
        attributes: Vec<KeyValue>,
    ) -> Operation {
        let span: BoxedSpan = self.tracer.build_with_context(span, &parent);
        let tool_call = attributes
            .iter()
            .any(|kv| kv.key.as_str() == GEN_AI_OPERATION_NAME);
        Operation {
            histogram: match direction {
                Direction::Sent => &self.sent,
                Direction::Received => &self.received,
            },
            core: self,
            cx: parent.with_span(span),
            start,
            attributes,
            tool_call,
            ended: false,
        }
    }

    /// Records the duration of a session that ended; `version` is the revision it
    /// negotiated; `failed`, that it ended with an error (`error.type` `_OTHER`).
    pub fn session_ended(&self, started: Instant, version: &'static str, failed: bool) {
        let mut attributes = vec![KeyValue::new(MCP_PROTOCOL_VERSION, version)];
        if failed {
            attributes.push(KeyValue::new(ERROR_TYPE, "_OTHER"));
        }
        self.session
            .record(started.elapsed().as_secs_f64(), &attributes);
    }
}

/// The members of params a span reads: the target and the trace context.
#[derive(Deserialize, Default)]
pub struct Peek<'a> {
    /// The tool or the prompt.
    #[serde(default, borrow)]
    pub name: Option<Cow<'a, str>>,
    /// The resource.
    #[serde(default, borrow)]
    pub uri: Option<Cow<'a, str>>,
    #[serde(rename = "_meta", default, borrow)]
    meta: Option<MetaPeek<'a>>,
}

impl<'a> Peek<'a> {
    /// What `params` hold of it; nothing when they are absent or not an object.
    pub fn of(params: Option<&'a RawValue>) -> Self {
        params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_default()
    }

    /// The first attributes of the metric of `method`: the method, the tool or the prompt
    /// (`tools/call`, `prompts/get`), the revision; with the target the span is named after.
    pub fn attributes(
        &self,
        method: &str,
        version: Option<&'static str>,
    ) -> (Vec<KeyValue>, Option<&str>) {
        let mut attributes = Vec::with_capacity(8);
        attributes.push(KeyValue::new(MCP_METHOD_NAME, method.to_owned()));
        let mut target = None;
        match method {
            "tools/call" => {
                if let Some(name) = &self.name {
                    attributes.push(KeyValue::new(GEN_AI_TOOL_NAME, name.to_string()));
                    target = Some(name.as_ref());
                }
                attributes.push(KeyValue::new(GEN_AI_OPERATION_NAME, "execute_tool"));
            }
            "prompts/get" => {
                if let Some(name) = &self.name {
                    attributes.push(KeyValue::new(GEN_AI_PROMPT_NAME, name.to_string()));
                    target = Some(name.as_ref());
                }
            }
            _ => {}
        }
        if let Some(version) = version {
            attributes.push(KeyValue::new(MCP_PROTOCOL_VERSION, version));
        }
        (attributes, target)
    }

    /// `mcp.resource.uri`, when params name a resource.
    pub fn uri(&self) -> Option<KeyValue> {
        let uri = self.uri.as_ref()?;
        Some(KeyValue::new(MCP_RESOURCE_URI, uri.to_string()))
    }

    /// `mcp.resource.uri` of `resources/read`, `resources/subscribe` and
    /// `resources/unsubscribe`.
    pub fn resource(&self, method: &str) -> Option<KeyValue> {
        match method {
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => self.uri(),
            _ => None,
        }
    }
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

/// An HTTP request's headers as a propagation carrier: the trace context of the request that
/// carried a message, which its span links to.
pub struct HeaderCarrier<'a>(pub &'a http::HeaderMap);

impl opentelemetry::propagation::Extractor for HeaderCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// The name of a span: `{method} {target}`, or the method alone.
pub fn span_name(method: &str, target: Option<&str>) -> String {
    match target {
        Some(target) => format!("{method} {target}"),
        None => method.to_owned(),
    }
}

/// `jsonrpc.request.id`.
pub fn request_id(id: &Id) -> KeyValue {
    let id = match id {
        Id::Number(n) => n.to_string(),
        Id::String(s) => s.clone(),
    };
    KeyValue::new(JSONRPC_REQUEST_ID, id)
}

/// How an operation ended, as its span sees it.
#[derive(Debug)]
pub enum Outcome<'a> {
    /// A result (or, for a notification, sent or handled), with the result's JSON when there
    /// is one to look at.
    Done(Option<&'a str>),
    /// A JSON-RPC error answer: the code and the message.
    Error(i64, &'a str),
    /// Anything else, with its `error.type` and its message.
    Failed(&'static str, String),
}

impl<'a> Outcome<'a> {
    /// How the answer to a request that was sent is classified.
    pub fn of(result: &'a Result<Box<RawValue>, CallError>) -> Self {
        match result {
            Ok(raw) => Outcome::Done(Some(raw.get())),
            Err(CallError::Rpc(error)) => Outcome::Error(error.code, &error.message),
            Err(CallError::Timeout) => Outcome::Failed("timeout", "timeout".into()),
            Err(CallError::Cancelled) => Outcome::Failed("cancelled", "cancelled".into()),
            Err(other) => Outcome::Failed("_OTHER", other.to_string()),
        }
    }
}

/// One request or notification, sent or received: its span and what its duration is recorded
/// with. Ended by [`Operation::end`]; dropped unended (the request was cancelled, or its
/// connection closed), it ends with `error.type` `cancelled`.
pub struct Operation {
    core: &'static Core,
    /// Where its duration goes: what the side sent, or what it received.
    histogram: &'static Histogram<f64>,
    cx: Context,
    start: Instant,
    /// The attributes of the duration metric.
    attributes: Vec<KeyValue>,
    /// `tools/call`: a result with `isError` is a `tool_error`.
    tool_call: bool,
    ended: bool,
}

impl std::fmt::Debug for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operation")
            .field("attributes", &self.attributes)
            .finish_non_exhaustive()
    }
}

impl Operation {
    /// The context the message is sent or handled in: the span's.
    pub fn context(&self) -> Context {
        self.cx.clone()
    }

    /// The attributes its duration will be recorded with.
    pub fn attributes(&self) -> &[KeyValue] {
        &self.attributes
    }

    /// Sets `attribute` on the span (not on the metric).
    pub fn set_span_attribute(&self, attribute: KeyValue) {
        self.cx.span().set_attribute(attribute);
    }

    /// What names the request on its span (`jsonrpc.request.id`) once its id is known: for
    /// `mcp_jsonrpc::RequestOptions::on_id`, which the engine calls when it numbers the
    /// request.
    pub fn id_recorder(&self) -> impl Fn(&Id) + Send + Sync + 'static {
        let cx = self.cx.clone();
        move |id| cx.span().set_attribute(request_id(id))
    }

    /// `params` carrying this span's context in `_meta`.
    pub fn inject(&self, params: Option<Box<RawValue>>) -> Option<Box<RawValue>> {
        let mut carrier = HashMap::new();
        self.core.inject(&self.cx, &mut carrier);
        with_trace_context(params, carrier)
    }

    /// The method leaves the metric's attributes (`_OTHER` instead; the span keeps it): a
    /// method that does not exist, named by the peer, cannot multiply the time series.
    pub fn hide_method(&mut self) {
        for kv in &mut self.attributes {
            if kv.key.as_str() == MCP_METHOD_NAME {
                kv.value = "_OTHER".into();
            }
        }
    }

    /// The tool or prompt leaves the metric's attributes (the span keeps it).
    pub fn hide_target(&mut self) {
        self.attributes.retain(|kv| {
            kv.key.as_str() != GEN_AI_TOOL_NAME && kv.key.as_str() != GEN_AI_PROMPT_NAME
        });
    }

    /// Ends the span with how the operation ended, and records its duration.
    pub fn end(mut self, outcome: Outcome<'_>) {
        match outcome {
            Outcome::Done(Some(raw)) if self.tool_call && tool_failed(raw) => {
                self.fail("tool_error".into(), None, "tool_error".into());
            }
            Outcome::Done(_) => {}
            Outcome::Error(code, message) => {
                let code = code.to_string();
                self.fail(code.clone(), Some(code), message.to_owned());
            }
            Outcome::Failed(error_type, message) => {
                self.fail(error_type.into(), None, message);
            }
        }
        self.finish();
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
}

impl Drop for Operation {
    fn drop(&mut self) {
        if !self.ended {
            self.fail("cancelled".into(), None, "cancelled".into());
            self.finish();
        }
    }
}

/// `params` with the trace context in its `_meta` (made when absent). Params that are not an
/// object, or a `_meta` that is not one, are sent as they are.
fn with_trace_context(
    params: Option<Box<RawValue>>,
    context: HashMap<String, String>,
) -> Option<Box<RawValue>> {
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
fn tool_failed(raw: &str) -> bool {
    #[derive(Deserialize)]
    struct IsError {
        #[serde(rename = "isError", default)]
        is_error: Option<bool>,
    }
    serde_json::from_str::<IsError>(raw).is_ok_and(|r| r.is_error == Some(true))
}

/// Defines, in the module it is invoked in, a crate's public telemetry handle and the
/// process-wide slot it is installed in:
///
/// - `pub struct Telemetry` (with the attributes given), a [`Core`] for `side` in its field
///   `.0`, with `global`, `new` and `propagator`; the instrumentation scope's version is the
///   invoking crate's;
/// - `pub fn install` (with the attributes given), once per process;
/// - `pub(crate) fn installed`, the installed one.
///
/// ```ignore
/// mcp_otel::telemetry! {
///     side: Client;
///     /// The tracer, the instruments and the propagator the client's spans and metrics use.
///     pub struct Telemetry;
///     /// Turns the client's telemetry on for this process.
///     pub fn install;
/// }
/// ```
#[macro_export]
macro_rules! telemetry {
    (
        side: $side:ident;
        $(#[$telemetry:meta])*
        pub struct Telemetry;
        $(#[$install:meta])*
        pub fn install;
    ) => {
        $(#[$telemetry])*
        pub struct Telemetry($crate::Core);

        impl ::std::fmt::Debug for Telemetry {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.debug_struct("Telemetry").finish_non_exhaustive()
            }
        }

        impl Telemetry {
            /// Spans, metrics and propagation through the application's global OpenTelemetry
            /// providers and propagator, as they are when this is called.
            pub fn global() -> Self {
                Telemetry($crate::Core::global(
                    $crate::Side::$side,
                    ::std::env!("CARGO_PKG_VERSION"),
                ))
            }

            /// Spans from `tracers`, metrics from `meters`; the trace context is read and
            /// written with the global propagator unless [`propagator`](Self::propagator)
            /// names one.
            pub fn new<T, M>(tracers: &T, meters: &M) -> Self
            where
                T: $crate::__opentelemetry::trace::TracerProvider,
                T::Tracer: Send + Sync + 'static,
                <T::Tracer as $crate::__opentelemetry::trace::Tracer>::Span:
                    Send + Sync + 'static,
                M: $crate::__opentelemetry::metrics::MeterProvider,
            {
                Telemetry($crate::Core::new(
                    tracers,
                    meters,
                    $crate::Side::$side,
                    ::std::env!("CARGO_PKG_VERSION"),
                ))
            }

            /// Reads and writes the trace context of messages with `propagator` instead of
            /// the global one (W3C Trace Context and Baggage, for the keys the conventions put
            /// in `_meta`).
            pub fn propagator(
                self,
                propagator: impl $crate::__opentelemetry::propagation::TextMapPropagator
                + Send
                + Sync
                + 'static,
            ) -> Self {
                Telemetry(self.0.propagator(propagator))
            }
        }

        static INSTALLED: ::std::sync::OnceLock<Telemetry> = ::std::sync::OnceLock::new();

        $(#[$install])*
        pub fn install(telemetry: Telemetry) -> ::std::result::Result<(), Telemetry> {
            INSTALLED.set(telemetry)
        }

        /// The installed telemetry, if any: the one branch a message pays when it is off.
        #[inline]
        pub(crate) fn installed() -> ::std::option::Option<&'static Telemetry> {
            INSTALLED.get()
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Option<Box<RawValue>> {
        RawValue::from_string(text.to_owned()).ok()
    }

    #[test]
    fn trace_context_joins_meta_or_makes_it() {
        let context = HashMap::from([("traceparent".to_owned(), "00-a-b-01".to_owned())]);
        let with = with_trace_context(raw(r#"{"name":"t","_meta":{"k":1}}"#), context.clone());
        let value: Value = with
            .and_then(|r| serde_json::from_str(r.get()).ok())
            .unwrap_or_default();
        assert_eq!(value["_meta"]["traceparent"], "00-a-b-01");
        assert_eq!(value["_meta"]["k"], 1);
        assert_eq!(value["name"], "t");
        let made = with_trace_context(None, context.clone());
        assert_eq!(
            made.as_deref().map(RawValue::get),
            Some(r#"{"_meta":{"traceparent":"00-a-b-01"}}"#)
        );
        // Not an object: sent as it was.
        let array = with_trace_context(raw("[1]"), context);
        assert_eq!(array.as_deref().map(RawValue::get), Some("[1]"));
        // Nothing to inject (no span recorded): untouched.
        let none = with_trace_context(raw(r#"{"a":1}"#), HashMap::new());
        assert_eq!(none.as_deref().map(RawValue::get), Some(r#"{"a":1}"#));
    }

    #[test]
    fn tool_results_with_is_error_are_tool_errors() {
        assert!(tool_failed(r#"{"content":[],"isError":true}"#));
        assert!(!tool_failed(r#"{"content":[],"isError":false}"#));
        assert!(!tool_failed(r#"{"content":[]}"#));
    }

    #[test]
    fn meta_trace_context_is_read_unprefixed() {
        let params =
            raw(r#"{"name":"t","_meta":{"traceparent":"00-a-b-01","baggage":"k=v","x":1}}"#);
        let peek = Peek::of(params.as_deref());
        assert_eq!(peek.name.as_deref(), Some("t"));
        let meta = peek.meta.unwrap_or_default();
        assert_eq!(meta.get("traceparent"), Some("00-a-b-01"));
        assert_eq!(meta.get("baggage"), Some("k=v"));
        assert_eq!(meta.get("tracestate"), None);
        assert_eq!(meta.keys(), vec!["traceparent", "baggage"]);
    }

    #[test]
    fn targets_name_the_span_and_the_metric() {
        let params = raw(r#"{"name":"echo","uri":"file:///a"}"#);
        let peek = Peek::of(params.as_deref());
        let (attributes, target) = peek.attributes("tools/call", Some("2025-06-18"));
        let keys: Vec<_> = attributes.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                MCP_METHOD_NAME,
                GEN_AI_TOOL_NAME,
                GEN_AI_OPERATION_NAME,
                MCP_PROTOCOL_VERSION
            ]
        );
        assert_eq!(span_name("tools/call", target), "tools/call echo");
        assert!(peek.resource("tools/call").is_none());
        assert!(peek.resource("resources/read").is_some());
        let (_, target) = peek.attributes("resources/read", None);
        assert_eq!(span_name("resources/read", target), "resources/read");
    }
}
