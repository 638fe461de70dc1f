//! OpenTelemetry spans and metrics of server and client (feature `otel`), read from the SDK's
//! in-memory exporters: names, kinds, attributes and parent/child links over stdio and HTTP,
//! in both eras (2025-11-25 sessions and 2026-07-28 stateless), with a tool error and a
//! protocol error; every attribute and metric name emitted is checked against the lists copied
//! from the semantic conventions for MCP.
//!
//! `cargo test -p mcp-tests --features otel --test otel_spans`
#![cfg(feature = "otel")]

use std::sync::OnceLock;
use std::time::Duration;

use mcp_client::{CallError, Client, ClientSession};
use mcp_server::{NoArgs, Server, Tool, ToolContext, ToolError};
use mcp_tests::http::{Served, post};
use mcp_transport_http::client::StreamableHttpClient;
use mcp_types::{Implementation, ProtocolVersion};
use opentelemetry::propagation::TextMapCompositePropagator;
use opentelemetry::trace::{
    FutureExt, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId,
    TraceState, Tracer, TracerProvider,
};
use opentelemetry::{Context, KeyValue, Value as OtelValue, global};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;

/// The attribute keys of the MCP client and server spans and metrics, copied from the
/// convention page (opentelemetry.io, "Semantic conventions for Model Context Protocol";
/// `docs/gen-ai/mcp.md` of the GenAI semantic conventions).
const CONVENTION_ATTRIBUTES: &[&str] = &[
    "mcp.method.name",
    "error.type",
    "gen_ai.prompt.name",
    "gen_ai.tool.name",
    "jsonrpc.request.id",
    "mcp.resource.uri",
    "rpc.response.status_code",
    "client.address",
    "client.port",
    "gen_ai.operation.name",
    "jsonrpc.protocol.version",
    "mcp.protocol.version",
    "mcp.session.id",
    "network.protocol.name",
    "network.protocol.version",
    "network.transport",
    "server.address",
    "server.port",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
];

/// The metric names of the same page.
const CONVENTION_METRICS: &[&str] = &[
    "mcp.client.operation.duration",
    "mcp.server.operation.duration",
    "mcp.client.session.duration",
    "mcp.server.session.duration",
];

/// The values of `mcp.method.name` the page lists.
const CONVENTION_METHODS: &[&str] = &[
    "completion/complete",
    "elicitation/create",
    "initialize",
    "logging/setLevel",
    "notifications/cancelled",
    "notifications/initialized",
    "notifications/message",
    "notifications/progress",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
    "notifications/roots/list_changed",
    "notifications/tools/list_changed",
    "ping",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "resources/templates/list",
    "resources/unsubscribe",
    "roots/list",
    "sampling/createMessage",
    "tools/call",
    "tools/list",
];

/// The SDK the tests export to, installed once per test process.
struct Sdk {
    spans: InMemorySpanExporter,
    tracers: SdkTracerProvider,
    metrics: InMemoryMetricExporter,
    meters: SdkMeterProvider,
}

fn sdk() -> &'static Sdk {
    static SDK: OnceLock<Sdk> = OnceLock::new();
    SDK.get_or_init(|| {
        let spans = InMemorySpanExporter::default();
        let tracers = SdkTracerProvider::builder()
            .with_simple_exporter(spans.clone())
            .build();
        let metrics = InMemoryMetricExporter::default();
        let meters = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metrics.clone()).build())
            .build();
        global::set_text_map_propagator(TextMapCompositePropagator::new(vec![
            Box::new(TraceContextPropagator::new()),
            Box::new(BaggagePropagator::new()),
        ]));
        // The tools' own spans go through the global tracer, as user code's would.
        global::set_tracer_provider(tracers.clone());
        mcp_server::otel::install(mcp_server::otel::Telemetry::new(&tracers, &meters))
            .expect("installed once");
        mcp_client::otel::install(mcp_client::otel::Telemetry::new(&tracers, &meters))
            .expect("installed once");
        Sdk {
            spans,
            tracers,
            metrics,
            meters,
        }
    })
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Text {
    text: String,
}

