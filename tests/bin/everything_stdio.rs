//! The `everything` example server of `mcp-server`, served on stdin/stdout for the cross-crate
//! tests. Logs go to stderr.

#[path = "../../crates/mcp-server/examples/support/everything_server.rs"]
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
