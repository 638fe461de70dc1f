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

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Instant;

use mcp_types::ProtocolVersion;
use opentelemetry::global::{self, BoxedSpan, BoxedTracer};
use opentelemetry::metrics::{Histogram, Meter, MeterProvider};
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, InstrumentationScope, KeyValue};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The attribute and metric names this crate emits, as the MCP semantic conventions spell
/// them.
pub mod names {
    /// The request or notification method.
    pub const MCP_METHOD_NAME: &str = "mcp.method.name";
    /// The protocol revision negotiated with the server.
    pub const MCP_PROTOCOL_VERSION: &str = "mcp.protocol.version";
    /// The resource of `resources/read`, `resources/subscribe`, `resources/unsubscribe`.
    pub const MCP_RESOURCE_URI: &str = "mcp.resource.uri";
    /// The tool of `tools/call`.
    pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
    /// The prompt of `prompts/get`.
    pub const GEN_AI_PROMPT_NAME: &str = "gen_ai.prompt.name";
    /// `execute_tool` on `tools/call`.
    pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
    /// The JSON-RPC error code of an error answer.
    pub const RPC_RESPONSE_STATUS_CODE: &str = "rpc.response.status_code";
    /// The class of error: the JSON-RPC error code, `tool_error`, `timeout`, `cancelled`,
    /// `_OTHER`.
    pub const ERROR_TYPE: &str = "error.type";
    /// Histogram (seconds) of the requests and notifications the client sent.
    pub const MCP_CLIENT_OPERATION_DURATION: &str = "mcp.client.operation.duration";
    /// Histogram (seconds) of the client's sessions.
    pub const MCP_CLIENT_SESSION_DURATION: &str = "mcp.client.session.duration";
    /// The JSON-RPC id of a request the server sent.
    pub const JSONRPC_REQUEST_ID: &str = "jsonrpc.request.id";
    /// Histogram (seconds) of the requests and notifications the client received from the
    /// server (sampling, elicitation, roots, progress, log messages): the client is their
    /// receiver.
    pub const MCP_SERVER_OPERATION_DURATION: &str = "mcp.server.operation.duration";
    /// Every name above: attributes first, then the metrics.
    pub const ALL: &[&str] = &[
        MCP_METHOD_NAME,
        MCP_PROTOCOL_VERSION,
        MCP_RESOURCE_URI,
        GEN_AI_TOOL_NAME,
        GEN_AI_PROMPT_NAME,
        GEN_AI_OPERATION_NAME,
        RPC_RESPONSE_STATUS_CODE,
        ERROR_TYPE,
        MCP_CLIENT_OPERATION_DURATION,
        MCP_CLIENT_SESSION_DURATION,
        JSONRPC_REQUEST_ID,
        MCP_SERVER_OPERATION_DURATION,
    ];
}

use names::*;

/// The bucket boundaries (seconds) the conventions give for the MCP duration histograms.
pub const DURATION_BUCKETS: &[f64] = &[
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

enum Propagator {
    Global,
    Own(Box<dyn TextMapPropagator + Send + Sync>),
}

/// The tracer, the instruments and the propagator the client's spans and metrics use.
pub struct Telemetry {
    tracer: BoxedTracer,
    operation: Histogram<f64>,
    /// What the client receives from the server.
    received: Histogram<f64>,
    session: Histogram<f64>,
    propagator: Propagator,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry").finish_non_exhaustive()
    }
}

fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("mcp-client")
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

    /// Spans from `tracers`, metrics from `meters`; the trace context is written with the
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
                MCP_CLIENT_OPERATION_DURATION,
                "The duration of the MCP request or notification as observed on the sender",
            ),
            received: histogram(
                MCP_SERVER_OPERATION_DURATION,
                "MCP request or notification duration as observed on the receiver",
            ),
            session: histogram(
                MCP_CLIENT_SESSION_DURATION,
                "The duration of the MCP session as observed on the MCP client",
            ),
            propagator: Propagator::Global,
        }
    }

    /// Writes the trace context into messages with `propagator` instead of the global one.
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

/// Turns the client's telemetry on for this process: every session then records what it sends
/// with `telemetry`. Once only; a second call gives its argument back.
pub fn install(telemetry: Telemetry) -> Result<(), Telemetry> {
    INSTALLED.set(telemetry)
}

/// The installed telemetry, if any: the one branch a request pays when it is off.
#[inline]
pub(crate) fn installed() -> Option<&'static Telemetry> {
    INSTALLED.get()
}

/// The members of params the span reads.
#[derive(Deserialize, Default)]
struct Peek<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    uri: Option<Cow<'a, str>>,
    #[serde(rename = "_meta", default, borrow)]
    meta: Option<MetaPeek<'a>>,
}

/// The trace context keys of `_meta` in what the server sends.
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

/// One request or notification being sent: its span and what its duration is recorded with.
/// Dropped unended (the caller dropped the request), it ends with `error.type` `cancelled`.
pub(crate) struct Operation {
    /// Where its duration goes: what the client sent, or what it received.
    histogram: &'static Histogram<f64>,
    telemetry: &'static Telemetry,
    cx: Context,
    start: Instant,
    attributes: Vec<KeyValue>,
    tool_call: bool,
    ended: bool,
}

