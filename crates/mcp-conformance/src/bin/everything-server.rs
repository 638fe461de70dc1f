//! `everything-server`: the conformance fixture over Streamable HTTP at
//! `http://127.0.0.1:$PORT/mcp` (`PORT` from the environment or `--port N`, default 3000), with
//! DNS-rebinding protection (loopback `Host` and `Origin` only).
//!
//! As one of several replicas behind a load balancer: `--redis URL` keeps sessions, resumable
//! streams and the tasks of the extension in Redis (feature `redis`), and
//! `--sealing-key-file FILE` (first line: the key, second line: the previous key; default
//! `MCP_SEALING_KEY`) seals `requestState` with a key every replica holds.

use std::net::{Ipv4Addr, SocketAddr};

use mcp_conformance::fixture;
use mcp_server::SealingKey;
use mcp_transport_http::server::{HostPolicy, HttpServerConfig, StreamableHttpService};

const USAGE: &str =
    "usage: everything-server [--port N] [--redis URL [--no-answer-bus]] [--sealing-key-file FILE]";

#[derive(Default)]
struct Options {
    port: Option<String>,
    redis: Option<String>,
    sealing_key_file: Option<String>,
    /// Answers to server-to-client requests are not routed through Redis (sessions pinned at
    /// the load balancer instead).
    no_answer_bus: bool,
}

fn options() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let mut options = Options {
        port: std::env::var("PORT").ok(),
        ..Options::default()
    };
    while let Some(arg) = args.next() {
        if arg == "--no-answer-bus" {
            options.no_answer_bus = true;
            continue;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (arg.clone(), None),
        };
        let slot = match name.as_str() {
            "--port" => &mut options.port,
            "--redis" => &mut options.redis,
            "--sealing-key-file" => &mut options.sealing_key_file,
            other => return Err(format!("unknown argument `{other}`; {USAGE}")),
        };
        *slot = Some(match inline {
            Some(v) => v,
            None => args.next().ok_or(format!("{name} needs a value"))?,
        });
    }
    Ok(options)
}

fn port(options: &Options) -> Result<u16, String> {
    match &options.port {
        Some(p) => p.parse().map_err(|e| format!("bad port `{p}`: {e}")),
        None => Ok(3000),
    }
}

/// The current and previous sealing keys, from the file or `MCP_SEALING_KEY`.
fn sealing_keys(options: &Options) -> Result<Vec<SealingKey>, String> {
    let secrets: Vec<String> = match &options.sealing_key_file {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {path}: {e}"))?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .take(2)
            .map(str::to_owned)
            .collect(),
        None => ["MCP_SEALING_KEY", "MCP_SEALING_KEY_PREVIOUS"]
            .into_iter()
            .map_while(|name| std::env::var(name).ok().filter(|k| !k.is_empty()))
            .collect(),
    };
    secrets
        .iter()
        .map(|s| SealingKey::new(s.as_bytes()).map_err(|e| format!("sealing key: {e}")))
        .collect()
}

/// The Redis store every replica shares, with `--redis`.
#[cfg(feature = "redis")]
type Store = std::sync::Arc<mcp_store_redis::RedisStore>;
#[cfg(not(feature = "redis"))]
type Store = ();

#[cfg(feature = "redis")]
async fn connect(url: &str) -> std::io::Result<Store> {
    let store = mcp_store_redis::RedisStore::connect(url, mcp_store_redis::RedisConfig::default())
        .await
        .map_err(|e| std::io::Error::other(format!("cannot connect to Redis at {url}: {e}")))?;
    Ok(std::sync::Arc::new(store))
}

#[cfg(not(feature = "redis"))]
async fn connect(_url: &str) -> std::io::Result<Store> {
    Err(std::io::Error::other(
        "--redis: built without the `redis` feature",
    ))
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let invalid = |e: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, e);
    // With the `otel` feature and `MCP_CONFORMANCE_OTEL=on`: through the instrumented path,
    // for as long as the server runs.
    #[cfg(feature = "otel")]
    let _telemetry = mcp_conformance::telemetry::install_from_env().map_err(invalid)?;
    let options = options().map_err(invalid)?;
    let port = port(&options).map_err(invalid)?;
    let store = match &options.redis {
        Some(url) => Some(connect(url).await?),
        None => None,
    };
    let mut builder =
        fixture::builder().map_err(|e| std::io::Error::other(format!("invalid fixture: {e}")))?;
    #[cfg(feature = "redis")]
    if let Some(store) = &store {
        builder = builder
            .change_bus(store.clone())
            .task_backend(store.clone());
    }
    let mut keys = sealing_keys(&options).map_err(invalid)?.into_iter();
    if let Some(current) = keys.next() {
        builder = builder.sealing_key(current);
    }
    if let Some(previous) = keys.next() {
        builder = builder.previous_sealing_key(previous);
    }
    let server = builder
        .build()
        .map_err(|e| std::io::Error::other(format!("invalid fixture: {e}")))?;
    let service = StreamableHttpService::builder(server.connection_handler()).config(
        HttpServerConfig::default()
            .path("/mcp")
            .host_policy(HostPolicy::Loopback),
    );
    #[cfg(feature = "redis")]
    let service = match store {
        Some(store) if options.no_answer_bus => {
            service.session_store(store.clone()).event_store(store)
        }
        Some(store) => service
            .session_store(store.clone())
            .event_store(store.clone())
            .message_bus(store),
        None => service,
    };
    #[cfg(not(feature = "redis"))]
    let _ = (store, options.no_answer_bus);
    service
        .build()
        .serve(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
        .await
}
