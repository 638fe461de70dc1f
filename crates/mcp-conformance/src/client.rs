//! The client side of the conformance run: what `everything-client` does for each client
//! scenario, on the HTTP client transport, the JSON-RPC engine and `mcp-auth`.

use std::sync::Arc;
use std::time::Duration;

use mcp_jsonrpc::{
    CallError, Engine, ErrorObject, Handler, Peer, Request, RequestContext, RequestOptions,
};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

/// The client name sent in `clientInfo`.
pub const CLIENT_NAME: &str = "mcp-conformance-everything-client";

/// The first revision without the `initialize` handshake.
pub const STATELESS_REVISION: &str = "2026-07-28";

/// The redirect URI registered with authorization servers (never followed).
pub const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// The Client ID Metadata Document URL the `auth/basic-cimd` scenario expects.
pub const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// Most multi round-trip rounds one call may take.
pub const MAX_ROUNDS: usize = 8;

/// What the conformance harness hands the client.
#[derive(Debug, Clone)]
pub struct Run {
    /// `MCP_CONFORMANCE_SCENARIO`.
    pub scenario: String,
    /// `MCP_CONFORMANCE_PROTOCOL_VERSION` (default 2025-11-25).
    pub protocol_version: String,
    /// `MCP_CONFORMANCE_CONTEXT`, parsed (an empty object when absent).
    pub context: Value,
    /// The server URL (the last argument).
    pub url: String,
}

/// A failure of the run, with the step that failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The environment or arguments are unusable.
    #[error("bad input: {0}")]
    Input(String),
    /// The transport could not be set up.
    #[error("transport: {0}")]
    Transport(String),
    /// OAuth set-up failed.
    #[error("auth: {0}")]
    Auth(#[from] mcp_auth::AuthError),
    /// A request failed.
    #[error("{method}: {source}")]
    Call {
        /// The method called.
        method: String,
        /// Why it failed.
        source: CallError,
    },
    /// The server kept asking for input past [`MAX_ROUNDS`].
    #[error("{0}: too many input rounds")]
    Rounds(String),
}

impl Run {
    /// Reads the run from the process environment and arguments.
    ///
    /// # Errors
    ///
    /// [`RunError::Input`] when the URL is missing or the context is not a JSON object.
    pub fn from_env() -> Result<Run, RunError> {
        let url = std::env::args()
            .skip(1)
            .last()
            .ok_or_else(|| RunError::Input("usage: everything-client <server-url>".into()))?;
        let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
        let protocol_version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "2025-11-25".to_owned());
        let context = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
            Ok(text) if !text.trim().is_empty() => serde_json::from_str(&text)
                .map_err(|e| RunError::Input(format!("MCP_CONFORMANCE_CONTEXT: {e}")))?,
            _ => json!({}),
        };
        if !context.is_object() {
            return Err(RunError::Input(
                "MCP_CONFORMANCE_CONTEXT is not an object".into(),
            ));
        }
        Ok(Run {
            scenario,
            protocol_version,
            context,
            url,
        })
    }

    fn stateless(&self) -> bool {
        self.protocol_version.as_str() >= STATELESS_REVISION
    }

    fn context_str(&self, key: &str) -> Option<&str> {
        self.context.get(key).and_then(Value::as_str)
    }
}

/// The capabilities this client declares.
fn capabilities() -> Value {
    json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}})
}

/// Answers the server's requests: elicitation (accepting with every schema default filled in),
/// sampling (a fixed text) and roots.
#[derive(Debug, Default, Clone, Copy)]
pub struct Answers;

impl Answers {
    /// The result for one server-to-client request (also used for `inputRequests`).
    ///
    /// # Errors
    ///
    /// `-32601` for a method this client does not serve.
    pub fn answer(method: &str, params: &Value) -> Result<Value, ErrorObject> {
        match method {
            "elicitation/create" => Ok(elicit(params)),
            "sampling/createMessage" => Ok(json!({
                "role": "assistant",
                "content": {"type": "text", "text": "This is a test response from the client."},
                "model": "test-model",
                "stopReason": "endTurn"
            })),
            "roots/list" => {
                Ok(json!({"roots": [{"uri": "file:///test/root", "name": "Test Root"}]}))
            }
            "ping" => Ok(json!({})),
            other => Err(ErrorObject::method_not_found(other)),
        }
    }
}

