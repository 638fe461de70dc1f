//! The tokio runtime of a benchmark binary, as its `--threads` asks.

use tokio::runtime::{Builder, Runtime};

/// A runtime with `threads` workers: `Some(0)` is a current-thread runtime (everything on the
/// calling thread), `None` tokio's default (one worker per available core, like
/// `#[tokio::main]`).
pub fn build(threads: Option<usize>) -> std::io::Result<Runtime> {
    let mut builder = match threads {
        Some(0) => Builder::new_current_thread(),
        Some(n) => {
            let mut builder = Builder::new_multi_thread();
            builder.worker_threads(n);
            builder
        }
        None => Builder::new_multi_thread(),
    };
    builder.enable_all().build()
}
