//! The session against scripted in-memory servers: negotiation outcomes, checks made before
//! anything is sent, pagination limits, elicitation answer validation and form field order.

use crate::support::recording_form_fields;

use std::sync::{Arc, Mutex};

use mcp_client::{CallError, Client, ConnectError, ElicitationAnswer, ElicitationRequest};
use mcp_jsonrpc::{
    Engine, ErrorObject, Handler, Notification, NotificationContext, Peer, Request, RequestContext,
    RequestOptions, memory_pair,
};
use mcp_types::{Implementation, ProtocolVersion};
use serde_json::value::RawValue;
use serde_json::{Value, json};

/// A server that answers `initialize` with a fixed version and capabilities, records every
/// method it receives, and pages `tools/list` forever when asked to.
#[derive(Clone)]
struct Scripted {
    version: &'static str,
    capabilities: Value,
    endless_pages: bool,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Scripted {
    fn new(version: &'static str, capabilities: Value) -> Self {
        Self {
            version,
            capabilities,
            endless_pages: false,
            seen: Arc::new(Mutex::new(Vec::new())),
        }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

impl Handler for Scripted {
    async fn handle_request(
        &self,
        request: Request,
        _cx: RequestContext,
    ) -> Result<mcp_jsonrpc::RawJson, ErrorObject> {
        self.seen.lock().unwrap().push(request.method.clone());
        let result = match request.method.as_str() {
            "initialize" => json!({
                "protocolVersion": self.version,
                "capabilities": self.capabilities,
                "serverInfo": {"name": "scripted", "version": "1"},
                "instructions": "be nice"
            }),
            "tools/list" if self.endless_pages => {
                let cursor: Value = request
                    .params_as::<Value>()?
                    .get("cursor")
                    .cloned()
                    .unwrap_or(json!("0"));
                let next = cursor.as_str().unwrap_or("0").parse::<u64>().unwrap_or(0) + 1;
                json!({"tools": [{"name": format!("t{next}"), "inputSchema": {"type": "object"}}],
                       "nextCursor": next.to_string()})
            }
            "tools/list" => json!({"tools": [{
                "name": "typed",
                "inputSchema": {"type": "object"},
                "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
            }]}),
            "tools/call" => json!({"content": [], "structuredContent": {"n": "not a number"}}),
            "ping" => json!({}),
            other => return Err(ErrorObject::method_not_found(other)),
        };
        Ok(mcp_jsonrpc::RawJson::serialize(&result).unwrap())
    }

    async fn handle_notification(&self, notification: Notification, _cx: NotificationContext) {
        self.seen.lock().unwrap().push(notification.method);
    }
}

fn start(server: Scripted) -> (mcp_jsonrpc::Connection, Peer) {
    let (client_side, server_side) = memory_pair(32);
    let (peer, _task) = Engine::builder().spawn(server_side, server);
    (client_side, peer)
}

fn client() -> Client {
    Client::builder(Implementation::new("test", "1")).build()
}

#[tokio::test]
async fn accepts_an_older_revision_and_sends_initialized() {
    let server = Scripted::new("2024-11-05", json!({"tools": {}}));
    let (connection, _peer) = start(server.clone());
    let session = client().connect(connection).await.unwrap();
    assert_eq!(session.protocol_version(), ProtocolVersion::V2024_11_05);
    assert_eq!(session.instructions(), Some("be nice"));
    session.ping().await.unwrap();
    // The default range includes 2026-07-28: `server/discover` first, `-32601`, fallback.
    assert_eq!(
        server.seen(),
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "ping"
        ]
    );
}

#[tokio::test]
async fn refuses_an_unknown_revision_and_closes() {
    let server = Scripted::new("1999-01-01", json!({}));
    let (connection, peer) = start(server.clone());
    let error = client().connect(connection).await.unwrap_err();
    assert!(
        matches!(&error, ConnectError::UnsupportedVersion { answered, .. } if answered == "1999-01-01"),
        "{error}"
    );
    assert!(error.to_string().contains("2024-11-05"));
    peer.closed().await;
    assert_eq!(
        server.seen(),
        ["server/discover", "initialize"],
        "no initialized after a refusal"
    );
}

#[tokio::test]
async fn refuses_a_newer_revision_than_asked() {
    let server = Scripted::new("2025-11-25", json!({}));
    let (connection, _peer) = start(server);
    let client = Client::builder(Implementation::new("test", "1"))
        .protocol_version(ProtocolVersion::V2025_03_26)
        .build();
    assert!(matches!(
        client.connect(connection).await,
        Err(ConnectError::UnsupportedVersion { .. })
    ));
}

#[tokio::test]
async fn undeclared_capabilities_and_missing_methods_never_reach_the_wire() {
    let server = Scripted::new("2024-11-05", json!({"tools": {}}));
    let (connection, _peer) = start(server.clone());
    // A session-era range: no `server/discover`.
    let session = Client::builder(Implementation::new("test", "1"))
        .protocol_version(ProtocolVersion::V2025_11_25)
        .build()
        .connect(connection)
        .await
        .unwrap();
    assert!(matches!(
        session.list_prompts(None).await,
        Err(CallError::MissingCapability {
            capability: "prompts",
            ..
        })
    ));
    assert!(matches!(
        session.read_resource("x://y").await,
        Err(CallError::MissingCapability { .. })
    ));
    assert!(matches!(
        session.subscribe("x://y").await,
        Err(CallError::MissingCapability {
            capability: "resources.subscribe",
            ..
        })
    ));
    assert!(matches!(
        session.request_raw("tasks/list", None).await,
        Err(CallError::NotInRevision { .. })
    ));
    // A round trip, so everything sent before it has been seen.
    session.ping().await.unwrap();
    assert_eq!(
        server.seen(),
        ["initialize", "notifications/initialized", "ping"]
    );
}

#[tokio::test]
async fn structured_content_is_checked_against_the_output_schema() {
    let server = Scripted::new("2025-06-18", json!({"tools": {}}));
    let (connection, _peer) = start(server);
    let session = client().connect(connection).await.unwrap();
    // Not listed yet: nothing to check against.
    session.call_tool("typed", json!({})).await.unwrap();
    session.list_all_tools().await.unwrap();
    let error = session.call_tool("typed", json!({})).await.unwrap_err();
    assert!(
        matches!(&error, CallError::InvalidStructuredContent { tool, .. } if tool == "typed"),
        "{error}"
    );
    assert!(matches!(
        session
            .call_tool("typed", json!(["not", "an", "object"]))
            .await,
        Err(CallError::Decode(_))
    ));
}

#[tokio::test]
async fn endless_pagination_stops_at_the_limit() {
    let mut server = Scripted::new("2025-06-18", json!({"tools": {}}));
    server.endless_pages = true;
    let (connection, _peer) = start(server);
    let client = Client::builder(Implementation::new("test", "1"))
        .max_pages(5)
        .build();
    let session = client.connect(connection).await.unwrap();
    let error = session.list_all_tools().await.unwrap_err();
    assert!(
        matches!(&error, CallError::Pagination(reason) if reason.contains("5 pages")),
        "{error}"
    );
}

#[tokio::test]
async fn elicitation_answers_are_validated_before_they_are_sent() {
    let server = Scripted::new("2025-06-18", json!({}));
    let (connection, peer) = start(server);
    let client = Client::builder(Implementation::new("test", "1"))
        .on_elicit(|request: ElicitationRequest| async move {
            let ElicitationRequest::Form { message, .. } = request else {
                return Ok(ElicitationAnswer::Decline);
            };
            let answer = match message.as_str() {
                "good" => json!({"name": "Ada"}),
                _ => json!({"name": 7}),
            };
            Ok(ElicitationAnswer::Accept(
                answer.as_object().unwrap().clone(),
            ))
        })
        .build();
    assert_eq!(
        serde_json::to_value(client.capabilities()).unwrap(),
        json!({"elicitation": {"form": {}}})
    );
    let _session = client.connect(connection).await.unwrap();
    let schema = json!({"type": "object",
        "properties": {"name": {"type": "string"}, "color": {"type": "string", "enum": ["red", "blue"], "default": "blue"}},
        "required": ["name"]});
    let good: Value = peer
        .call(
            "elicitation/create",
            &json!({"message": "good", "requestedSchema": schema}),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        good,
        json!({"action": "accept", "content": {"name": "Ada", "color": "blue"}})
    );
    let bad = peer
        .call::<_, Value>(
            "elicitation/create",
            &json!({"message": "bad", "requestedSchema": schema}),
            RequestOptions::new(),
        )
        .await
        .unwrap_err();
    assert!(bad.to_string().contains("`name` must be a string"), "{bad}");
    // URL mode was not enabled.
    let url = peer
        .call::<_, Value>(
            "elicitation/create",
            &json!({"mode": "url", "message": "go", "url": "https://example.com", "elicitationId": "1"}),
            RequestOptions::new(),
        )
        .await
        .unwrap_err();
    assert!(url.to_string().contains("URL mode"), "{url}");
    // Sampling was not offered.
    let sampling = peer
        .call::<_, Value>(
            "sampling/createMessage",
            &json!({"messages": [], "maxTokens": 1}),
            RequestOptions::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(sampling, mcp_jsonrpc::CallError::Rpc(e) if e.code == -32601));
}

#[tokio::test]
async fn elicitation_fields_come_in_the_order_the_server_wrote_them() {
    let (connection, peer) = start(Scripted::new("2025-11-25", json!({})));
    let (client, asked) = recording_form_fields(
        Client::builder(Implementation::new("test", "1")),
        ElicitationAnswer::Decline,
    );
    let client = client.build();
    let _session = client.connect(connection).await.unwrap();
    // Raw text, so the properties travel in this order (a `Value` would sort them).
    let params = RawValue::from_string(
        r#"{"mode": "form", "message": "in order", "requestedSchema": {"type": "object",
            "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"},
                           "mid": {"type": "boolean"}},
            "required": ["zeta"]}}"#
            .to_owned(),
    )
    .unwrap();
    let answer: Value = peer
        .call("elicitation/create", &params, RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(answer, json!({"action": "decline"}));
    assert_eq!(*asked.lock().unwrap(), ["zeta", "alpha", "mid"]);
}
