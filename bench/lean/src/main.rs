//! The stdio echo server of `sdk-echo-stdio` (`Server::run_stdio`), built the lean way a stdio
//! server can be: `mcp-server` without its default `validation` feature (the tool takes typed
//! arguments, which its type checks). The benchmark's lean cold-start experiment runs it; see
//! docs/performance.md.

use std::process::ExitCode;

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

fn main() -> ExitCode {
    let server = match Server::builder(Implementation::new("sdk-echo", env!("CARGO_PKG_VERSION")))
        .tool(Tool::new("echo").description("Echo the text back"), echo)
        .build()
    {
        Ok(server) => server,
        Err(e) => {
            eprintln!("sdk-echo-lean: {e}");
            return ExitCode::FAILURE;
        }
    };
    match server.run_stdio() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sdk-echo-lean: {e}");
            ExitCode::FAILURE
        }
    }
}