/// How a request ended, as the span sees it.
pub(crate) enum Outcome<'a> {
    /// A result (or, for a notification, sent).
    Done(Option<&'a RawValue>),
    /// A JSON-RPC error answer.
    Error(i64, &'a str),
    /// Anything else, with its `error.type`.
    Failed(&'static str, String),
}

impl Telemetry {
    /// Starts the span of an outgoing message, child of the caller's current context.
    pub(crate) fn start(
        &'static self,
        method: &str,
        params: Option<&RawValue>,
        version: Option<ProtocolVersion>,
    ) -> Operation {
        let start = Instant::now();
        let peek: Peek<'_> = params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_default();
        let mut attributes = Vec::with_capacity(6);
        attributes.push(KeyValue::new(MCP_METHOD_NAME, method.to_owned()));
        let mut target = None;
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
        if let Some(version) = version {
            attributes.push(KeyValue::new(MCP_PROTOCOL_VERSION, version.as_str()));
        }
        let mut span_attributes = attributes.clone();
        if matches!(
            method,
            "resources/read" | "resources/subscribe" | "resources/unsubscribe"
        ) {
            if let Some(uri) = &peek.uri {
                span_attributes.push(KeyValue::new(MCP_RESOURCE_URI, uri.to_string()));
            }
        }
        let name = match target {
            Some(target) => format!("{method} {target}"),
            None => method.to_owned(),
        };
        let parent = Context::current();
        let span: BoxedSpan = self.tracer.build_with_context(
            self.tracer
                .span_builder(name)
                .with_kind(SpanKind::Client)
                .with_attributes(span_attributes),
            &parent,
        );
        Operation {
            histogram: &self.operation,
            telemetry: self,
            cx: parent.with_span(span),
            start,
            attributes,
            tool_call: method == "tools/call",
            ended: false,
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
        let peek: Peek<'_> = params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_default();
        let attributes = vec![KeyValue::new(MCP_METHOD_NAME, method.to_owned())];
        let mut span_attributes = attributes.clone();
        if let Some(id) = id {
            let id = match id {
                mcp_jsonrpc::Id::Number(n) => n.to_string(),
                mcp_jsonrpc::Id::String(s) => s.clone(),
            };
            span_attributes.push(KeyValue::new(JSONRPC_REQUEST_ID, id));
        }
        if method == "notifications/resources/updated" {
            if let Some(uri) = &peek.uri {
                span_attributes.push(KeyValue::new(MCP_RESOURCE_URI, uri.to_string()));
            }
        }
        let parent = peek
            .meta
            .as_ref()
            .map(|meta| self.extract(meta))
            .filter(|cx| cx.span().span_context().is_valid())
            .unwrap_or_else(Context::current);
        let span: BoxedSpan = self.tracer.build_with_context(
            self.tracer
                .span_builder(method.to_owned())
                .with_kind(SpanKind::Server)
                .with_attributes(span_attributes),
            &parent,
        );
        Operation {
            histogram: &self.received,
            telemetry: self,
            cx: parent.with_span(span),
            start,
            attributes,
            tool_call: false,
            ended: false,
        }
    }

    /// Records the duration of a session that ended.
    pub(crate) fn session_ended(&self, started: Instant, version: ProtocolVersion) {
        self.session.record(
            started.elapsed().as_secs_f64(),
            &[KeyValue::new(MCP_PROTOCOL_VERSION, version.as_str())],
        );
    }
}

/// `params` with the trace context of `cx` in its `_meta` (made when absent). Params that are
/// not an object, or a `_meta` that is not one, are sent as they are.
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
    match mcp_jsonrpc::to_raw(&object) {
        Ok(raw) => Some(raw),
        Err(_) => params,
    }
}

/// Whether a `tools/call` result says the tool failed (`isError: true`).
fn tool_failed(raw: &RawValue) -> bool {
    #[derive(Deserialize)]
    struct IsError {
        #[serde(rename = "isError", default)]
        is_error: Option<bool>,
    }
    serde_json::from_str::<IsError>(raw.get()).is_ok_and(|r| r.is_error == Some(true))
}

impl Operation {
    /// The context the message is sent in: the span's.
    pub(crate) fn context(&self) -> Context {
        self.cx.clone()
    }

    /// `params` carrying this span's context in `_meta`.
    pub(crate) fn inject(&self, params: Option<Box<RawValue>>) -> Option<Box<RawValue>> {
        let mut carrier = HashMap::new();
        self.telemetry.inject(&self.cx, &mut carrier);
        with_trace_context(params, carrier)
    }

    /// Ends the span with how the message ended.
    pub(crate) fn end(mut self, outcome: Outcome<'_>) {
        match outcome {
            Outcome::Done(Some(raw)) if self.tool_call && tool_failed(raw) => {
                self.fail("tool_error".into(), None, "tool_error".into());
            }
            Outcome::Done(_) => {}
            Outcome::Error(code, message) => {
                // A method the client does not have (asked by the server, or refused by it)
                // leaves the metric's attributes: the peer cannot multiply the series.
                if code == mcp_jsonrpc::codes::METHOD_NOT_FOUND {
                    for kv in &mut self.attributes {
                        if kv.key.as_str() == MCP_METHOD_NAME {
                            kv.value = "_OTHER".into();
                        }
                    }
                }
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

/// How a request's error is classified.
pub(crate) fn outcome(result: &Result<Box<RawValue>, mcp_jsonrpc::CallError>) -> Outcome<'_> {
    use mcp_jsonrpc::CallError as E;
    match result {
        Ok(raw) => Outcome::Done(Some(raw)),
        Err(E::Rpc(error)) => Outcome::Error(error.code, &error.message),
        Err(E::Timeout) => Outcome::Failed("timeout", "timeout".into()),
        Err(E::Cancelled) => Outcome::Failed("cancelled", "cancelled".into()),
        Err(other) => Outcome::Failed("_OTHER", other.to_string()),
    }
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
}
