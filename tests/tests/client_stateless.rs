//! The client's 2026-07-28 lifecycle against scripted in-memory servers: `server/discover` and
//! the fallback to `initialize`, the retry after `-32022`, per-request `_meta`, the
//! `input_required` driver, tools with invalid `x-mcp-header` annotations, the response cache and
//! `subscriptions/listen`.

use crate::client_support;
use crate::mcp_client_support::recording_form_fields;

use client_support::tool_names;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::{
    CallError, Client, ClientSession, ConnectError, ElicitationAnswer, ElicitationRequest, Outcome,
    Roots, ServerNotification,
};
use mcp_jsonrpc::{
    Engine, ErrorObject, Handler, Notification, NotificationContext, Request, RequestContext,
    memory_pair,
};
use mcp_tests::content::model_reply;
use mcp_types::{
    CallToolRequestParams, Era, Implementation, LoggingLevel, ProtocolVersion, SubscriptionFilter,
};
use serde_json::{Value, json};

type Reply = Pin<Box<dyn Future<Output = Result<Value, ErrorObject>> + Send>>;
type Script = Arc<dyn Fn(Seen, RequestContext) -> Reply + Send + Sync>;

/// One message the server received.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    id: Option<Value>,
    params: Value,
}

/// A server answering each request with a script, recording everything it receives.
#[derive(Clone)]
struct Scripted {
    script: Script,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Scripted {
    fn new<F, Fut>(script: F) -> Self
    where
        F: Fn(Seen, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ErrorObject>> + Send + 'static,
    {
        Self {
            script: Arc::new(move |seen, cx| Box::pin(script(seen, cx))),
            seen: Arc::new(Mutex::new(Vec::new())),
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn methods(&self) -> Vec<String> {
        self.seen().into_iter().map(|s| s.method).collect()
    }

    fn requests(&self, method: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.method == method)
            .collect()
    }
}

impl Handler for Scripted {
    async fn handle_request(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> Result<mcp_jsonrpc::RawJson, ErrorObject> {
        let seen = Seen {
            method: request.method.clone(),
            id: serde_json::to_value(&request.id).ok(),
            params: request.params_as::<Value>().unwrap_or(Value::Null),
        };
        self.seen.lock().unwrap().push(seen.clone());
        let result = (self.script)(seen, cx).await?;
        Ok(mcp_jsonrpc::RawJson::serialize(&result).unwrap())
    }

    async fn handle_notification(&self, notification: Notification, _cx: NotificationContext) {
        self.seen.lock().unwrap().push(Seen {
            method: notification.method.clone(),
            id: None,
            params: notification.params_as::<Value>().unwrap_or(Value::Null),
        });
    }
}

fn discover_result() -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {"listChanged": true}, "prompts": {}, "logging": {}},
        "ttlMs": 60000,
        "cacheScope": "private",
        "instructions": "stateless",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "2"}}
    })
}

async fn connect(server: &Scripted, client: Client) -> Result<ClientSession, ConnectError> {
    let (client_side, server_side) = memory_pair(32);
    let (_peer, _task) = Engine::builder().spawn(server_side, server.clone());
    client.connect(client_side).await
}

fn builder() -> mcp_client::ClientBuilder {
    Client::builder(Implementation::new("stateless-test", "1.0.0"))
        .on_elicit(|request: ElicitationRequest| async move {
            let ElicitationRequest::Form { message, .. } = request else {
                return Ok(ElicitationAnswer::Cancel);
            };
            let answer = json!({"name": format!("Ada ({message})")});
            Ok(ElicitationAnswer::Accept(
                answer.as_object().unwrap().clone(),
            ))
        })
        .on_sample(
            |_request: mcp_types::CreateMessageRequestParams| async move {
                Ok(model_reply("m", "four"))
            },
        )
        .roots(Roots::new(vec![
            serde_json::from_value(json!({"uri": "file:///work"})).unwrap(),
        ]))
}

