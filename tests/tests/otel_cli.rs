//! What the `mcp` command exports (feature `otel` of `mcp-cli`): `mcp call ... --url` against
//! `mcp serve --http`, both exporting OTLP/HTTP (`http/json`) to a receiver in this test, give
//! one trace: the client's span, the server's span as its child, the tool's span inside.
//!
//! The binary is built here with `cargo build -p mcp-cli --bin mcp --features otel`, into this
//! test binary's target directory and profile (as `tests/cli_e2e.rs` builds it), and copied to
//! `mcp-otel` beside it.
//!
//! `cargo test -p mcp-tests --features otel --test otel_cli`
#![cfg(feature = "otel")]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;

/// Builds `mcp` with telemetry once per test process and returns its path.
fn mcp() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test binary's path");
        // <target>/<profile>/deps/otel_cli-<hash>
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("the test binary sits in <profile>/deps");
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => "dev",
            Some(other) => other,
            None => panic!("a profile directory"),
        };
        let target_dir = profile_dir.parent().expect("a target directory");
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("the workspace");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .current_dir(workspace)
            .args([
                "build",
                "--quiet",
                "-p",
                "mcp-cli",
                "--bin",
                "mcp",
                "--features",
                "otel",
                "--profile",
                profile,
            ])
            .arg("--target-dir")
            .arg(target_dir)
            .status()
            .expect("run cargo to build mcp");
        assert!(status.success(), "building mcp with otel failed: {status}");
        let built = profile_dir.join(format!("mcp{}", std::env::consts::EXE_SUFFIX));
        // A copy of its own: another test may rebuild `mcp` without the feature.
        let copy = profile_dir.join(format!("mcp-otel{}", std::env::consts::EXE_SUFFIX));
        std::fs::copy(&built, &copy).expect("copy mcp");
        copy
    })
}

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
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .stdin(Stdio::null());
    command
}

/// `mcp serve --http` on a free port; its URL as it announces it on stderr.
fn serve(receiver: SocketAddr) -> (Child, String) {
    let mut child = command(receiver, "mcp-serve")
        .args(["serve", "--http", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mcp serve");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(at) = line.find("http://").filter(|_| !sent) {
                let _ = tx.send(line[at..].trim().to_owned());
                sent = true;
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(url) => (child, url),
        Err(_) => {
            let _ = child.kill();
            panic!("`mcp serve --http` announced no URL");
        }
    }
}

/// Ends `child` as an operator would (SIGTERM), so it exports what it holds.
fn terminate(mut child: Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if child.try_wait().expect("wait").is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    panic!("mcp serve did not end on SIGTERM");
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
    let (server, url) = tokio::task::spawn_blocking(move || serve(receiver))
        .await
        .expect("serve");
    let call = tokio::task::spawn_blocking(move || {
        command(receiver, "mcp-call")
            .args(["call", "echo", "--arg", "text=traced", "--url", &url])
            .output()
            .expect("run mcp call")
    })
    .await
    .expect("call");
    assert!(
        call.status.success(),
        "mcp call: {}",
        String::from_utf8_lossy(&call.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&call.stdout), "traced\n");
    assert!(
        call.stdout.len() == "traced\n".len(),
        "export writes nothing to stdout"
    );
    tokio::task::spawn_blocking(move || terminate(server))
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
    let output = Command::new(mcp())
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .args(["call", "echo", "--arg", "text=quiet"])
        .stdin(Stdio::null())
        .output()
        .expect("run mcp call");
    assert!(output.status.success());
    assert_eq!(String::from_utf8_lossy(&output.stdout), "quiet\n");
}

/// Over stdio too: `mcp call ... -- mcp serve` (the server a child process, which inherits the
/// export settings) gives one trace, the server's span the client's child.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_call_against_a_stdio_server_exports_one_trace() {
    tokio::task::spawn_blocking(mcp)
        .await
        .expect("build mcp with otel");
    let (receiver, received) = receiver().await;
    let call = tokio::task::spawn_blocking(move || {
        let server = mcp().to_string_lossy().into_owned();
        command(receiver, "mcp-stdio")
            .args([
                "call",
                "echo",
                "--arg",
                "text=piped",
                "--",
                &server,
                "serve",
            ])
            .output()
            .expect("run mcp call")
    })
    .await
    .expect("call");
    assert!(
        call.status.success(),
        "mcp call: {}",
        String::from_utf8_lossy(&call.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&call.stdout), "piped\n");
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
