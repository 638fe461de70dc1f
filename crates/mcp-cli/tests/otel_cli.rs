//! What the `mcp` command exports (feature `otel` of `mcp-cli`): `mcp call ... --url` against
//! `mcp serve --http`, both exporting OTLP/HTTP (`http/json`) to a receiver in this test, give
//! one trace: the client's span, the server's span as its child, the tool's span inside.
//!
//! A test binary of its own (it installs nothing process-wide, but needs `mcp` built with the
//! feature): `cargo test -p mcp-cli --features otel --test otel_cli`.

#[allow(dead_code)] // shared with the `all` harness; this test uses part of it
mod cli;

use std::net::SocketAddr;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cli::{Listening, Run, mcp, output};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;

/// One OTLP/HTTP export received: its path and its JSON body.
type Received = Arc<Mutex<Vec<(String, Value)>>>;

/// A minimal OTLP/HTTP receiver for `http/json`: every POST is kept and answered `{}`.
async fn receiver() -> (SocketAddr, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let received: Received = Arc::default();
    let kept = Arc::clone(&received);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let kept = Arc::clone(&kept);
            tokio::spawn(async move {
                let service = service_fn(move |request: Request<hyper::body::Incoming>| {
                    let kept = Arc::clone(&kept);
                    async move {
                        let path = request.uri().path().to_owned();
                        let body = request
                            .into_body()
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        kept.lock().expect("lock").push((path, json));
                        Ok::<_, hyper::Error>(
                            Response::builder()
                                .header("content-type", "application/json")
                                .body(Full::new(Bytes::from_static(b"{}")))
                                .expect("a response"),
                        )
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, received)
}

/// `mcp` with export to `receiver` as `service`.
fn command(receiver: SocketAddr, service: &str) -> Command {
    let mut command = Command::new(mcp());
    command
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{receiver}"))
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .env("OTEL_SERVICE_NAME", service)
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .env("OTEL_METRIC_EXPORT_INTERVAL", "200")
        .env_remove("OTEL_TRACES_SAMPLER")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    command
}

/// `mcp args...` exporting to `receiver` as `service`, run on a blocking thread; panics
/// unless it succeeds.
async fn run_exporting(receiver: SocketAddr, service: &'static str, args: &[&str]) -> Run {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let run = tokio::task::spawn_blocking(move || output(command(receiver, service).args(args)))
        .await
        .expect("call");
    assert_eq!(run.code, Some(0), "mcp call: {}", run.stderr);
    run
}

/// One span as the test reads it from the OTLP JSON.
#[derive(Debug, Clone)]
struct Exported {
    service: String,
    scope: String,
    name: String,
    kind: i64,
    trace: String,
    id: String,
    parent: String,
    attributes: Value,
}

const INTERNAL: i64 = 1;
const SERVER: i64 = 2;
const CLIENT: i64 = 3;

fn kind_of(value: &Value) -> i64 {
    match value {
        Value::Number(n) => n.as_i64().unwrap_or(0),
        Value::String(s) => match s.as_str() {
            "SPAN_KIND_INTERNAL" => INTERNAL,
            "SPAN_KIND_SERVER" => SERVER,
            "SPAN_KIND_CLIENT" => CLIENT,
            _ => 0,
        },
        _ => 0,
    }
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

/// The value of a string attribute in OTLP JSON's `[{key, value: {stringValue}}]`.
fn attribute(attributes: &Value, key: &str) -> Option<String> {
    attributes
        .as_array()?
        .iter()
        .find(|kv| kv["key"] == key)
        .map(|kv| text(&kv["value"]["stringValue"]))
}

fn spans(received: &Received) -> Vec<Exported> {
    let mut spans = Vec::new();
    for (path, body) in received.lock().expect("lock").iter() {
        if path != "/v1/traces" {
            continue;
        }
        for resource in body["resourceSpans"].as_array().into_iter().flatten() {
            let service =
                attribute(&resource["resource"]["attributes"], "service.name").unwrap_or_default();
            for scope in resource["scopeSpans"].as_array().into_iter().flatten() {
                for span in scope["spans"].as_array().into_iter().flatten() {
                    spans.push(Exported {
                        service: service.clone(),
                        scope: text(&scope["scope"]["name"]),
                        name: text(&span["name"]),
                        kind: kind_of(&span["kind"]),
                        trace: text(&span["traceId"]).to_lowercase(),
                        id: text(&span["spanId"]).to_lowercase(),
                        parent: text(&span["parentSpanId"]).to_lowercase(),
                        attributes: span["attributes"].clone(),
                    });
                }
            }
        }
    }
    spans
}

fn metric_names(received: &Received) -> Vec<String> {
    let mut names = Vec::new();
    for (path, body) in received.lock().expect("lock").iter() {
        if path != "/v1/metrics" {
            continue;
        }
        for resource in body["resourceMetrics"].as_array().into_iter().flatten() {
            for scope in resource["scopeMetrics"].as_array().into_iter().flatten() {
                for metric in scope["metrics"].as_array().into_iter().flatten() {
                    names.push(text(&metric["name"]));
                }
            }
        }
    }
    names
}

#[track_caller]
fn one<'a>(spans: &'a [Exported], service: &str, name: &str, kind: i64) -> &'a Exported {
    let found: Vec<_> = spans
        .iter()
        .filter(|s| s.service == service && s.name == name && s.kind == kind)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one `{name}` ({kind}) of {service} in {spans:#?}"
    );
    found[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_call_against_mcp_serve_exports_one_trace() {
    tokio::task::spawn_blocking(mcp)
        .await
        .expect("build mcp with otel");
    let (receiver, received) = receiver().await;
    let server = tokio::task::spawn_blocking(move || {
        Listening::spawn(command(receiver, "mcp-serve").args(["serve", "--http", "127.0.0.1:0"]))
    })
    .await
    .expect("serve");
    let url = server.url.clone();
    let args = ["call", "echo", "--arg", "text=traced", "--url", &url];
    let call = run_exporting(receiver, "mcp-call", &args).await;
    assert_eq!(
        call.stdout, "traced\n",
        "export writes nothing else to stdout"
    );
    tokio::task::spawn_blocking(move || server.terminate())
        .await
        .expect("stop the server");

    let spans = spans(&received);
    let client = one(&spans, "mcp-call", "tools/call echo", CLIENT);
    let server = one(&spans, "mcp-serve", "tools/call echo", SERVER);
    let tool = one(&spans, "mcp-serve", "execute_tool echo", INTERNAL);
    assert_eq!(client.scope, "mcp-client");
    assert_eq!(server.scope, "mcp-server");
    assert_eq!(server.trace, client.trace, "one trace");
    assert_eq!(tool.trace, client.trace, "one trace");
    assert_eq!(
        server.parent, client.id,
        "the server span is the client span's child"
    );
    assert_eq!(
        tool.parent, server.id,
        "the tool runs inside the server span"
    );
    assert!(
        client.parent.is_empty(),
        "the client span is the trace's root"
    );
    for span in [client, server] {
        assert_eq!(
            attribute(&span.attributes, "mcp.method.name").as_deref(),
            Some("tools/call")
        );
        assert_eq!(
            attribute(&span.attributes, "gen_ai.tool.name").as_deref(),
            Some("echo")
        );
    }
    assert_eq!(
        attribute(&server.attributes, "network.transport").as_deref(),
        Some("tcp")
    );
    let metrics = metric_names(&received);
    for name in [
        "mcp.client.operation.duration",
        "mcp.server.operation.duration",
    ] {
        assert!(metrics.iter().any(|m| m == name), "{name} in {metrics:?}");
    }
}

#[test]
fn without_an_endpoint_nothing_is_exported_and_stdout_is_the_answer() {
    let quiet = output(
        Command::new(mcp())
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .args(["call", "echo", "--arg", "text=quiet"]),
    );
    quiet.expect_code(0);
    assert_eq!(quiet.stdout, "quiet\n");
}

/// Over stdio too: `mcp call ... -- mcp serve` (the server a child process, which inherits the
/// export settings) gives one trace, the server's span the client's child.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_call_against_a_stdio_server_exports_one_trace() {
    tokio::task::spawn_blocking(mcp)
        .await
        .expect("build mcp with otel");
    let (receiver, received) = receiver().await;
    let server = mcp().to_string_lossy().into_owned();
    let args = [
        "call",
        "echo",
        "--arg",
        "text=piped",
        "--",
        &server,
        "serve",
    ];
    let call = run_exporting(receiver, "mcp-stdio", &args).await;
    assert_eq!(call.stdout, "piped\n");
    // The child exports when its stdin closes, which may be after the client has exited.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (client, server) = loop {
        let spans = spans(&received);
        let find = |scope: &str, kind: i64| {
            spans
                .iter()
                .find(|s| s.scope == scope && s.kind == kind && s.name == "tools/call echo")
                .cloned()
        };
        if let (Some(c), Some(s)) = (find("mcp-client", CLIENT), find("mcp-server", SERVER)) {
            break (c, s);
        }
        assert!(Instant::now() < deadline, "both spans exported: {spans:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(server.trace, client.trace, "one trace");
    assert_eq!(
        server.parent, client.id,
        "the server span is the client span's child"
    );
    assert_eq!(
        attribute(&server.attributes, "network.transport").as_deref(),
        Some("pipe")
    );
}

/// `mcp call` through `mcp proxy --http` to `mcp serve --http`: one trace, the proxy's
/// server span (what it received) the client's child, its client span (what it forwarded) the
/// child of that, the upstream server's span the child of the proxy's client span.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_proxy_traces_what_it_forwards() {
    tokio::task::spawn_blocking(mcp)
        .await
        .expect("build mcp with otel");
    let (receiver, received) = receiver().await;
    let upstream = tokio::task::spawn_blocking(move || {
        Listening::spawn(command(receiver, "upstream").args(["serve", "--http", "127.0.0.1:0"]))
    })
    .await
    .expect("serve");
    let upstream_url = upstream.url.clone();
    let proxy = tokio::task::spawn_blocking(move || {
        Listening::spawn(command(receiver, "proxy").args([
            "proxy",
            "--http",
            "127.0.0.1:0",
            "--url",
            &upstream_url,
        ]))
    })
    .await
    .expect("proxy");
    // "a proxy of http://upstream... at http://proxy...": the last URL is the proxy's.
    let url = proxy
        .url
        .rsplit(" at ")
        .next()
        .unwrap_or_default()
        .to_owned();
    // A session (2025-11-25): the proxy's spans name it, and the upstream's.
    let args = [
        "call",
        "echo",
        "--arg",
        "text=proxied",
        "--protocol",
        "2025-11-25",
        "--url",
        &url,
    ];
    let call = run_exporting(receiver, "agent", &args).await;
    assert_eq!(call.stdout, "proxied\n");
    tokio::task::spawn_blocking(move || {
        proxy.terminate();
        upstream.terminate();
    })
    .await
    .expect("stop the proxy and the server");

    let spans = spans(&received);
    let client = one(&spans, "agent", "tools/call echo", CLIENT);
    let received_span = one(&spans, "proxy", "tools/call echo", SERVER);
    let forwarded = one(&spans, "proxy", "tools/call echo", CLIENT);
    let server = one(&spans, "upstream", "tools/call echo", SERVER);
    let tool = one(&spans, "upstream", "execute_tool echo", INTERNAL);
    for span in [received_span, forwarded, server, tool] {
        assert_eq!(span.trace, client.trace, "one trace: {span:?}");
    }
    assert_eq!(
        received_span.parent, client.id,
        "the proxy received the call"
    );
    assert_eq!(forwarded.parent, received_span.id, "and forwarded it");
    assert_eq!(
        server.parent, forwarded.id,
        "the server's parent is the proxy's span"
    );
    assert_eq!(tool.parent, server.id);
    assert_eq!(received_span.scope, "mcp-server");
    assert_eq!(forwarded.scope, "mcp-client");
    for span in [received_span, forwarded] {
        for (key, value) in [
            ("mcp.method.name", "tools/call"),
            ("gen_ai.tool.name", "echo"),
            ("network.transport", "tcp"),
            ("mcp.protocol.version", "2025-11-25"),
        ] {
            assert_eq!(
                attribute(&span.attributes, key).as_deref(),
                Some(value),
                "{key} of {span:?}"
            );
        }
        assert_eq!(
            attribute(&span.attributes, "jsonrpc.request.id"),
            attribute(&server.attributes, "jsonrpc.request.id"),
            "the proxy forwards ids as they are"
        );
        assert!(attribute(&span.attributes, "mcp.session.id").is_some());
    }
    // Its session with the upstream server is the server's session.
    assert_eq!(
        attribute(&forwarded.attributes, "mcp.session.id"),
        attribute(&server.attributes, "mcp.session.id")
    );
    // Notifications cross with spans too.
    one(&spans, "proxy", "notifications/initialized", SERVER);
    one(&spans, "proxy", "notifications/initialized", CLIENT);
}
