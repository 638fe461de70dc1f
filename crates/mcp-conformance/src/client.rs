//! The client side of the conformance run: what `everything-client` does for each client
//! scenario, with `mcp-client` over the HTTP client transport (and `mcp-auth` for the
//! `auth/*` scenarios).
//!
//! Everything protocol-level is the SDK's: negotiation (`initialize` up to 2025-11-25,
//! `server/discover` and per-request `_meta` on 2026-07-28, the retry after `-32022`),
//! `input_required` rounds, dropping tools with invalid `x-mcp-header` annotations, and the
//! HTTP headers. This module only says which calls each scenario makes and how the user
//! answers the server's questions.

use std::sync::Arc;
use std::time::Duration;

use mcp_client::{
    CallError, Client, ClientSession, ConnectError, ElicitationAnswer, ElicitationRequest,
    HandlerError, Roots,
};
use mcp_transport_http::client::{HttpClientHandle, StreamableHttpClient};
use mcp_types::{
    CreateMessageRequestParams, CreateMessageResult, Era, Implementation, ProtocolVersion, Root,
};
use serde_json::{Map, Value, json};

/// The client name sent in `clientInfo`.
pub const CLIENT_NAME: &str = "mcp-conformance-everything-client";

/// The redirect URI registered with authorization servers (never followed).
pub const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// The Client ID Metadata Document URL the `auth/basic-cimd` scenario expects.
pub const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// Most multi round-trip rounds one call may take.
pub const MAX_ROUNDS: usize = 8;

