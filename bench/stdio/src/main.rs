//! The SDK's echo server over stdio, written the way the documentation shows a stdio server:
//! one typed tool `echo` (input `{text}`, output the text as one text content block), served
//! by `Server::run_stdio` (mcp-server's default features, its own current-thread runtime).
//! The benchmark's stdio rows and its cold-start row run it.

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
            eprintln!("sdk-echo-stdio: {e}");
            return ExitCode::FAILURE;
        }
    };
    match server.run_stdio() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sdk-echo-stdio: {e}");
            ExitCode::FAILURE
        }
    }
}