/// Accepts an elicitation with a value for every property that has a `default`, plus a plain
/// value for required properties without one.
fn elicit(params: &Value) -> Value {
    let schema = params.get("requestedSchema").cloned().unwrap_or_default();
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = Map::new();
    if let Some(Value::Object(props)) = schema.get("properties") {
        for (name, prop) in props {
            if let Some(default) = prop.get("default") {
                content.insert(name.clone(), default.clone());
                continue;
            }
            if !required.contains(&name.as_str()) {
                continue;
            }
            let value = match prop.get("type").and_then(Value::as_str) {
                Some("integer" | "number") => json!(1),
                Some("boolean") => json!(true),
                _ => match prop.get("enum").and_then(|e| e.get(0)) {
                    Some(first) => first.clone(),
                    None if name == "email" => json!("test@example.com"),
                    None => json!("test"),
                },
            };
            content.insert(name.clone(), value);
        }
    }
    json!({"action": "accept", "content": content})
}

impl Handler for Answers {
    async fn handle_request(
        &self,
        request: Request,
        _cx: RequestContext,
    ) -> Result<Box<RawValue>, ErrorObject> {
        let params: Value = match &request.params {
            Some(raw) => serde_json::from_str(raw.get()).map_err(ErrorObject::invalid_params)?,
            None => json!({}),
        };
        let result = Self::answer(&request.method, &params)?;
        mcp_jsonrpc::to_raw(&result).map_err(ErrorObject::internal_error)
    }
}

/// A connected session: the engine's peer and what the lifecycle negotiated.
struct Session {
    peer: Peer,
    handle: mcp_transport_http::client::HttpClientHandle,
    run: Run,
    version: String,
}

impl Session {
    /// Adds the stateless `_meta` to `params` when speaking 2026-07-28.
    fn params(&self, params: Value) -> Value {
        if !self.run.stateless() {
            return params;
        }
        let mut params = match params {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let meta = params.entry("_meta").or_insert_with(|| json!({}));
        if let Value::Object(meta) = meta {
            meta.insert(
                "io.modelcontextprotocol/protocolVersion".into(),
                json!(self.version),
            );
            meta.insert(
                "io.modelcontextprotocol/clientCapabilities".into(),
                capabilities(),
            );
            meta.insert(
                "io.modelcontextprotocol/clientInfo".into(),
                json!({"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")}),
            );
        }
        Value::Object(params)
    }

    async fn call_once(&self, method: &str, params: Value) -> Result<Value, RunError> {
        let params = self.params(params);
        self.peer
            .call::<Value, Value>(method, &params, RequestOptions::new())
            .await
            .map_err(|source| RunError::Call {
                method: method.to_owned(),
                source,
            })
    }

    /// Calls `method`, retrying once with a supported version on `-32022` (stateless), and
    /// resolving `input_required` rounds with [`Answers`].
    async fn call(&mut self, method: &str, params: Value) -> Result<Value, RunError> {
        let mut params = params;
        for _ in 0..MAX_ROUNDS {
            let result = match self.call_once(method, params.clone()).await {
                Err(RunError::Call {
                    source: CallError::Rpc(e),
                    ..
                }) if e.code == -32022 && self.run.stateless() => {
                    let supported = e
                        .data
                        .as_deref()
                        .and_then(|d| serde_json::from_str::<Value>(d.get()).ok())
                        .and_then(|d| d.get("supported").cloned())
                        .and_then(|s| s.as_array().cloned())
                        .unwrap_or_default();
                    let next = supported
                        .iter()
                        .filter_map(Value::as_str)
                        .find(|v| *v != self.version)
                        .or_else(|| supported.iter().filter_map(Value::as_str).next())
                        .map(str::to_owned);
                    match next {
                        Some(v) => {
                            self.version = v;
                            continue;
                        }
                        None => {
                            return Err(RunError::Call {
                                method: method.to_owned(),
                                source: CallError::Rpc(e),
                            });
                        }
                    }
                }
                other => other?,
            };
            if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
                return Ok(result);
            }
            let mut responses = Map::new();
            if let Some(Value::Object(requests)) = result.get("inputRequests") {
                for (key, request) in requests {
                    let method = request.get("method").and_then(Value::as_str).unwrap_or("");
                    let params = request.get("params").cloned().unwrap_or_default();
                    match Answers::answer(method, &params) {
                        Ok(answer) => {
                            responses.insert(key.clone(), answer);
                        }
                        Err(e) => {
                            tracing::warn!(key, method, error = %e.message, "cannot answer an input request")
                        }
                    }
                }
            }
            let mut next = match params {
                Value::Object(map) => map,
                _ => Map::new(),
            };
            next.remove("requestState");
            next.insert("inputResponses".into(), Value::Object(responses));
            if let Some(state) = result.get("requestState") {
                next.insert("requestState".into(), state.clone());
            }
            params = Value::Object(next);
        }
        Err(RunError::Rounds(method.to_owned()))
    }

    /// `tools/list`, all pages (at most 100).
    async fn list_tools(&mut self) -> Result<Vec<Value>, RunError> {
        let mut tools = Vec::new();
        let mut cursor: Option<Value> = None;
        for _ in 0..100 {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = self.call("tools/list", params).await?;
            if let Some(Value::Array(items)) = page.get("tools") {
                tools.extend(items.iter().cloned());
            }
            cursor = page.get("nextCursor").filter(|c| !c.is_null()).cloned();
            if cursor.is_none() {
                break;
            }
        }
        Ok(tools)
    }

    async fn call_tool(&mut self, name: &str, arguments: Value) -> Result<Value, RunError> {
        self.call("tools/call", json!({"name": name, "arguments": arguments}))
            .await
    }
}