/// Records a span of its own (through the global tracer, in the current context), then echoes.
async fn echo(_cx: ToolContext, args: Text) -> String {
    let span = global::tracer("the-tool").start("echo work");
    drop(span);
    args.text
}

async fn fail(_cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    Err(ToolError::execution("broken on purpose"))
}

fn server() -> Server {
    Server::builder(Implementation::new("otel-test", "1.0.0"))
        .tool(Tool::new("echo").description("Echo the text"), echo)
        .tool(Tool::new("fail").description("Always fails"), fail)
        .build()
        .expect("the server builds")
}

fn client(version: ProtocolVersion) -> Client {
    Client::builder(Implementation::new("otel-client", "1.0.0"))
        .protocol_version(version)
        .build()
}

/// A session of `client` with `server` over an in-process byte stream (the stdio transport's
/// codec both ways), and the task serving it.
async fn duplex_session(
    server: Server,
    client: Client,
) -> (ClientSession, tokio::task::JoinHandle<()>) {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_io);
    let serving = tokio::spawn(async move {
        let _ = server.serve_io(server_read, server_write).await;
    });
    let (client_read, client_write) = tokio::io::split(client_io);
    let connection = mcp_transport_stdio::io(client_read, client_write);
    let session = client
        .connect(connection)
        .await
        .expect("connect over stdio");
    (session, serving)
}

/// A session with the test server over an in-process byte stream.
async fn stdio_session(version: ProtocolVersion) -> (ClientSession, tokio::task::JoinHandle<()>) {
    duplex_session(server(), client(version)).await
}

/// A session with the test server over Streamable HTTP.
async fn http_session(version: ProtocolVersion) -> (ClientSession, Served) {
    let served = Served::server(&server()).await;
    let transport = StreamableHttpClient::builder(served.url(mcp_tests::http::MCP_PATH))
        .build()
        .expect("an HTTP client");
    let (connection, _handle) = transport.connect().await.expect("connect over HTTP");
    let session = client(version)
        .connect(connection)
        .await
        .expect("an MCP session over HTTP");
    (session, served)
}

/// What one scenario ran under: its trace, the span that stands for the application around the
/// client, and the code of the protocol error it provoked.
struct Scenario {
    trace: TraceId,
    root: SpanId,
    protocol_error: i64,
}

/// Calls `echo`, `fail` (a tool error) and `missing` (a protocol error) inside a span of the
/// test's own.
async fn run(session: &ClientSession, label: &str) -> Scenario {
    let tracer = sdk().tracers.tracer("the-application");
    let root = tracer.start(format!("agent {label}"));
    let cx = Context::current_with_span(root);
    let ids = cx.span().span_context().clone();
    let protocol_error = async {
        let echoed = session
            .call_tool("echo", json!({"text": "hi"}))
            .await
            .expect("echo answers");
        assert_ne!(echoed.is_error, Some(true));
        let failed = session
            .call_tool("fail", json!({}))
            .await
            .expect("fail answers");
        assert_eq!(failed.is_error, Some(true));
        match session.call_tool("missing", json!({})).await {
            Err(CallError::Rpc(error)) => error.code,
            other => panic!("an unknown tool is a protocol error: {other:?}"),
        }
    }
    .with_context(cx.clone())
    .await;
    cx.span().end();
    Scenario {
        trace: ids.trace_id(),
        root: ids.span_id(),
        protocol_error,
    }
}

/// The finished spans of `trace`.
fn spans_of(trace: TraceId) -> Vec<SpanData> {
    sdk()
        .spans
        .get_finished_spans()
        .expect("finished spans")
        .into_iter()
        .filter(|s| s.span_context.trace_id() == trace)
        .collect()
}

#[track_caller]
fn one<'a>(spans: &'a [SpanData], name: &str, kind: SpanKind) -> &'a SpanData {
    let found: Vec<_> = spans
        .iter()
        .filter(|s| s.name == name && s.span_kind == kind)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one {kind:?} span `{name}` in {:#?}",
        spans
            .iter()
            .map(|s| (&s.name, &s.span_kind))
            .collect::<Vec<_>>()
    );
    found[0]
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a OtelValue> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