/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

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
    /// Connecting (negotiation) failed.
    #[error("connect: {0}")]
    Connect(#[from] ConnectError),
    /// A skill request failed, or a skill's content was refused.
    #[error("skills: {0}")]
    Skill(#[from] mcp_client::skills::SkillError),
    /// A request failed.
    #[error("{method}: {source}")]
    Call {
        /// The method called.
        method: String,
        /// Why it failed.
        source: CallError,
    },
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

    /// The revision to speak: the one asked for, or the newest known for an unknown date.
    /// The Skills extension (SEP-2640) is specified against 2026-07-28: extensions are
    /// declared in capabilities only from that revision on, so its scenarios speak it whatever
    /// the harness's default.
    fn version(&self) -> ProtocolVersion {
        if self.scenario.starts_with("sep-2640-") {
            return ProtocolVersion::V2026_07_28;
        }
        self.protocol_version
            .parse()
            .unwrap_or(ProtocolVersion::LATEST)
    }

    fn context_str(&self, key: &str) -> Option<&str> {
        self.context.get(key).and_then(Value::as_str)
    }
}

/// What the simulated user types into a form: nothing for fields with a `default` (the client
/// fills those in from the schema, SEP-1034), and a plain value for each required field
/// without one.
pub fn form_answer(requested_schema: &Value) -> Map<String, Value> {
    let required: Vec<&str> = requested_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = Map::new();
    if let Some(Value::Object(props)) = requested_schema.get("properties") {
        for (name, prop) in props {
            if prop.get("default").is_some() || !required.contains(&name.as_str()) {
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
    content
}

/// The sampling answer: a fixed text.
fn sample() -> Result<CreateMessageResult, HandlerError> {
    serde_json::from_value(json!({
        "role": "assistant",
        "content": {"type": "text", "text": "This is a test response from the client."},
        "model": "test-model",
        "stopReason": "endTurn"
    }))
    .map_err(|e| HandlerError::internal(e.to_string()))
}

/// The client: accepts every elicitation (see [`form_answer`]), samples a fixed text, exposes
/// one root.
pub fn client(run: &Run) -> Client {
    let version = run.version();
    let root: Option<Root> =
        serde_json::from_value(json!({"uri": "file:///test/root", "name": "Test Root"})).ok();
    let mut builder = Client::builder(Implementation::new(CLIENT_NAME, env!("CARGO_PKG_VERSION")))
        .on_elicit(|request: ElicitationRequest| async move {
            Ok(match request {
                ElicitationRequest::Form {
                    requested_schema, ..
                } => ElicitationAnswer::Accept(form_answer(&requested_schema)),
                _ => ElicitationAnswer::Accept(Map::new()),
            })
        })
        .on_sample(|_request: CreateMessageRequestParams| async move { sample() })
        .roots(Roots::new(root.into_iter().collect()))
        .protocol_version(version)
        .request_timeout(Some(REQUEST_TIMEOUT))
        .initialize_timeout(REQUEST_TIMEOUT)
        .max_input_rounds(MAX_ROUNDS);
    if version.era() == Era::Stateless {
        // The scenario says which wire to speak: no fallback to `initialize`.
        builder = builder.min_protocol_version(version);
    }
    builder.build()
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
        "auth/wif-jwt-bearer" => {
            let (Some(id), Some(jwt)) = (id, run.context_str("valid_jwt")) else {
                return Err(RunError::Input("client_id and valid_jwt needed".into()));
            };
            let jwt = jwt.to_owned();
            builder =
                builder.jwt_bearer_grant(ClientCredentials::public(id), move || Ok(jwt.clone()));
        }
        "auth/enterprise-managed-authorization" => {
            let (Some(id), Some(secret), Some(endpoint), Some(idp_id), Some(id_token)) = (
                id,
                secret,
                run.context_str("idp_token_endpoint"),
                run.context_str("idp_client_id"),
                run.context_str("idp_id_token"),
            ) else {
                return Err(RunError::Input(
                    "client_id, client_secret, idp_token_endpoint, idp_client_id and idp_id_token needed"
                        .into(),
                ));
            };
            let idp =
                mcp_auth::EnterpriseIdp::new(endpoint, ClientCredentials::public(idp_id), id_token);
            builder = builder.enterprise_grant(ClientCredentials::with_secret(id, secret), idp);
        }
        _ => {
            if let (Some(id), Some(secret)) = (id, secret) {
                builder = builder.pre_registered(ClientCredentials::with_secret(id, secret));
            }
        }
    }
    Ok(Arc::new(builder.build()?))
}

/// Opens the HTTP transport and negotiates a session over it.
async fn connect(run: &Run) -> Result<(ClientSession, HttpClientHandle), RunError> {
    // `sse-retry` counts any GET as the reconnection it times, so no standalone GET stream
    // there; elsewhere it carries server requests unrelated to any POST (the TS-SDK mocks send
    // `elicitation/create` that way).
    let standalone = run.scenario != "sse-retry";
    let mut builder = StreamableHttpClient::builder(run.url.clone()).standalone_stream(standalone);
    if run.scenario.starts_with("auth/") {
        builder = builder.auth(auth_provider(run)?);
    }
    let transport = builder
        .build()
        .map_err(|e| RunError::Transport(e.to_string()))?;
    let (connection, handle) = transport
        .connect()
        .await
        .map_err(|e| RunError::Transport(e.to_string()))?;
    let session = client(run).connect(connection).await?;
    tracing::info!(
        version = %session.protocol_version(),
        server = %session.server_info().name,
        "connected"
    );
    Ok((session, handle))
}

fn failed(method: &str) -> impl FnOnce(CallError) -> RunError + '_ {
    move |source| RunError::Call {
        method: method.to_owned(),
        source,
    }
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
    let (session, handle) = connect(&run).await?;
    let outcome = scenario(&run, &session).await;
    session.close().await;
    handle.close().await;
    outcome
}

async fn scenario(run: &Run, session: &ClientSession) -> Result<(), RunError> {
    match run.scenario.as_str() {
        "initialize" => Ok(()),
        "tools_call" => {
            session
                .list_all_tools()
                .await
                .map_err(failed("tools/list"))?;
            call(session, "add_numbers", json!({"a": 5, "b": 3})).await
        }
        "elicitation-sep1034-client-defaults" => {
            session
                .list_all_tools()
                .await
                .map_err(failed("tools/list"))?;
            call(session, "test_client_elicitation_defaults", json!({})).await
        }
        "sse-retry" => {
            session
                .list_all_tools()
                .await
                .map_err(failed("tools/list"))?;
            call(session, "test_reconnection", json!({})).await
        }
        "json-schema-ref-no-deref" => {
            session
                .list_all_tools()
                .await
                .map_err(failed("tools/list"))?;
            Ok(())
        }
        "json-schema-2020-12-preservation" => {
            // The schema exactly as the server sent it, not as the client's model re-renders it.
            let page = session
                .request_raw("tools/list", Some(json!({})))
                .await
                .map_err(failed("tools/list"))?;
            let schema = page
                .get("tools")
                .and_then(Value::as_array)
                .and_then(|tools| {
                    tools.iter().find(|t| {
                        t.get("name").and_then(Value::as_str) == Some("json_schema_2020_12_tool")
                    })
                })
                .and_then(|t| t.get("inputSchema").cloned())
                .unwrap_or_default();
            call(session, "json_schema_echo", json!({"schema": schema})).await
        }
        "http-standard-headers" => {
            call_every_tool(run, session).await?;
            let resources = session
                .list_all_resources()
                .await
                .map_err(failed("resources/list"))?;
            for resource in resources {
                session
                    .read_resource(resource.uri)
                    .await
                    .map_err(failed("resources/read"))?;
            }
            let prompts = session
                .list_all_prompts()
                .await
                .map_err(failed("prompts/list"))?;
            for prompt in prompts {
                session
                    .get_prompt(prompt.name, Vec::<(String, String)>::new())
                    .await
                    .map_err(failed("prompts/get"))?;
            }
            Ok(())
        }
        "auth/scope-step-up" | "auth/scope-retry-limit" => {
            let tools = session
                .list_all_tools()
                .await
                .map_err(failed("tools/list"))?;
            if let Some(tool) = tools.first() {
                let args = arguments_for(run, &tool.name);
                call(session, &tool.name, args).await?;
            }
            Ok(())
        }
        "auth/authorization-server-migration" => {
            for _ in 0..2 {
                session
                    .list_all_tools()
                    .await
                    .map_err(failed("tools/list"))?;
            }
            Ok(())
        }
        "sep-2640-client-no-prefetch" => {
            // Listing builds the registry; nothing is read until a skill is loaded.
            let listed = session.skills()?.list_all().await?;
            tracing::info!(skills = listed.len(), "listed skills, fetched no file");
            Ok(())
        }
        s if s.starts_with("sep-2640-client-") => load_skills(session).await,
        _ => call_every_tool(run, session).await,
    }
}

/// Lists the skills, loads each (its `SKILL.md`, verified against the entry) and then reads
/// its other files, each verified. The first refusal ends the run: nothing of a skill whose
/// `SKILL.md` failed verification is read.
async fn load_skills(session: &ClientSession) -> Result<(), RunError> {
    let skills = session.skills()?;
    for entry in skills.list_all().await? {
        let loaded = skills.load(&entry).await?;
        tracing::info!(skill = %entry.uri, bytes = loaded.bytes.len(), "loaded");
        if let mcp_types::skills::SkillResources::Files(files) = &entry.resources {
            for file in files.iter().filter(|f| f.uri != entry.uri) {
                skills.read_file(&entry, &file.uri).await?;
            }
        }
    }
    Ok(())
}

async fn call(session: &ClientSession, tool: &str, arguments: Value) -> Result<(), RunError> {
    session
        .call_tool(tool, arguments)
        .await
        .map_err(failed("tools/call"))?;
    Ok(())
}

/// Lists the tools and calls each once (a failing call is logged, not fatal).
async fn call_every_tool(run: &Run, session: &ClientSession) -> Result<(), RunError> {
    let tools = session
        .list_all_tools()
        .await
        .map_err(failed("tools/list"))?;
    for tool in tools {
        let args = arguments_for(run, &tool.name);
        if let Err(e) = call(session, &tool.name, args).await {
            tracing::warn!(tool = %tool.name, error = %e, "tool call failed");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_get_values_for_required_fields_and_leave_defaults_to_the_client() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "email": {"type": "string"},
                "count": {"type": "integer"},
                "kind": {"type": "string", "enum": ["a", "b"]},
                "note": {"type": "string"}
            },
            "required": ["email", "count", "kind"]
        });
        let content = form_answer(&schema);
        assert_eq!(content["email"], "test@example.com");
        assert_eq!(content["count"], 1);
        assert_eq!(content["kind"], "a");
        assert!(
            content.get("name").is_none(),
            "defaults are the client's job"
        );
        assert!(content.get("note").is_none(), "optional fields stay empty");
    }

    #[test]
    fn the_wire_follows_the_requested_revision() {
        let mut run = Run {
            scenario: "tools_call".into(),
            protocol_version: "2026-07-28".into(),
            context: json!({}),
            url: "http://localhost/mcp".into(),
        };
        let stateless = client(&run);
        assert_eq!(stateless.info().name, CLIENT_NAME);
        assert_eq!(run.version(), ProtocolVersion::V2026_07_28);
        run.protocol_version = "2025-11-25".into();
        assert_eq!(run.version(), ProtocolVersion::V2025_11_25);
        let caps = serde_json::to_value(client(&run).capabilities()).unwrap();
        assert!(caps.get("sampling").is_some());
        assert!(caps.get("elicitation").is_some());
        assert_eq!(caps["roots"]["listChanged"], true);
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
        assert_eq!(
            arguments_for(&run, "valid_tool"),
            json!({"region": "us-west1"})
        );
    }
}