fn tool_result(text: &str) -> Value {
    json!({"resultType": "complete", "content": [{"type": "text", "text": text}]})
}

fn elicit_request(message: &str) -> Value {
    json!({"method": "elicitation/create", "params": {
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    }})
}

/// Adds one to its counter when dropped.
struct CountOnDrop(Arc<AtomicUsize>);

impl Drop for CountOnDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A stateless server: discover, tools, an MRTR tool that needs two rounds of input, one
/// that never stops asking, prompts, and a listen stream.
fn stateless_server() -> Scripted {
    stateless_server_noting(Arc::new(AtomicUsize::new(0)))
}

/// [`stateless_server`], counting the listen requests that ended by cancellation.
fn stateless_server_noting(listens_cancelled: Arc<AtomicUsize>) -> Scripted {
    Scripted::new(move |seen, cx| {
        let listens_cancelled = listens_cancelled.clone();
        async move {
            match seen.method.as_str() {
                "server/discover" => Ok(discover_result()),
                "tools/list" => Ok(json!({
                    "resultType": "complete", "ttlMs": 60000, "cacheScope": "public",
                    "tools": [
                        {"name": "ok", "inputSchema": {"type": "object", "properties": {
                            "region": {"type": "string", "x-mcp-header": "Region"}}}},
                        {"name": "bad_number", "inputSchema": {"type": "object", "properties": {
                            "score": {"type": "number", "x-mcp-header": "Score"}}}},
                        {"name": "bad_duplicate", "inputSchema": {"type": "object", "properties": {
                            "a": {"type": "string", "x-mcp-header": "MyField"},
                            "b": {"type": "string", "x-mcp-header": "myfield"}}}},
                        {"name": "plain", "inputSchema": {"type": "object"}}
                    ]
                })),
                "tools/call" => {
                    let name = seen.params["name"].as_str().unwrap_or_default().to_owned();
                    let responses = &seen.params["inputResponses"];
                    let state = seen.params.get("requestState").cloned();
                    match name.as_str() {
                        "two_rounds" if responses.is_null() => Ok(json!({
                            "resultType": "input_required",
                            "inputRequests": {"who": elicit_request("first")},
                            "requestState": "state-1"
                        })),
                        "two_rounds" if state == Some(json!("state-1")) => Ok(json!({
                            "resultType": "input_required",
                            "inputRequests": {
                                "sum": {"method": "sampling/createMessage", "params": {
                                    "messages": [{"role": "user", "content": {"type": "text", "text": "2+2?"}}],
                                    "maxTokens": 10}},
                                "where": {"method": "roots/list"}
                            }
                        })),
                        "two_rounds" if state.is_none() => {
                            let sum = responses["sum"]["content"]["text"].clone();
                            let root = responses["where"]["roots"][0]["uri"].clone();
                            Ok(tool_result(&format!("{sum} {root}")))
                        }
                        "endless" => Ok(json!({
                            "resultType": "input_required",
                            "inputRequests": {"r": {"method": "roots/list"}}
                        })),
                        "no_type" => Ok(json!({"content": [{"type": "text", "text": "plain"}]})),
                        _ => Err(ErrorObject::invalid_params(format!(
                            "unexpected call {}",
                            seen.params
                        ))),
                    }
                }
                "prompts/get" if seen.params["inputResponses"].is_null() => Ok(json!({
                    "resultType": "input_required",
                    "inputRequests": {"who": elicit_request("prompt")}
                })),
                "prompts/get" => Ok(json!({
                    "resultType": "complete",
                    "messages": [{"role": "user", "content": {"type": "text",
                        "text": seen.params["inputResponses"]["who"]["content"]["name"]}}]
                })),
                "subscriptions/listen" => {
                    let id = seen.id.clone().unwrap_or(Value::Null);
                    let tag = json!({"io.modelcontextprotocol/subscriptionId": id});
                    let peer = cx.peer().clone();
                    peer.notify_with(
                        "notifications/subscriptions/acknowledged",
                        &json!({"_meta": tag, "notifications": {"toolsListChanged": true}}),
                    )
                    .await
                    .map_err(ErrorObject::internal_error)?;
                    peer.notify_with("notifications/tools/list_changed", &json!({"_meta": tag}))
                        .await
                        .map_err(ErrorObject::internal_error)?;
                    // A notification of another subscription must not reach this one.
                    peer.notify_with(
                        "notifications/prompts/list_changed",
                        &json!({"_meta": {"io.modelcontextprotocol/subscriptionId": "other"}}),
                    )
                    .await
                    .map_err(ErrorObject::internal_error)?;
                    // The engine drops a cancelled handler: count the drop.
                    let _count = CountOnDrop(listens_cancelled);
                    cx.cancellation().cancelled().await;
                    Ok(json!({"resultType": "complete", "_meta": tag}))
                }
                other => Err(ErrorObject::method_not_found(other)),
            }
        }
    })
}