#[track_caller]
fn has(span: &SpanData, key: &str, value: &str) {
    assert_eq!(
        attribute(span, key).map(OtelValue::as_str).as_deref(),
        Some(value),
        "{key} of `{}` ({:?}): {:?}",
        span.name,
        span.span_kind,
        span.attributes
    );
}

#[track_caller]
fn lacks(span: &SpanData, key: &str) {
    assert!(
        attribute(span, key).is_none(),
        "`{}` has {key}: {:?}",
        span.name,
        span.attributes
    );
}

/// The names every span of the SDK's scopes carries are the conventions' names.
#[track_caller]
fn names_are_the_conventions(spans: &[SpanData]) {
    for span in spans {
        let scope = span.instrumentation_scope.name();
        if scope != "mcp-server" && scope != "mcp-client" {
            continue;
        }
        for KeyValue { key, .. } in &span.attributes {
            assert!(
                CONVENTION_ATTRIBUTES.contains(&key.as_str()),
                "`{key}` on `{}` is not a name of the conventions",
                span.name
            );
        }
        if span.span_kind == SpanKind::Internal {
            // A tool's execution: `execute_tool {gen_ai.tool.name}`.
            assert!(span.name.starts_with("execute_tool "), "{}", span.name);
            continue;
        }
        let method = attribute(span, "mcp.method.name")
            .map(|v| v.as_str().into_owned())
            .unwrap_or_default();
        assert!(
            span.name == method || span.name.starts_with(&format!("{method} ")),
            "the span name `{}` starts with its method `{method}`",
            span.name
        );
    }
}

/// Which transport and era a scenario ran on, as the spans should say.
struct Expect {
    version: &'static str,
    transport: &'static str,
    /// `mcp.session.id` on the server's spans (stateful HTTP sessions).
    session_id: bool,
}

