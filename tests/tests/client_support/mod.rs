//! What the tests of the SDK client (`mcp_client`) against servers share.

// Each test binary compiles its own copy and uses only part of it.
#![allow(dead_code)]

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

/// The names of every tool `session` lists, all pages.
pub async fn tool_names(session: &ClientSession) -> Vec<String> {
    session
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect()
}

/// Calls `ask_model`, which asks the client's sampling handler (the test model) for the answer.
pub async fn assert_sampling(session: &ClientSession, version: impl std::fmt::Display) {
    let sampled = session
        .call_tool("ask_model", serde_json::json!({"question": "2+2?"}))
        .await
        .unwrap();
    assert_eq!(
        mcp_tests::content::text_of(&sampled.content),
        "test-model answered: four",
        "{version}"
    );
}