#[tokio::test]
async fn discover_makes_a_stateless_session_whose_requests_carry_meta() {
    let server = stateless_server();
    let session = connect(&server, builder().build()).await.unwrap();
    assert_eq!(session.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(session.era(), Era::Stateless);
    assert_eq!(session.server_info().name, "scripted");
    assert_eq!(session.instructions(), Some("stateless"));
    assert!(session.discover_result().is_some());
    // No `ping` in 2026-07-28: liveness is checked with `server/discover`.
    session.ping().await.unwrap();
    session
        .set_logging_level(LoggingLevel::Debug)
        .await
        .unwrap();
    session.list_tools(None).await.unwrap();
    // The connect's discover, the ping's, then the list.
    assert_eq!(
        server.methods(),
        ["server/discover", "server/discover", "tools/list"]
    );
    for request in server.seen() {
        let meta = &request.params["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"],
            "stateless-test"
        );
        let caps = &meta["io.modelcontextprotocol/clientCapabilities"];
        assert!(caps["sampling"].is_object() && caps["elicitation"].is_object());
        assert!(caps["roots"].is_object());
    }
    assert_eq!(
        server.requests("tools/list")[0].params["_meta"]["io.modelcontextprotocol/logLevel"],
        "debug"
    );
}

#[tokio::test]
async fn a_refused_version_is_retried_with_one_the_server_lists() {
    let refusals = Arc::new(AtomicUsize::new(0));
    let counter = refusals.clone();
    let server = Scripted::new(move |seen, _cx| {
        let counter = counter.clone();
        async move {
            match seen.method.as_str() {
                "server/discover" if counter.fetch_add(1, Ordering::SeqCst) == 0 => {
                    Err(ErrorObject::new(-32022, "Unsupported protocol version")
                        .with_data(&json!({"supported": ["2026-07-28"], "requested": "2026-07-28"}))
                        .unwrap())
                }
                "server/discover" => Ok(discover_result()),
                other => Err(ErrorObject::method_not_found(other)),
            }
        }
    });
    let session = connect(&server, builder().build()).await.unwrap();
    assert_eq!(session.era(), Era::Stateless);
    let discovers = server.requests("server/discover");
    assert_eq!(discovers.len(), 2);
    assert_ne!(discovers[0].id, discovers[1].id);

    // A server listing only versions this client does not speak is refused clearly.
    let server = Scripted::new(|_seen, _cx| async move {
        Err(ErrorObject::new(-32022, "Unsupported protocol version")
            .with_data(&json!({"supported": ["2030-01-01"]}))
            .unwrap())
    });
    let error = connect(&server, builder().build()).await.unwrap_err();
    assert!(
        matches!(&error, ConnectError::UnsupportedVersion { answered, .. } if answered == "2030-01-01"),
        "{error}"
    );
}

