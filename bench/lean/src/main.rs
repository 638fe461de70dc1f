//! The stdio echo server of `sdk-echo`, built the lean way a stdio server can be: `mcp-server`
//! without its default `validation` feature (the tool takes typed arguments, which its type
//! checks) and a current-thread runtime (a stdio server has one connection). The benchmark's
//! cold-start experiment runs it; see docs/performance.md.

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

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
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
    match server.serve_stdio().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sdk-echo-lean: {e}");
            ExitCode::FAILURE
        }
    }
}
