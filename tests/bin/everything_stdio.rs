//! The example server (`mcp-example`, what `mcp-server`'s `everything` example serves) on
//! stdin/stdout, for the cross-crate tests. Logs go to stderr.

fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let server = mcp_example::server().map_err(std::io::Error::other)?;
    // As a stdio server is documented to run: `run_stdio`, on its own current-thread runtime.
    server.run_stdio()?;
    Ok(())
}