fn check(scenario: &Scenario, expect: &Expect) {
    let spans = spans_of(scenario.trace);
    names_are_the_conventions(&spans);

    // The client span is the application's child; the server span the client's (a remote
    // parent, from `_meta`); the tool's execution the server's, and what the tool records
    // its own.
    let client = one(&spans, "tools/call echo", SpanKind::Client);
    let server = one(&spans, "tools/call echo", SpanKind::Server);
    let tool = one(&spans, "execute_tool echo", SpanKind::Internal);
    let work = one(&spans, "echo work", SpanKind::Internal);
    assert_eq!(tool.parent_span_id, server.span_context.span_id());
    assert_eq!(work.parent_span_id, tool.span_context.span_id());
    has(tool, "gen_ai.tool.name", "echo");
    has(tool, "gen_ai.operation.name", "execute_tool");
    assert_eq!(client.parent_span_id, scenario.root);
    assert_eq!(server.parent_span_id, client.span_context.span_id());
    assert!(
        server.parent_span_is_remote,
        "the server's parent came in `_meta`"
    );
    for span in [client, server] {
        has(span, "mcp.method.name", "tools/call");
        has(span, "gen_ai.tool.name", "echo");
        has(span, "gen_ai.operation.name", "execute_tool");
        has(span, "mcp.protocol.version", expect.version);
        lacks(span, "error.type");
        assert_eq!(span.status, Status::Unset);
    }
    for span in [client, server] {
        has(span, "network.transport", expect.transport);
        if expect.transport == "tcp" {
            has(span, "network.protocol.name", "http");
        } else {
            lacks(span, "network.protocol.name");
        }
        assert!(
            attribute(span, "jsonrpc.request.id").is_some(),
            "the {:?} span names the request: {:?}",
            span.span_kind,
            span.attributes
        );
    }
    // The id the client sent is the one the server saw (except on HTTP's shared stateless
    // connection, which renumbers: see docs/telemetry.md, "Limits").
    if expect.transport == "pipe" || expect.session_id {
        assert_eq!(
            attribute(client, "jsonrpc.request.id"),
            attribute(server, "jsonrpc.request.id"),
            "one id on both sides"
        );
    }
    if expect.session_id {
        let id = attribute(server, "mcp.session.id").expect("the server's session id");
        assert_eq!(attribute(client, "mcp.session.id"), Some(id), "one session");
    } else {
        lacks(server, "mcp.session.id");
        lacks(client, "mcp.session.id");
    }

    // A tool error: the call succeeded, the tool did not.
    for kind in [SpanKind::Client, SpanKind::Server] {
        let span = one(&spans, "tools/call fail", kind.clone());
        has(span, "error.type", "tool_error");
        lacks(span, "rpc.response.status_code");
        assert!(matches!(span.status, Status::Error { .. }), "{span:?}");
    }
    let failed_server = one(&spans, "tools/call fail", SpanKind::Server);
    let failed_client = one(&spans, "tools/call fail", SpanKind::Client);
    assert_eq!(
        failed_server.parent_span_id,
        failed_client.span_context.span_id()
    );

    // A protocol error: the JSON-RPC code, on both sides.
    let code = scenario.protocol_error.to_string();
    for kind in [SpanKind::Client, SpanKind::Server] {
        let span = one(&spans, "tools/call missing", kind);
        has(span, "error.type", &code);
        has(span, "rpc.response.status_code", &code);
        match &span.status {
            Status::Error { description } => assert!(!description.is_empty()),
            other => panic!("an error status, not {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_sessions_trace_client_server_and_tool() {
    sdk();
    let (session, serving) = stdio_session(ProtocolVersion::V2025_11_25).await;
    let scenario = run(&session, "stdio 2025-11-25").await;
    check(
        &scenario,
        &Expect {
            version: "2025-11-25",
            transport: "pipe",
            session_id: false,
        },
    );
    // Ending the session records both session durations.
    session.close().await;
    drop(session);
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("the server ends with its session")
        .expect("the server task");
    sdk().meters.force_flush().expect("flush the metrics");
    let names = metric_names();
    for name in CONVENTION_METRICS {
        assert!(names.contains(&(*name).to_owned()), "{name} in {names:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_stateless_requests_trace_client_server_and_tool() {
    sdk();
    let (session, _serving) = stdio_session(ProtocolVersion::V2026_07_28).await;
    let scenario = run(&session, "stdio 2026-07-28").await;
    check(
        &scenario,
        &Expect {
            version: "2026-07-28",
            transport: "pipe",
            session_id: false,
        },
    );
}

/// The scenario over Streamable HTTP in `version`, checked; the server's spans name the
/// session when the revision has one.
async fn http_traces_client_server_and_tool(version: ProtocolVersion) {
    sdk();
    let (session, served) = http_session(version).await;
    let scenario = run(&session, &format!("http {version}")).await;
    check(
        &scenario,
        &Expect {
            version: version.as_str(),
            transport: "tcp",
            session_id: version.is_session(),
        },
    );
    session.close().await;
    served.stop().await.expect("the HTTP server stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_sessions_trace_client_server_and_tool() {
    http_traces_client_server_and_tool(ProtocolVersion::V2025_11_25).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_stateless_requests_trace_client_server_and_tool() {
    http_traces_client_server_and_tool(ProtocolVersion::V2026_07_28).await;
}

fn w3c(trace: TraceId, span: SpanId) -> String {
    format!("00-{trace}-{span}-01")
}

/// The parent comes from `_meta`; the HTTP request's `traceparent` header is only a link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_traceparent_header_is_a_link_and_meta_the_parent() {
    sdk();
    let served = Served::server(&server()).await;
    let message_trace = TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").expect("hex");
    let message_span = SpanId::from_hex("00f067aa0ba902b7").expect("hex");
    let http_trace = TraceId::from_hex("0af7651916cd43dd8448eb211c80319c").expect("hex");
    let http_span = SpanId::from_hex("b7ad6b7169203331").expect("hex");
    let message = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": "linked"}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "traceparent": w3c(message_trace, message_span),
            "baggage": "tenant=acme"}}});
    let headers = [
        ("mcp-protocol-version", "2026-07-28".to_owned()),
        ("mcp-method", "tools/call".to_owned()),
        ("mcp-name", "echo".to_owned()),
        ("traceparent", w3c(http_trace, http_span)),
    ];
    // A first request starts the service's stateless connection; later ones are served in
    // the task of their POST with the id the client gave (the shared connection's route
    // renumbers ids).
    let warm_up = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": "first"}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    assert_eq!(
        post(served.addr(), &warm_up, &headers[..3]).await.status,
        200
    );
    let answer = post(served.addr(), &message, &headers).await;
    assert_eq!(answer.status, 200);
    let spans = spans_of(message_trace);
    names_are_the_conventions(&spans);
    let server = one(&spans, "tools/call echo", SpanKind::Server);
    assert_eq!(server.parent_span_id, message_span);
    has(server, "jsonrpc.request.id", "7");
    has(server, "mcp.protocol.version", "2026-07-28");
    let linked = SpanContext::new(
        http_trace,
        http_span,
        TraceFlags::SAMPLED,
        true,
        TraceState::default(),
    );
    assert!(
        server.links.links.iter().any(|l| l.span_context == linked),
        "the HTTP context is linked: {:?}",
        server.links
    );
    assert!(
        spans_of(http_trace).is_empty(),
        "nothing is parented on the HTTP header's context"
    );
    served.stop().await.expect("the HTTP server stops");
}

/// A message without trace context still gets its span (a root, or the ambient context's
/// child), and notifications get theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_without_context_and_notifications_have_spans() {
    sdk();
    let (session, _serving) = stdio_session(ProtocolVersion::V2025_11_25).await;
    // Outside any span of the application: the client span is a root.
    session.list_tools(None).await.expect("tools/list");
    let spans = sdk().spans.get_finished_spans().expect("spans");
    let listed: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "tools/list" && s.span_kind == SpanKind::Client)
        .collect();
    assert!(!listed.is_empty());
    let client = listed[listed.len() - 1];
    assert_eq!(client.parent_span_id, SpanId::INVALID);
    let server = spans_of(client.span_context.trace_id())
        .into_iter()
        .find(|s| s.span_kind == SpanKind::Server && s.name == "tools/list")
        .expect("the server's tools/list span in the client's trace");
    assert_eq!(server.parent_span_id, client.span_context.span_id());
    let initialized: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "notifications/initialized")
        .collect();
    assert!(
        initialized.iter().any(|s| s.span_kind == SpanKind::Client)
            && initialized.iter().any(|s| s.span_kind == SpanKind::Server),
        "the initialized notification has a client and a server span"
    );
    for span in &spans {
        let method = attribute(span, "mcp.method.name").map(|v| v.as_str().into_owned());
        if let Some(method) = method {
            assert!(
                CONVENTION_METHODS.contains(&method.as_str()) || method == "server/discover",
                "`{method}` is a method of the conventions' list (or of a newer revision)"
            );
        }
    }
}

