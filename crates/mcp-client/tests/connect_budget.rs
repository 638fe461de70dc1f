//! Connecting honours the caller's budget: the `server/discover` probe gets no more than what
//! is left of it.

use std::time::{Duration, Instant};

use mcp_client::{Client, ConnectError};
use mcp_jsonrpc::memory_pair;
use mcp_types::Implementation;

#[tokio::test]
async fn a_silent_server_fails_the_connection_within_the_callers_timeout() {
    let (client_side, server_side) = memory_pair(32);
    // The server reads nothing and answers nothing; it stays open for the whole test.
    let _silent = server_side;
    let client = Client::builder(Implementation::new("budget", "1"))
        .initialize_timeout(Duration::from_secs(1))
        .build();
    let started = Instant::now();
    // Hang guard only: without the budget the probe alone waits its own 10 s.
    let outcome = tokio::time::timeout(Duration::from_secs(30), client.connect(client_side))
        .await
        .expect("connect ends");
    let took = started.elapsed();
    assert!(
        matches!(outcome, Err(ConnectError::Initialize(_))),
        "the connection times out: {:?}",
        outcome.err()
    );
    assert!(
        took < Duration::from_secs(5),
        "failed after {took:?}, well past the 1 s asked for"
    );
}
