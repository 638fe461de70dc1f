//! The example server (`mcp-example`, what `mcp-server`'s `everything` example serves) on
//! stdin/stdout, for the cross-crate tests. Logs go to stderr.

use tracing_subscriber::util::SubscriberInitExt as _;

fn main() -> std::io::Result<()> {
    let subscriber = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .finish();
    // `EVERYTHING_SCOPED_LOG`: this thread's subscriber only (`set_default`), as some
    // applications set it; otherwise the global one.
    let _scoped = match std::env::var_os("EVERYTHING_SCOPED_LOG") {
        Some(_) => Some(subscriber.set_default()),
        None => {
            subscriber.init();
            None
        }
    };
    let server = mcp_example::server().map_err(std::io::Error::other)?;
    // As a stdio server is documented to run: `run_stdio`, on its own current-thread runtime.
    server.run_stdio()?;
    Ok(())
}