/// The names the crates declare are the conventions' names.
#[test]
fn declared_names_are_the_conventions() {
    for name in mcp_server::otel::names::ALL
        .iter()
        .chain(mcp_client::otel::names::ALL)
    {
        assert!(
            CONVENTION_ATTRIBUTES.contains(name) || CONVENTION_METRICS.contains(name),
            "`{name}` is not a name of the conventions"
        );
    }
}

fn metric_names() -> Vec<String> {
    let mut names = Vec::new();
    for resource in sdk().metrics.get_finished_metrics().expect("metrics") {
        for scope in resource.scope_metrics() {
            for metric in scope.metrics() {
                assert!(
                    CONVENTION_METRICS.contains(&metric.name()),
                    "`{}` is not a metric of the conventions",
                    metric.name()
                );
                names.push(metric.name().to_owned());
            }
        }
    }
    names
}

/// Every kind of request of a session has its spans, named and attributed as the conventions
/// say: resources (`mcp.resource.uri`), prompts (`gen_ai.prompt.name`, the span's target),
/// subscriptions, logging, ping.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_method_of_a_session_has_spans_with_the_conventions_names() {
    sdk();
    let (session, _serving) = duplex_session(
        mcp_example::server().expect("the example server"),
        client(ProtocolVersion::V2025_11_25),
    )
    .await;
    let tracer = sdk().tracers.tracer("the-application");
    let cx = Context::current_with_span(tracer.start("agent every method"));
    let trace = cx.span().span_context().trace_id();
    async {
        session.ping().await.expect("ping");
        session.list_resources(None).await.expect("resources/list");
        session
            .read_resource("example://readme")
            .await
            .expect("resources/read");
        session
            .subscribe("example://readme")
            .await
            .expect("resources/subscribe");
        session.list_prompts(None).await.expect("prompts/list");
        session
            .get_prompt("greeting", [("name", "Ada")])
            .await
            .expect("prompts/get");
        session
            .set_logging_level(mcp_types::LoggingLevel::Info)
            .await
            .expect("logging/setLevel");
    }
    .with_context(cx.clone())
    .await;
    cx.span().end();
    let spans = spans_of(trace);
    names_are_the_conventions(&spans);
    for (name, method) in [
        ("ping", "ping"),
        ("resources/list", "resources/list"),
        ("resources/read", "resources/read"),
        ("resources/subscribe", "resources/subscribe"),
        ("prompts/list", "prompts/list"),
        ("prompts/get greeting", "prompts/get"),
        ("logging/setLevel", "logging/setLevel"),
    ] {
        for kind in [SpanKind::Client, SpanKind::Server] {
            let span = one(&spans, name, kind);
            has(span, "mcp.method.name", method);
            lacks(span, "error.type");
            lacks(span, "gen_ai.operation.name");
        }
    }
    for name in ["resources/read", "resources/subscribe"] {
        for kind in [SpanKind::Client, SpanKind::Server] {
            has(
                one(&spans, name, kind),
                "mcp.resource.uri",
                "example://readme",
            );
        }
    }
    for kind in [SpanKind::Client, SpanKind::Server] {
        has(
            one(&spans, "prompts/get greeting", kind),
            "gen_ai.prompt.name",
            "greeting",
        );
    }
}

