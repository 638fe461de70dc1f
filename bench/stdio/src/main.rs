//! The SDK's echo server over stdio, written the way the documentation shows a stdio server:
//! one typed tool `echo` (input `{text}`, output the text as one text content block), served
//! by `Server::run_stdio` (its own current-thread runtime). Built as `sdk-echo-stdio`
//! (bench/stdio: mcp-server's default features), which the benchmark's stdio rows and its
//! cold-start row run.

use std::process::ExitCode;

use mcp_server::model::Implementation;
use mcp_server::{Server, Tool, ToolContext};

// `MCP_BENCH_OTEL` (feature `otel`): telemetry off, on or sampled out.
#[cfg(feature = "otel")]
#[path = "../../src/otel.rs"]
mod otel;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to send back
    text: String,
}

async fn echo(_cx: ToolContext, args: EchoArgs) -> String {
    args.text
}

fn main() -> ExitCode {
    let server = match Server::builder(Implementation::new("sdk-echo", env!("CARGO_PKG_VERSION")))
        .tool(Tool::new("echo").description("Echo the text back"), echo)
        .build()
    {
        Ok(server) => server,
        Err(e) => {
            eprintln!("{}: {e}", env!("CARGO_BIN_NAME"));
            return ExitCode::FAILURE;
        }
    };
    #[cfg(feature = "otel")]
    let _telemetry = match otel::Mode::from_env() {
        Ok(mode) => otel::install(mode),
        Err(e) => {
            eprintln!("{}: {e}", env!("CARGO_BIN_NAME"));
            return ExitCode::from(2);
        }
    };
    match server.run_stdio() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}: {e}", env!("CARGO_BIN_NAME"));
            ExitCode::FAILURE
        }
    }
}
