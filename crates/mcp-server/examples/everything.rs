//! A server exercising every feature: tools (text, structured, errors, progress, logging,
//! sampling, elicitation, roots, every content kind, run-time registration), resources (text,
//! binary, templates, subscriptions), prompts, completion and the `mcp/` legacy methods.
//! It serves on stdin/stdout and logs to stderr.
//!
//! The server itself is the `mcp-example` crate (the one the `mcp` command bundles); read its
//! source for how each feature is written.

#[tokio::main]
async fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let server = mcp_example::server().map_err(std::io::Error::other)?;
    server.serve_stdio().await?;
    Ok(())
}
