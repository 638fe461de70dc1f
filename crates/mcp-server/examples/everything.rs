//! A server exercising every feature: tools (text, structured, errors, progress, logging,
//! sampling, elicitation, roots, every content kind, run-time registration), resources (text,
//! binary, templates, subscriptions), prompts, completion and the `mcp/` legacy methods.
//! It serves on stdin/stdout and logs to stderr.

#[path = "support/everything_server.rs"]
mod everything_server;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    everything_server::build().serve_stdio().await?;
    Ok(())
}