/// A server from before the stateless era: `initialize` only.
fn session_era_server(version: &'static str) -> Scripted {
    Scripted::new(move |seen, _cx| async move {
        match seen.method.as_str() {
            "initialize" => Ok(json!({
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "legacy", "version": "1"}
            })),
            "tools/list" => {
                Ok(json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}))
            }
            "ping" => Ok(json!({})),
            other => Err(ErrorObject::method_not_found(other)),
        }
    })
}

#[tokio::test]
async fn discover_falls_back_to_initialize_on_a_session_era_server() {
    let server = session_era_server("2025-11-25");
    let session = connect(&server, builder().build()).await.unwrap();
    assert_eq!(session.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(session.era(), Era::Session);
    assert!(session.discover_result().is_none());
    session.ping().await.unwrap();
    assert_eq!(
        server.methods(),
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "ping"
        ]
    );
    let init = &server.requests("initialize")[0].params;
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert!(
        init.get("_meta").is_none(),
        "no stateless _meta on initialize"
    );

    // A client limited to the stateless era does not fall back.
    let server = session_era_server("2025-11-25");
    let strict = builder()
        .min_protocol_version(ProtocolVersion::V2026_07_28)
        .build();
    assert!(matches!(
        connect(&server, strict).await,
        Err(ConnectError::UnsupportedVersion { .. })
    ));
    assert_eq!(server.methods(), ["server/discover"]);
}

#[tokio::test]
async fn a_silent_server_is_treated_as_session_era_after_the_discover_timeout() {
    let server = Scripted::new(|seen, cx| async move {
        match seen.method.as_str() {
            "server/discover" => {
                cx.cancellation().cancelled().await;
                Err(ErrorObject::internal_error("cancelled"))
            }
            "initialize" => Ok(json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "serverInfo": {"name": "slow", "version": "1"}
            })),
            other => Err(ErrorObject::method_not_found(other)),
        }
    });
    let client = builder()
        .discover_timeout(Duration::from_millis(200))
        .build();
    let session = connect(&server, client).await.unwrap();
    assert_eq!(session.protocol_version(), ProtocolVersion::V2025_06_18);
}

#[tokio::test]
async fn a_modern_refusal_does_not_fall_back() {
    let server =
        Scripted::new(
            |_seen, _cx| async move { Err(ErrorObject::new(-32021, "missing capability")) },
        );
    let error = connect(&server, builder().build()).await.unwrap_err();
    assert!(
        matches!(error, ConnectError::Discover(CallError::Rpc(ref e)) if e.code == -32021),
        "{error}"
    );
    assert_eq!(server.methods(), ["server/discover"]);
}

