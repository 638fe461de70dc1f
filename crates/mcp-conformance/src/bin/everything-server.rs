//! `everything-server`: the conformance fixture over Streamable HTTP at
//! `http://127.0.0.1:$PORT/mcp` (`PORT` from the environment or `--port N`, default 3000), with
//! DNS-rebinding protection (loopback `Host` and `Origin` only).

use std::net::{Ipv4Addr, SocketAddr};

use mcp_conformance::fixture;
use mcp_transport_http::server::{HostPolicy, HttpServerConfig, StreamableHttpService};

fn port() -> Result<u16, String> {
    let mut args = std::env::args().skip(1);
    let mut port = std::env::var("PORT").ok();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => port = Some(args.next().ok_or("--port needs a value")?),
            other => match other.strip_prefix("--port=") {
                Some(p) => port = Some(p.to_owned()),
                None => {
                    return Err(format!(
                        "unknown argument `{other}`; usage: everything-server [--port N]"
                    ));
                }
            },
        }
    }
    match port {
        Some(p) => p.parse().map_err(|e| format!("bad port `{p}`: {e}")),
        None => Ok(3000),
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let port = port().map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let server =
        fixture::try_build().map_err(|e| std::io::Error::other(format!("invalid fixture: {e}")))?;
    let service = StreamableHttpService::builder(server.connection_handler())
        .config(
            HttpServerConfig::default()
                .path("/mcp")
                .host_policy(HostPolicy::Loopback),
        )
        .build();
    service
        .serve(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
        .await
}
