//! The echo server written with the SDK, the way its documentation shows: one typed tool
//! `echo` (input `{text}`, output the text as one text content block).
//!
//! Usage: `sdk-echo --stdio [--threads N]` (`--threads 0`: a single-threaded runtime; default:
//! tokio's multi-threaded runtime with one worker per available core, like `#[tokio::main]`).

use std::process::ExitCode;

use mcp_bench::args::{ArgError, Args};
use mcp_server::model::Implementation;
use mcp_server::{Server, Tool, ToolContext};

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
}

struct Config {
    mode: Mode,
    threads: usize,
}

fn config() -> Result<Config, ArgError> {
    let mut args = Args::from_env();
    let default_threads = std::thread::available_parallelism().map_or(1, usize::from);
    let mode = if args.flag("--stdio") {
        Mode::Stdio
    } else {
        return Err(ArgError("give --stdio".into()));
    };
    let config = Config {
        mode,
        threads: args.parsed("--threads", default_threads)?,
    };
    args.finish()?;
    Ok(config)
}

fn main() -> ExitCode {
    let config = match config() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("sdk-echo: {e}");
            return ExitCode::from(2);
        }
    };
    let server = match server() {
        Ok(server) => server,
        Err(e) => {
            eprintln!("sdk-echo: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = if config.threads == 0 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.threads)
            .enable_all()
            .build()
    };
    let result = runtime.and_then(|runtime| {
        runtime.block_on(async {
            match config.mode {
                Mode::Stdio => server.serve_stdio().await,
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