fn auth_provider(run: &Run) -> Result<Arc<dyn mcp_auth::AuthProvider>, RunError> {
    use mcp_auth::{
        ClientCredentials, ClientMetadata, HeadlessRedirect, HyperHttpClient, OAuthClient,
        PrivateKeyJwt, SigningAlgorithm,
    };
    let http: Arc<dyn mcp_auth::HttpClient> =
        Arc::new(HyperHttpClient::new().map_err(|e| RunError::Transport(e.to_string()))?);
    let mut builder = OAuthClient::builder(ClientMetadata::new(CLIENT_NAME, REDIRECT_URI))
        .http_client(Arc::clone(&http))
        .authorization_handler(HeadlessRedirect::new(Arc::clone(&http)))
        .client_metadata_document(CLIENT_METADATA_URL)
        .protocol_revision(run.protocol_version.clone())
        .allow_insecure_http(true);
    let id = run.context_str("client_id");
    let secret = run.context_str("client_secret");
    match run.scenario.as_str() {
        "auth/client-credentials-basic" => {
            let (Some(id), Some(secret)) = (id, secret) else {
                return Err(RunError::Input("client_id and client_secret needed".into()));
            };
            builder = builder.client_credentials_grant(ClientCredentials::with_secret(id, secret));
        }
        "auth/client-credentials-jwt" => {
            let (Some(id), Some(pem)) = (id, run.context_str("private_key_pem")) else {
                return Err(RunError::Input(
                    "client_id and private_key_pem needed".into(),
                ));
            };
            let alg = run
                .context_str("signing_algorithm")
                .and_then(SigningAlgorithm::from_name)
                .unwrap_or(SigningAlgorithm::Es256);
            let key = PrivateKeyJwt::from_pem(pem.as_bytes(), alg)?;
            builder =
                builder.client_credentials_grant(ClientCredentials::with_private_key(id, key));
        }
        _ => {
            if let (Some(id), Some(secret)) = (id, secret) {
                builder = builder.pre_registered(ClientCredentials::with_secret(id, secret));
            }
        }
    }
    Ok(Arc::new(builder.build()?))
}

async fn connect(run: &Run) -> Result<Session, RunError> {
    use mcp_transport_http::client::StreamableHttpClient;
    // `sse-retry` counts any GET as the reconnection it times, so no standalone GET stream
    // there; elsewhere it carries server requests unrelated to any POST (the TS-SDK mocks send
    // `elicitation/create` that way).
    let standalone = run.scenario != "sse-retry";
    let mut builder = StreamableHttpClient::builder(run.url.clone()).standalone_stream(standalone);
    if run.scenario.starts_with("auth/") {
        builder = builder.auth(auth_provider(run)?);
    }
    let client = builder
        .build()
        .map_err(|e| RunError::Transport(e.to_string()))?;
    let (connection, handle) = client
        .connect()
        .await
        .map_err(|e| RunError::Transport(e.to_string()))?;
    let (peer, _driver) = Engine::builder()
        .request_timeout(Some(Duration::from_secs(20)))
        .spawn(connection, Answers);
    let mut session = Session {
        peer,
        handle,
        run: run.clone(),
        version: run.protocol_version.clone(),
    };
    if !run.stateless() {
        let result = session
            .call_once(
                "initialize",
                json!({
                    "protocolVersion": run.protocol_version,
                    "capabilities": capabilities(),
                    "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")}
                }),
            )
            .await?;
        if let Some(v) = result.get("protocolVersion").and_then(Value::as_str) {
            session.version = v.to_owned();
        }
        session
            .peer
            .notify_with("notifications/initialized", &json!({}))
            .await
            .map_err(|source| RunError::Call {
                method: "notifications/initialized".into(),
                source,
            })?;
    }
    Ok(session)
}

/// The arguments to call a listed tool with: the scenario context's `toolCalls` entry, the
/// numbers `add_numbers` expects, or none.
fn arguments_for(run: &Run, tool: &str) -> Value {
    if let Some(Value::Array(calls)) = run.context.get("toolCalls") {
        if let Some(call) = calls
            .iter()
            .find(|c| c.get("name").and_then(Value::as_str) == Some(tool))
        {
            return call.get("arguments").cloned().unwrap_or_else(|| json!({}));
        }
    }
    match tool {
        "add_numbers" => json!({"a": 5, "b": 3}),
        "valid_tool" => json!({"region": "us-west1"}),
        _ => json!({}),
    }
}

