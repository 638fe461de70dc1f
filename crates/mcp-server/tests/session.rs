//! Sessions over an in-memory connection, driven by a raw engine client: the lifecycle, the
//! stateless revision's envelope before it is served, cancellation and timeouts of requests the
//! server sends, and the list-changed fan-out.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_jsonrpc::{
    CallError, Engine, ErrorObject, Handler, Notification, NotificationContext, Peer, Request,
    RequestContext, RequestOptions, memory_pair,
};
use mcp_server::model::Implementation;
use mcp_server::prelude::*;
use mcp_server::{ServerOptions, Tool};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// A client that records every notification and every request it receives (and the
/// cancellation of a request); requests are never answered unless `answer` is set.
#[derive(Clone, Default)]
struct Recorder {
    seen: Arc<Mutex<Vec<(String, Value)>>>,
    changed: Arc<Notify>,
    answer: Option<Value>,
}

impl Recorder {
    fn record(&self, method: &str, params: Option<&RawValue>) {
        let params = params.map_or(Value::Null, |p| serde_json::from_str(p.get()).unwrap());
        self.seen.lock().unwrap().push((method.to_owned(), params));
        self.changed.notify_waiters();
    }

    fn methods(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|(m, _)| m.clone())
            .collect()
    }

    async fn wait_for(&self, method: &str) -> Value {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let changed = self.changed.notified();
                if let Some((_, p)) = self.seen.lock().unwrap().iter().find(|(m, _)| m == method) {
                    return p.clone();
                }
                changed.await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {method}; saw {:?}", self.methods()))
    }
}

impl Handler for Recorder {
    async fn handle_request(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> Result<mcp_jsonrpc::RawJson, ErrorObject> {
        self.record(&request.method, request.params.as_deref());
        // The engine applies the peer's `notifications/cancelled` to the request's token (and
        // drops this future); record it as a pseudo-notification so tests can wait for it.
        let token = cx.cancellation().clone();
        let recorder = self.clone();
        let method = request.method.clone();
        tokio::spawn(async move {
            token.cancelled().await;
            recorder.record(&format!("cancelled {method}"), None);
        });
        match &self.answer {
            Some(answer) => Ok(mcp_jsonrpc::RawJson::serialize(answer).unwrap()),
            None => std::future::pending().await,
        }
    }

    async fn handle_notification(&self, n: Notification, _cx: NotificationContext) {
        self.record(&n.method, n.params.as_deref());
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Prompt {
    prompt: String,
}

fn server(options: ServerOptions) -> Server {
    Server::builder(Implementation::new("session-test", "1.0.0"))
        .options(options)
        .tool(
            Tool::new("sample"),
            |cx: ToolContext, args: Prompt| async move {
                let answer = cx
                    .sample("s", CreateMessageRequestParams::user_text(args.prompt, 10))
                    .await?;
                Ok::<_, ToolError>(answer.model)
            },
        )
        .tool(
            Tool::new("add_tool").title("Add a tool"),
            |cx: ToolContext, _args: NoArgs| async move {
                cx.server()
                    .add_tool(Tool::new("late"), |_cx: ToolContext, _a: NoArgs| async {
                        "late"
                    })
                    .map_err(ToolError::execution)?;
                Ok::<_, ToolError>("added")
            },
        )
        .resource(Resource::new("test://r", "r").title("R"), |_cx| async {
            "body"
        })
        .build()
        .unwrap()
}

async fn start(server: Server, client: Recorder) -> (Peer, tokio::task::JoinHandle<()>) {
    let (client_side, server_side) = memory_pair(64);
    let serving = tokio::spawn(async move { server.serve(server_side).await.unwrap() });
    let (peer, _driver) = Engine::builder().spawn(client_side, client);
    (peer, serving)
}

async fn call(peer: &Peer, method: &str, params: Value) -> Result<Value, CallError> {
    peer.call(method, &params, RequestOptions::new()).await
}

async fn initialize(peer: &Peer, capabilities: Value) {
    initialize_as(peer, "2025-11-25", capabilities).await;
}

/// Opens the session under `version` (which the server must accept).
async fn initialize_as(peer: &Peer, version: &str, capabilities: Value) {
    let init = call(
        peer,
        "initialize",
        json!({"protocolVersion": version, "capabilities": capabilities,
               "clientInfo": {"name": "t", "version": "1"}}),
    )
    .await
    .unwrap();
    assert_eq!(init["protocolVersion"], version);
    peer.notify_with("notifications/initialized", &json!({}))
        .await
        .unwrap();
}

fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "new", "version": "1"}
    })
}