#[tokio::test]
async fn input_required_twice_then_a_result() {
    let server = stateless_server();
    let session = connect(&server, builder().build()).await.unwrap();
    let result = session
        .call_tool("two_rounds", json!({"x": 1}))
        .await
        .unwrap();
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"].clone();
    assert_eq!(text, "\"four\" \"file:///work\"");
    let calls = server.requests("tools/call");
    assert_eq!(calls.len(), 3);
    // Every round is a new request with the original arguments.
    let ids: std::collections::HashSet<String> = calls
        .iter()
        .map(|c| c.id.clone().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 3);
    for call in &calls {
        assert_eq!(call.params["arguments"], json!({"x": 1}));
        assert_eq!(
            call.params["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
    }
    assert!(calls[0].params.get("inputResponses").is_none());
    assert!(calls[0].params.get("requestState").is_none());
    assert_eq!(calls[1].params["requestState"], "state-1");
    assert_eq!(calls[1].params["inputResponses"]["who"]["action"], "accept");
    assert_eq!(
        calls[1].params["inputResponses"]["who"]["content"]["name"],
        "Ada (first)"
    );
    assert!(
        calls[2].params.get("requestState").is_none(),
        "no state in the second answer, none echoed"
    );
    assert_eq!(
        calls[2].params["inputResponses"]["where"]["roots"][0]["uri"],
        "file:///work"
    );
    assert!(
        calls[2].params["inputResponses"].get("who").is_none(),
        "only this round's answers"
    );

    // The same driver serves prompts/get.
    let prompt = session.get_prompt("p", [("a", "b")]).await.unwrap();
    assert_eq!(
        serde_json::to_value(&prompt.messages).unwrap()[0]["content"]["text"],
        "Ada (prompt)"
    );
    // A result without resultType is complete.
    assert!(session.call_tool("no_type", json!({})).await.is_ok());
}

#[tokio::test]
async fn rounds_are_bounded_and_once_leaves_the_rounds_to_the_caller() {
    let server = stateless_server();
    let session = connect(&server, builder().max_input_rounds(2).build())
        .await
        .unwrap();
    let error = session.call_tool("endless", json!({})).await.unwrap_err();
    assert!(
        matches!(
            error,
            CallError::RoundsExceeded {
                method: "tools/call",
                rounds: 2
            }
        ),
        "{error}"
    );
    assert_eq!(server.requests("tools/call").len(), 3);

    let mut params: CallToolRequestParams =
        serde_json::from_value(json!({"name": "two_rounds"})).unwrap();
    let Outcome::InputRequired(input) = session.call_tool_once(params.clone()).await.unwrap()
    else {
        panic!("expected input_required");
    };
    assert_eq!(input.request_state.as_deref(), Some("state-1"));
    let requests = input.input_requests.clone().unwrap();
    params.input_responses = Some(session.answer_input_requests(&requests).await.unwrap());
    params.request_state = input.request_state;
    let Outcome::InputRequired(_) = session.call_tool_once(params).await.unwrap() else {
        panic!("the second round asks again");
    };

    // A client without the handler a request needs cannot answer it and does not retry.
    let bare = connect(
        &server,
        Client::builder(Implementation::new("bare", "1")).build(),
    )
    .await
    .unwrap();
    let before = server.requests("tools/call").len();
    let error = bare.call_tool("two_rounds", json!({})).await.unwrap_err();
    assert!(
        matches!(&error, CallError::InputRequest { key, method, .. } if key == "who" && method == "elicitation/create"),
        "{error}"
    );
    assert_eq!(server.requests("tools/call").len(), before + 1);
}

#[tokio::test]
async fn tools_with_invalid_x_mcp_header_annotations_are_dropped() {
    let server = stateless_server();
    let session = connect(&server, builder().build()).await.unwrap();
    let names = tool_names(&session).await;
    assert_eq!(names, ["ok", "plain"]);
    let page = session.list_tools(None).await.unwrap();
    assert_eq!(page.tools.len(), 2);
}

#[tokio::test]
async fn the_cache_answers_lists_until_a_change_is_announced() {
    let server = stateless_server();
    let session = connect(&server, builder().response_cache(16).build())
        .await
        .unwrap();
    session.list_all_tools().await.unwrap();
    session.list_all_tools().await.unwrap();
    session.discover().await.unwrap();
    assert_eq!(
        server.requests("tools/list").len(),
        1,
        "the second list came from the cache"
    );
    assert_eq!(
        server.requests("server/discover").len(),
        1,
        "so did discover"
    );

    // The listen stream's tools/list_changed drops the cached list.
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        ..Default::default()
    };
    let mut changes = session.listen(filter).await.unwrap();
    assert!(matches!(
        changes.recv().await,
        Some(ServerNotification::ToolListChanged)
    ));
    session.list_all_tools().await.unwrap();
    assert_eq!(server.requests("tools/list").len(), 2);
    session.clear_cache();
    session.list_all_tools().await.unwrap();
    assert_eq!(server.requests("tools/list").len(), 3);
}

#[tokio::test]
async fn listen_delivers_its_own_notifications_and_cancels_when_dropped() {
    let cancelled = Arc::new(AtomicUsize::new(0));
    let server = stateless_server_noting(cancelled.clone());
    let session = connect(&server, builder().build()).await.unwrap();
    let mut general = session.notifications();
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        prompts_list_changed: Some(true),
        ..Default::default()
    };
    let mut subscription = session.listen(filter).await.unwrap();
    assert_eq!(subscription.acknowledged().tools_list_changed, Some(true));
    assert_eq!(subscription.acknowledged().prompts_list_changed, None);
    let listen = &server.requests("subscriptions/listen")[0];
    assert_eq!(listen.params["notifications"]["toolsListChanged"], true);
    assert_eq!(subscription.id(), listen.id.clone().unwrap().to_string());
    assert!(matches!(
        subscription.recv().await,
        Some(ServerNotification::ToolListChanged)
    ));
    // The other subscription's notification went to the general stream only.
    assert!(matches!(
        general.recv().await,
        Some(ServerNotification::ToolListChanged)
    ));
    assert!(matches!(
        general.recv().await,
        Some(ServerNotification::PromptListChanged)
    ));
    assert!(
        tokio::time::timeout(Duration::from_millis(50), subscription.recv())
            .await
            .is_err(),
        "nothing else for this subscription"
    );
    drop(subscription);
    // Dropping it cancels the listen request (the server's engine cancels the handler).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while cancelled.load(Ordering::SeqCst) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the listen request was not cancelled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // On a session-era server there is no listen.
    let legacy = connect(&session_era_server("2025-11-25"), builder().build())
        .await
        .unwrap();
    assert!(matches!(
        legacy.listen(SubscriptionFilter::default()).await,
        Err(CallError::NotInRevision { .. })
    ));
}