/// Runs the scenario.
///
/// # Errors
///
/// The first step that failed; negative scenarios (the client must give up) end here too.
pub async fn run(run: Run) -> Result<(), RunError> {
    let mut session = connect(&run).await?;
    let scenario = run.scenario.as_str();
    match scenario {
        "initialize" => {}
        "tools_call" => {
            session.list_tools().await?;
            session
                .call_tool("add_numbers", json!({"a": 5, "b": 3}))
                .await?;
        }
        "elicitation-sep1034-client-defaults" => {
            session.list_tools().await?;
            session
                .call_tool("test_client_elicitation_defaults", json!({}))
                .await?;
        }
        "sse-retry" => {
            session.list_tools().await?;
            session.call_tool("test_reconnection", json!({})).await?;
        }
        "json-schema-ref-no-deref" => {
            session.list_tools().await?;
        }
        "json-schema-2020-12-preservation" => {
            let tools = session.list_tools().await?;
            let schema = tools
                .iter()
                .find(|t| t.get("name").and_then(Value::as_str) == Some("json_schema_2020_12_tool"))
                .and_then(|t| t.get("inputSchema").cloned())
                .unwrap_or_default();
            session
                .call_tool("json_schema_echo", json!({"schema": schema}))
                .await?;
        }
        "http-standard-headers" => {
            call_every_tool(&mut session).await?;
            let resources = session.call("resources/list", json!({})).await?;
            for uri in names(&resources, "resources", "uri") {
                session.call("resources/read", json!({"uri": uri})).await?;
            }
            let prompts = session.call("prompts/list", json!({})).await?;
            for name in names(&prompts, "prompts", "name") {
                session
                    .call("prompts/get", json!({"name": name, "arguments": {}}))
                    .await?;
            }
        }
        "auth/scope-step-up" | "auth/scope-retry-limit" => {
            let tools = session.list_tools().await?;
            if let Some(name) = tools
                .first()
                .and_then(|t| t.get("name"))
                .and_then(Value::as_str)
            {
                let args = arguments_for(&run, name);
                session.call_tool(name, args).await?;
            }
        }
        "auth/authorization-server-migration" => {
            session.list_tools().await?;
            session.list_tools().await?;
        }
        _ => {
            call_every_tool(&mut session).await?;
        }
    }
    session.handle.close().await;
    session.peer.close();
    Ok(())
}

fn names(list: &Value, key: &str, field: &str) -> Vec<String> {
    list.get(key)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.get(field).and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Lists the tools and calls each once (a failing call is logged, not fatal).
async fn call_every_tool(session: &mut Session) -> Result<(), RunError> {
    let tools = session.list_tools().await?;
    for tool in tools {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        let args = arguments_for(&session.run, name);
        if let Err(e) = session.call_tool(name, args).await {
            tracing::warn!(tool = name, error = %e, "tool call failed");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elicitation_is_accepted_with_every_default() {
        let params = json!({
            "message": "m",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "default": "John Doe"},
                    "age": {"type": "integer", "default": 30},
                    "status": {"type": "string", "enum": ["a", "b"], "default": "b"},
                    "email": {"type": "string"},
                    "note": {"type": "string"}
                },
                "required": ["email"]
            }
        });
        let answer = Answers::answer("elicitation/create", &params).unwrap();
        assert_eq!(answer["action"], "accept");
        assert_eq!(answer["content"]["name"], "John Doe");
        assert_eq!(answer["content"]["age"], 30);
        assert_eq!(answer["content"]["status"], "b");
        assert_eq!(answer["content"]["email"], "test@example.com");
        assert!(answer["content"].get("note").is_none());
    }

    #[test]
    fn unknown_server_requests_are_refused() {
        let err = Answers::answer("tools/list", &json!({}));
        assert_eq!(err.map_err(|e| e.code), Err(-32601));
    }

    #[test]
    fn context_arguments_win_over_defaults() {
        let run = Run {
            scenario: "http-custom-headers".into(),
            protocol_version: "2026-07-28".into(),
            context: json!({"toolCalls": [{"name": "add_numbers", "arguments": {"a": 1, "b": 2}}]}),
            url: "http://localhost/mcp".into(),
        };
        assert_eq!(arguments_for(&run, "add_numbers"), json!({"a": 1, "b": 2}));
        assert_eq!(arguments_for(&run, "other"), json!({}));
        assert!(run.stateless());
    }
}
