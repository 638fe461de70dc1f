//! The smallest useful server: one tool, served on stdin/stdout.

use mcp_server::{Server, Tool, ToolContext, model::Implementation};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
}

async fn greet(_cx: ToolContext, args: Greet) -> String {
    format!("Hello, {}!", args.name)
}

fn main() -> std::io::Result<()> {
    let server = Server::builder(Implementation::new("minimal", "1.0.0"))
        .tool(Tool::new("greet").description("Greets someone"), greet)
        .build()
        .expect("valid server");
    // A runtime of its own (current-thread: a stdio server has one client).
    server.run_stdio()?;
    Ok(())
}
