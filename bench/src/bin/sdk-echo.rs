//! The echo server written with the SDK, the way its documentation shows: one typed tool
//! `echo` (input `{text}`, output the text as one text content block).
//!
//! Usage: `sdk-echo --stdio|--http ADDR [--stateless] [--threads N]` (`--threads 0`:
//! a single-threaded runtime; default: tokio's multi-threaded runtime with one worker per
//! available core, like `#[tokio::main]`). `--http` serves Streamable HTTP at `http://ADDR/mcp`
//! with `StreamableHttpService` and `Server::connection_handler` (64 open request streams per
//! session instead of the transport's default 16, for the 32-in-flight runs). 2026-07-28
//! requests are served statelessly either way; `--stateless` also turns sessions off (no
//! session ids), like `limit-http --stateless`.

use std::net::SocketAddr;
use std::process::ExitCode;

use mcp_bench::args::{ArgError, Args};
use mcp_server::model::Implementation;
use mcp_server::{Server, Tool, ToolContext};
use mcp_transport_http::server::{HttpServerConfig, StreamableHttpService};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to send back
    text: String,
}

async fn echo(_cx: ToolContext, args: EchoArgs) -> String {
    args.text
}

fn server() -> Result<Server, mcp_server::BuildError> {
    Server::builder(Implementation::new("sdk-echo", env!("CARGO_PKG_VERSION")))
        .tool(Tool::new("echo").description("Echo the text back"), echo)
        .build()
}

enum Mode {
    Stdio,
    /// Streamable HTTP on this address; `stateful: false` hands out no session ids.
    Http {
        addr: SocketAddr,
        stateful: bool,
    },
}

struct Config {
    mode: Mode,
    threads: Option<usize>,
}

fn config() -> Result<Config, ArgError> {
    let mut args = Args::from_env();
    let mode = if args.flag("--stdio") {
        Mode::Stdio
    } else if let Some(addr) = args.parsed_opt::<SocketAddr>("--http")? {
        Mode::Http {
            addr,
            stateful: !args.flag("--stateless"),
        }
    } else {
        return Err(ArgError("give --stdio or --http ADDR".into()));
    };
    // `None`: tokio's default, one worker per available core (like `#[tokio::main]`).
    let config = Config {
        mode,
        threads: args.parsed_opt("--threads")?,
    };
    args.finish()?;
    Ok(config)
}

fn main() -> ExitCode {
    let config = match config() {
        Ok(config) => config,
        Err(e) => return e.exit("sdk-echo"),
    };
    let server = match server() {
        Ok(server) => server,
        Err(e) => {
            eprintln!("sdk-echo: {e}");
            return ExitCode::FAILURE;
        }
    };
    // `MCP_BENCH_OTEL` (feature `otel`): telemetry off, on or sampled out.
    #[cfg(feature = "otel")]
    let _telemetry = match mcp_bench::otel::Mode::from_env() {
        Ok(mode) => mcp_bench::otel::install(mode),
        Err(e) => {
            eprintln!("sdk-echo: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = mcp_bench::runtime::build(config.threads);
    let result = runtime.and_then(|runtime| {
        runtime.block_on(async {
            match config.mode {
                Mode::Stdio => Ok(server.serve_stdio().await?),
                Mode::Http { addr, stateful } => {
                    // The transport allows 16 open request streams per session by default; the
                    // load driver keeps up to 32 requests in flight on one session.
                    let config = HttpServerConfig::default()
                        .path("/mcp")
                        .stateful(stateful)
                        .max_streams_per_session(64);
                    StreamableHttpService::builder(server.connection_handler())
                        .config(config)
                        .build()
                        .serve(addr)
                        .await
                }
            }
        })
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sdk-echo: {e}");
            ExitCode::FAILURE
        }
    }
}