/// The elicitation form of the `ordered_form` tests, its fields deliberately out of
/// alphabetical order.
const ORDERED_FORM: &str = r#"{"type": "object", "properties": {
    "zeta": {"type": "string"},
    "alpha": {"type": "integer"},
    "mid": {"type": "boolean"}
}, "required": ["zeta"]}"#;

/// A stateless server whose one tool asks for [`ORDERED_FORM`], written as raw JSON text so
/// the order of its properties reaches the client as it is here.
struct OrderedFormServer;

impl Handler for OrderedFormServer {
    async fn handle_request(
        &self,
        request: Request,
        _cx: RequestContext,
    ) -> Result<mcp_jsonrpc::RawJson, ErrorObject> {
        let params: Value = request.params_as()?;
        let text = match request.method.as_str() {
            "server/discover" => discover_result().to_string(),
            "tools/call" if params.get("inputResponses").is_none() => format!(
                r#"{{"resultType": "input_required", "inputRequests": {{"form": {{
                    "method": "elicitation/create",
                    "params": {{"mode": "form", "message": "in order", "requestedSchema": {ORDERED_FORM}}}
                }}}}}}"#
            ),
            "tools/call" => tool_result("thanks").to_string(),
            other => return Err(ErrorObject::method_not_found(other)),
        };
        mcp_jsonrpc::RawJson::from_string(text).map_err(ErrorObject::internal_error)
    }

    async fn handle_notification(&self, _notification: Notification, _cx: NotificationContext) {}
}

#[tokio::test]
async fn input_required_forms_keep_the_order_of_their_fields() {
    let (client, asked) = recording_form_fields(
        Client::builder(Implementation::new("stateless-test", "1.0.0")),
        ElicitationAnswer::Accept(json!({"zeta": "z"}).as_object().unwrap().clone()),
    );
    let client = client.build();
    let (client_side, server_side) = memory_pair(32);
    let (_peer, _task) = Engine::builder().spawn(server_side, OrderedFormServer);
    let session = client.connect(client_side).await.unwrap();
    assert_eq!(session.protocol_version(), ProtocolVersion::V2026_07_28);
    session.call_tool("form", json!({})).await.unwrap();
    assert_eq!(*asked.lock().unwrap(), ["zeta", "alpha", "mid"]);
}