/// What the server asks of the client (here `roots/list`, from a tool) has its spans too: the
/// server's (kind `CLIENT`, the sender's) inside the tool's span, the client's (kind `SERVER`,
/// the receiver's) its child through `_meta`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_server_asks_the_client_is_traced_inside_the_tool() {
    sdk();
    let root: mcp_types::Root =
        serde_json::from_value(json!({"uri": "file:///work"})).expect("a root");
    let (session, _serving) = duplex_session(
        mcp_example::server().expect("the example server"),
        Client::builder(Implementation::new("otel-client", "1.0.0"))
            .protocol_version(ProtocolVersion::V2025_11_25)
            .roots(mcp_client::Roots::new(vec![root]))
            .build(),
    )
    .await;
    let tracer = sdk().tracers.tracer("the-application");
    let cx = Context::current_with_span(tracer.start("agent asks for roots"));
    let trace = cx.span().span_context().trace_id();
    let listed = session
        .call_tool("list_roots", json!({}))
        .with_context(cx.clone())
        .await
        .expect("list_roots answers");
    assert_ne!(listed.is_error, Some(true));
    cx.span().end();
    let spans = spans_of(trace);
    names_are_the_conventions(&spans);
    let tool = one(&spans, "execute_tool list_roots", SpanKind::Internal);
    let asked = one(&spans, "roots/list", SpanKind::Client);
    let answered = one(&spans, "roots/list", SpanKind::Server);
    assert_eq!(asked.instrumentation_scope.name(), "mcp-server");
    assert_eq!(answered.instrumentation_scope.name(), "mcp-client");
    assert_eq!(asked.parent_span_id, tool.span_context.span_id());
    assert_eq!(answered.parent_span_id, asked.span_context.span_id());
    assert!(answered.parent_span_is_remote);
    has(asked, "mcp.method.name", "roots/list");
    has(asked, "mcp.protocol.version", "2025-11-25");
    has(answered, "mcp.method.name", "roots/list");
    assert!(attribute(answered, "jsonrpc.request.id").is_some());
    assert_eq!(
        attribute(asked, "jsonrpc.request.id"),
        attribute(answered, "jsonrpc.request.id"),
        "the server's span names the request it sent, as the client saw it"
    );
    lacks(asked, "error.type");
    lacks(answered, "error.type");
}