#[tokio::test]
async fn a_stateless_envelope_is_served_beside_the_session() {
    let (peer, serving) = start(server(ServerOptions::default()), Recorder::default()).await;
    // Before any initialize: served statelessly, from the request's own `_meta`.
    let discover = call(&peer, "server/discover", json!({"_meta": stateless_meta()}))
        .await
        .unwrap();
    assert_eq!(discover["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(discover["resultType"], "complete");
    let tools = call(&peer, "tools/list", json!({"_meta": stateless_meta()}))
        .await
        .unwrap();
    assert_eq!(tools["resultType"], "complete");
    // The request declared no sampling: the tool that samples fails with -32021.
    let err = call(
        &peer,
        "tools/call",
        json!({"name": "sample", "arguments": {"prompt": "x"}, "_meta": stateless_meta()}),
    )
    .await
    .unwrap_err();
    match err {
        CallError::Rpc(e) => assert_eq!(e.code, -32021),
        other => panic!("{other}"),
    }
    // Session traffic still needs initialize, and then both eras go on side by side.
    let err = call(&peer, "tools/list", json!({})).await.unwrap_err();
    assert!(matches!(err, CallError::Rpc(e) if e.code == mcp_server::NOT_INITIALIZED));
    initialize(&peer, json!({})).await;
    let session = call(&peer, "tools/list", json!({})).await.unwrap();
    assert!(session["tools"].as_array().unwrap().len() >= 2);
    assert!(
        session.get("resultType").is_none(),
        "session results stay 2025-shaped"
    );
    let stateless = call(&peer, "tools/list", json!({"_meta": stateless_meta()}))
        .await
        .unwrap();
    assert_eq!(stateless["resultType"], "complete");
    assert_eq!(stateless["tools"], session["tools"]);
    peer.close();
    serving.await.unwrap();
}

#[tokio::test]
async fn a_cancelled_call_cancels_the_request_it_sent_to_the_client() {
    let client = Recorder::default();
    let (peer, serving) = start(server(ServerOptions::default()), client.clone()).await;
    initialize(&peer, json!({"sampling": {}})).await;
    let running = tokio::spawn({
        let peer = peer.clone();
        async move {
            call(
                &peer,
                "tools/call",
                json!({"name": "sample", "arguments": {"prompt": "x"}}),
            )
            .await
        }
    });
    client.wait_for("sampling/createMessage").await;
    // Dropping the call sends `notifications/cancelled` for it; the server cancels the
    // handler, which drops its sampling request and tells the client so.
    running.abort();
    client.wait_for("cancelled sampling/createMessage").await;
    peer.close();
    serving.await.unwrap();
}

#[tokio::test]
async fn a_client_that_does_not_answer_in_time_fails_the_call() {
    let mut options = ServerOptions::default();
    options.client_request_timeout = Duration::from_millis(200);
    let client = Recorder::default();
    let (peer, serving) = start(server(options), client.clone()).await;
    initialize(&peer, json!({"sampling": {}})).await;
    let result = call(
        &peer,
        "tools/call",
        json!({"name": "sample", "arguments": {"prompt": "x"}}),
    )
    .await
    .unwrap();
    assert_eq!(result["isError"], true);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("did not answer"),
        "{result}"
    );
    client.wait_for("cancelled sampling/createMessage").await;
    peer.close();
    serving.await.unwrap();
}

#[tokio::test]
async fn requests_to_the_client_carry_the_projected_params() {
    let client = Recorder {
        answer: Some(json!({"role": "assistant", "model": "m-1",
                            "content": {"type": "text", "text": "ok"}})),
        ..Recorder::default()
    };
    let (peer, serving) = start(server(ServerOptions::default()), client.clone()).await;
    initialize(&peer, json!({"sampling": {}})).await;
    let result = call(
        &peer,
        "tools/call",
        json!({"name": "sample", "arguments": {"prompt": "hello"}}),
    )
    .await
    .unwrap();
    assert_eq!(result["content"][0]["text"], "m-1");
    let params = client.wait_for("sampling/createMessage").await;
    assert_eq!(
        params,
        json!({"maxTokens": 10, "messages": [{"role": "user",
               "content": {"type": "text", "text": "hello"}}]})
    );
    peer.close();
    serving.await.unwrap();
}

/// Tools are found in the snapshot the server was built with until the registry first
/// changes, then in the current one: a tool added later is found, a removed one is gone.
#[tokio::test]
async fn tools_added_and_removed_after_build_are_found_and_gone() {
    let srv = server(ServerOptions::default());
    let (peer, serving) = start(srv.clone(), Recorder::default()).await;
    initialize(&peer, json!({})).await;
    let unknown = |e: CallError| matches!(e, CallError::Rpc(e) if e.code == -32602);
    assert!(unknown(
        call(&peer, "tools/call", json!({"name": "late"}))
            .await
            .unwrap_err()
    ));
    call(&peer, "tools/call", json!({"name": "add_tool"}))
        .await
        .unwrap();
    let late = call(&peer, "tools/call", json!({"name": "late"}))
        .await
        .unwrap();
    assert_eq!(late["content"][0]["text"], "late");
    assert!(srv.remove_tool("add_tool"));
    let gone = call(&peer, "tools/call", json!({"name": "add_tool"}))
        .await
        .unwrap_err();
    assert!(unknown(gone));
    // The added tool is still found after a later change.
    let late = call(&peer, "tools/call", json!({"name": "late"}))
        .await
        .unwrap();
    assert_eq!(late["content"][0]["text"], "late");
    peer.close();
    serving.await.unwrap();
}

/// The lists (`tools/list` here, `resources/list` too) are encoded once per registry snapshot
/// and revision: each revision gets its own projection whoever listed first, and a change to
/// the registry is listed at once.
#[tokio::test]
async fn lists_are_made_per_revision_and_after_every_change() {
    let srv = server(ServerOptions::default());
    let (new, serving_new) = start(srv.clone(), Recorder::default()).await;
    initialize(&new, json!({})).await;
    let (old, serving_old) = start(srv.clone(), Recorder::default()).await;
    initialize_as(&old, "2024-11-05", json!({})).await;
    let list = |peer: Peer| async move {
        let listed = call(&peer, "tools/list", json!({})).await.unwrap();
        listed["tools"].as_array().unwrap().clone()
    };
    let titled = |tools: &[Value]| {
        tools
            .iter()
            .find(|t| t["name"] == "add_tool")
            .map(|t| t.get("title").cloned())
    };
    let names = |tools: &[Value]| {
        let mut names: Vec<String> = tools
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        names
    };
    for _ in 0..2 {
        let listed = list(new.clone()).await;
        assert_eq!(titled(&listed), Some(Some(json!("Add a tool"))));
        let listed = list(old.clone()).await;
        assert_eq!(titled(&listed), Some(None), "2024-11-05 has no tool titles");
        assert_eq!(names(&listed), ["add_tool", "sample"]);
    }
    call(&new, "tools/call", json!({"name": "add_tool"}))
        .await
        .unwrap();
    assert_eq!(
        names(&list(old.clone()).await),
        ["add_tool", "late", "sample"]
    );
    assert!(srv.remove_tool("late"));
    assert_eq!(names(&list(new.clone()).await), ["add_tool", "sample"]);
    assert_eq!(names(&list(old.clone()).await), ["add_tool", "sample"]);
    // The other lists alike (resources here; templates and prompts take the same path).
    let resources = |peer: Peer| async move {
        let listed = call(&peer, "resources/list", json!({})).await.unwrap();
        listed["resources"].as_array().unwrap().clone()
    };
    for _ in 0..2 {
        assert_eq!(resources(new.clone()).await[0]["title"], "R");
        assert!(resources(old.clone()).await[0].get("title").is_none());
    }
    srv.add_resource(Resource::new("test://s", "s"), |_cx| async { "s" })
        .unwrap();
    assert_eq!(resources(old.clone()).await.len(), 2);
    new.close();
    old.close();
    serving_new.await.unwrap();
    serving_old.await.unwrap();
}

#[tokio::test]
async fn list_changes_and_resource_updates_reach_the_session() {
    let client = Recorder::default();
    let srv = server(ServerOptions::default());
    let (peer, serving) = start(srv.clone(), client.clone()).await;
    // Nothing is announced before `initialize`.
    srv.notify_resource_updated("test://r");
    initialize(&peer, json!({})).await;
    call(&peer, "tools/call", json!({"name": "add_tool"}))
        .await
        .unwrap();
    client.wait_for("notifications/tools/list_changed").await;
    // Updates only for subscribed URIs.
    srv.notify_resource_updated("test://r");
    call(&peer, "resources/subscribe", json!({"uri": "test://r"}))
        .await
        .unwrap();
    srv.notify_resource_updated("test://r");
    let updated = client.wait_for("notifications/resources/updated").await;
    assert_eq!(updated, json!({"uri": "test://r"}));
    call(&peer, "ping", json!({})).await.unwrap();
    let updates = client
        .methods()
        .iter()
        .filter(|m| *m == "notifications/resources/updated")
        .count();
    assert_eq!(updates, 1, "{:?}", client.methods());
    peer.close();
    serving.await.unwrap();
}
