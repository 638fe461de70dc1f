//! What the tests of the SDK client (`mcp_client`) against servers share.

use std::sync::{Arc, Mutex};

use mcp_client::ClientSession;
use mcp_types::CallToolResult;
use serde_json::Value;

/// Calls the tool `name` with `arguments`, collecting the progress reported for the call until
/// its result arrived.
pub async fn call_with_progress(
    session: &ClientSession,
    name: &str,
    arguments: Value,
) -> (CallToolResult, Vec<f64>) {
    let progress = Arc::new(Mutex::new(Vec::new()));
    let seen = progress.clone();
    let result = session
        .with_progress(move |p| seen.lock().unwrap().push(p.progress))
        .call_tool(name, arguments)
        .await
        .unwrap();
    let values = progress.lock().unwrap().clone();
    (result, values)
}