/// What the server fans out to every session (list changes, resource updates) has one span
/// per notification sent: kind `CLIENT` on the server, a root (it belongs to no request), the
/// client's `SERVER` span its child through `_meta`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fanned_out_notifications_have_one_span_per_session() {
    sdk();
    const URI: &str = "test://fan-out";
    let server = Server::builder(Implementation::new("otel-fan-out", "1.0.0"))
        .resource(
            mcp_server::Resource::new(URI, "fan-out").mime_type("text/plain"),
            |_cx| async { "fanned" },
        )
        .build()
        .expect("the server builds");
    let mut sessions = Vec::new();
    for _ in 0..2 {
        let (session, _serving) =
            duplex_session(server.clone(), client(ProtocolVersion::V2025_11_25)).await;
        session.subscribe(URI).await.expect("resources/subscribe");
        let notifications = session.notifications();
        sessions.push((session, notifications));
    }
    server.notify_resource_updated(URI);
    server
        .add_tool(
            Tool::new("fan-out-late").description("Added while serving"),
            |_cx: mcp_server::RequestContext, _args: NoArgs| async { "late" },
        )
        .expect("the tool is added");
    for (_, notifications) in &mut sessions {
        let (mut updated, mut changed) = (false, false);
        while !(updated && changed) {
            match tokio::time::timeout(Duration::from_secs(10), notifications.recv()).await {
                Ok(Some(mcp_client::ServerNotification::ResourceUpdated(p))) => {
                    updated |= p.uri == URI;
                }
                Ok(Some(mcp_client::ServerNotification::ToolListChanged)) => changed = true,
                Ok(Some(_)) => {}
                other => panic!("both notifications reach each session: {other:?}"),
            }
        }
    }
    // Each notification sent: a server span, and the client's span its child.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let spans = sdk().spans.get_finished_spans().expect("spans");
        let sent = |method: &str| -> Vec<&SpanData> {
            spans
                .iter()
                .filter(|s| {
                    s.name == method
                        && s.span_kind == SpanKind::Client
                        && s.instrumentation_scope.name() == "mcp-server"
                        && (method != "notifications/resources/updated"
                            || attribute(s, "mcp.resource.uri").map(OtelValue::as_str)
                                == Some(URI.into()))
                })
                .collect()
        };
        let updated = sent("notifications/resources/updated");
        let changed = sent("notifications/tools/list_changed");
        let received = |span: &SpanData| {
            spans.iter().any(|s| {
                s.span_kind == SpanKind::Server
                    && s.name == span.name
                    && s.parent_span_id == span.span_context.span_id()
                    && s.parent_span_is_remote
            })
        };
        let complete = updated.len() == 2
            && changed.len() == 2
            && updated.iter().chain(&changed).all(|s| received(s));
        if complete {
            for span in updated.iter().chain(&changed) {
                assert_eq!(span.parent_span_id, SpanId::INVALID, "a root");
                has(span, "mcp.protocol.version", "2025-11-25");
                lacks(span, "error.type");
            }
            assert_ne!(
                updated[0].span_context.trace_id(),
                updated[1].span_context.trace_id(),
                "one trace per session's notification"
            );
            names_are_the_conventions(&spans);
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "two updated and two list_changed spans, each with the client's child: {} and {}",
            updated.len(),
            changed.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
