//! Schemas derived from Rust types are generated when first needed (listed or called), or when
//! the server is built if asked (`check_schemas_at_build`, the default in debug builds); one
//! that breaks the rules then fails the build, or else leaves its tool out of the list.

use crate::support;

use std::borrow::Cow;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_jsonrpc::{CallError, Peer};
use mcp_server::model::Implementation;
use mcp_server::{BuildError, Server, ServerBuilder, Tool, ToolContext};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::{Value, json};
use support::call;

/// How many times each test type's schema was generated.
static LISTED_MADE: AtomicUsize = AtomicUsize::new(0);
static CHECKED_MADE: AtomicUsize = AtomicUsize::new(0);
static OTHER_MADE: AtomicUsize = AtomicUsize::new(0);

/// Arguments whose schema generation is counted in `$counter`.
macro_rules! counted_args {
    ($name:ident, $counter:ident) => {
        #[derive(serde::Deserialize)]
        struct $name {
            text: String,
        }

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                $counter.fetch_add(1, Ordering::SeqCst);
                json_schema!({
                    "type": "object",
                    "properties": {"text": {"type": "string", "minLength": 1}},
                    "required": ["text"]
                })
            }
        }
    };
}

counted_args!(ListedArgs, LISTED_MADE);
counted_args!(CheckedArgs, CHECKED_MADE);
counted_args!(OtherArgs, OTHER_MADE);

/// Arguments whose derived schema breaks the `x-mcp-header` rules (a number cannot be one).
#[derive(serde::Deserialize)]
struct BadArgs {
    #[allow(dead_code)]
    n: f64,
}

impl JsonSchema for BadArgs {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("BadArgs")
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "properties": {"n": {"type": "number", "x-mcp-header": "N"}},
            "required": ["n"]
        })
    }
}

fn builder() -> ServerBuilder {
    Server::builder(Implementation::new("schemas", "1.0.0"))
}

async fn start(server: Server) -> Peer {
    support::start(server, (), json!({})).await
}

fn names(list: &Value) -> Vec<&str> {
    list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn a_derived_schema_is_made_once_when_first_needed() {
    let server = builder()
        .check_schemas_at_build(false)
        .tool(
            Tool::new("echo"),
            |_cx: ToolContext, a: ListedArgs| async move { a.text },
        )
        .build()
        .unwrap();
    assert_eq!(LISTED_MADE.load(Ordering::SeqCst), 0, "made by build");
    let peer = start(server).await;
    assert_eq!(LISTED_MADE.load(Ordering::SeqCst), 0, "made by initialize");

    let list = call(&peer, "tools/list", json!({})).await.unwrap();
    assert_eq!(LISTED_MADE.load(Ordering::SeqCst), 1);
    assert_eq!(names(&list), ["echo"]);
    let schema = &list["tools"][0]["inputSchema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["text"]));

    // The derived schema validates: its constraint (`minLength`) says more than the type.
    let ok = call(
        &peer,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    )
    .await
    .unwrap();
    assert_eq!(ok["content"][0]["text"], "hi");
    let refused = call(
        &peer,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": ""}}),
    )
    .await
    .unwrap();
    assert_eq!(refused["isError"], true, "{refused}");
    call(&peer, "tools/list", json!({})).await.unwrap();
    assert_eq!(LISTED_MADE.load(Ordering::SeqCst), 1, "made again");
}

#[tokio::test]
async fn checking_at_build_makes_derived_schemas_there() {
    let server = builder()
        .check_schemas_at_build(true)
        .tool(
            Tool::new("echo"),
            |_cx: ToolContext, a: CheckedArgs| async move { a.text },
        )
        .build()
        .unwrap();
    assert_eq!(CHECKED_MADE.load(Ordering::SeqCst), 1);
    let peer = start(server).await;
    let list = call(&peer, "tools/list", json!({})).await.unwrap();
    assert_eq!(names(&list), ["echo"]);
    assert_eq!(CHECKED_MADE.load(Ordering::SeqCst), 1, "made again");
}

#[tokio::test]
async fn a_refused_derived_schema_fails_the_build_or_leaves_its_tool_out() {
    let bad = |b: ServerBuilder| {
        b.tool(Tool::new("bad"), |_cx: ToolContext, _a: BadArgs| async {
            "never"
        })
        .tool(
            Tool::new("good"),
            |_cx: ToolContext, a: OtherArgs| async move { a.text },
        )
    };
    let err = bad(builder().check_schemas_at_build(true))
        .build()
        .unwrap_err();
    assert!(
        matches!(&err, BuildError::InvalidSchema { tool, which: "inputSchema", .. } if tool == "bad"),
        "{err}"
    );

    let server = bad(builder().check_schemas_at_build(false))
        .build()
        .unwrap();
    let peer = start(server.clone()).await;
    let list = call(&peer, "tools/list", json!({})).await.unwrap();
    assert_eq!(names(&list), ["good"]);
    let err = call(
        &peer,
        "tools/call",
        json!({"name": "bad", "arguments": {"n": 1}}),
    )
    .await
    .unwrap_err();
    match err {
        CallError::Rpc(e) => {
            assert_eq!(e.code, -32603);
            assert!(
                e.message.contains("bad") && e.message.contains("inputSchema"),
                "{e:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    let good = call(
        &peer,
        "tools/call",
        json!({"name": "good", "arguments": {"text": "still"}}),
    )
    .await
    .unwrap();
    assert_eq!(good["content"][0]["text"], "still");

    // A tool added while serving is checked then, whatever the builder said.
    let err = server
        .add_tool(Tool::new("late"), |_cx: ToolContext, _a: BadArgs| async {
            "never"
        })
        .unwrap_err();
    assert!(
        matches!(&err, BuildError::InvalidSchema { tool, .. } if tool == "late"),
        "{err}"
    );
}
