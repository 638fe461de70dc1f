//! A server built without the `validation` feature takes no schema it would have to check: it
//! refuses one, naming the feature, instead of leaving it unchecked.

use mcp_jsonrpc::CallError;
use mcp_server::model::Implementation;
use mcp_server::{BuildError, Server, ServerBuilder, Tool, ToolContext};
use serde_json::{Value, json};

use crate::support::{self, call};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Plain {
    count: u32,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Ranged {
    #[schemars(range(min = 1, max = 10))]
    level: i32,
}

fn builder() -> ServerBuilder {
    Server::builder(Implementation::new("unchecked", "1.0.0"))
}

fn with_tools(b: ServerBuilder) -> ServerBuilder {
    b.tool(
        Tool::new("plain"),
        |_cx: ToolContext, a: Plain| async move { a.count.to_string() },
    )
    .tool(
        Tool::new("ranged"),
        |_cx: ToolContext, a: Ranged| async move { a.level.to_string() },
    )
}

fn refused_for_validation(err: &BuildError, tool_name: &str) -> bool {
    matches!(err, BuildError::InvalidSchema { tool, .. } if tool == tool_name)
        && err.to_string().contains("`validation` feature")
}

#[tokio::test]
async fn a_constraint_its_type_does_not_enforce_is_refused_not_ignored() {
    // Checked at build: the build fails, naming the tool and the feature.
    let err = with_tools(builder().check_schemas_at_build(true))
        .build()
        .unwrap_err();
    assert!(refused_for_validation(&err, "ranged"), "{err}");

    // Left for later: the tool is left out and calls to it fail; the others serve.
    let server = with_tools(builder().check_schemas_at_build(false))
        .build()
        .unwrap();
    let peer = support::start(server, (), json!({})).await;
    let list = call(&peer, "tools/list", json!({})).await.unwrap();
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["plain"]);
    let ok = call(
        &peer,
        "tools/call",
        json!({"name": "plain", "arguments": {"count": 3}}),
    )
    .await
    .unwrap();
    assert_eq!(ok["content"][0]["text"], "3");
    let err = call(
        &peer,
        "tools/call",
        json!({"name": "ranged", "arguments": {"level": 0}}),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CallError::Rpc(e) if e.code == -32603));
}

#[tokio::test]
async fn hand_written_schemas_are_taken_only_when_they_state_nothing_but_the_root() {
    let raw = |schema: Value| {
        builder().tool_raw(
            Tool::new("raw").input_schema(schema),
            |_cx, args: Value| async move { args.to_string() },
        )
    };
    let err = raw(json!({"type": "object", "properties": {"n": {"type": "integer"}}}))
        .build()
        .unwrap_err();
    assert!(refused_for_validation(&err, "raw"), "{err}");

    let server = raw(json!({"type": "object", "description": "takes anything"}))
        .build()
        .unwrap();
    let peer = support::start(server, (), json!({})).await;
    let out = call(
        &peer,
        "tools/call",
        json!({"name": "raw", "arguments": {"n": 1}}),
    )
    .await
    .unwrap();
    assert_eq!(out["content"][0]["text"], r#"{"n":1}"#);
}
