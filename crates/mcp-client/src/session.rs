//! A live session with one server: negotiation and the typed calls.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_core::Stream;
use futures_util::{TryStreamExt, stream};
use mcp_jsonrpc::Connection;
use mcp_types::{
    CallToolRequestParams, CallToolResult, CompleteRequestParams, CompleteResult, Era,
    GetPromptRequestParams, GetPromptResult, Implementation, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel, Project,
    Prompt, ProtocolVersion, ReadResourceRequestParams, ReadResourceResult, Resource,
    ResourceTemplate, ServerCapabilities, Tool,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use crate::client::Client;
use crate::error::{CallError, ConnectError};
use crate::incoming::IncomingHandler;
use crate::notify::{Notifications, ServerNotification};
use crate::rpc::{Progress, ProgressCallback, Rpc};

/// Most tool output schemas a session keeps compiled for `structuredContent` validation.
const MAX_CACHED_SCHEMAS: usize = 4096;

/// Per-call options, carried by a [`ClientSession`] value (see [`ClientSession::with_timeout`]).
#[derive(Clone, Default)]
pub(crate) struct CallOptions {
    /// `None`: the client's default; `Some(None)`: no timeout.
    timeout: Option<Option<Duration>>,
    progress: Option<ProgressCallback>,
}

/// A session with one server. Cheap to clone: clones share the connection.
///
/// Every call checks that the negotiated revision has the method and that the server declared
/// the capability it needs before anything is sent. Dropping a call's future cancels the request
/// (`notifications/cancelled` is sent).
#[derive(Clone)]
pub struct ClientSession {
    inner: Arc<SessionInner>,
    options: CallOptions,
}

impl std::fmt::Debug for ClientSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSession")
            .field("server", &self.inner.init.server_info)
            .field("protocol_version", &self.inner.version)
            .finish_non_exhaustive()
    }
}

struct SessionInner {
    rpc: Rpc,
    client: Client,
    version: ProtocolVersion,
    init: InitializeResult,
    server_caps: Value,
    notifications: broadcast::Sender<ServerNotification>,
    output_schemas: Mutex<HashMap<String, Arc<OutputSchema>>>,
}

struct OutputSchema {
    validator: Option<jsonschema::Validator>,
}

/// A page of a paginated list.
trait Page: DeserializeOwned {
    type Item;
    fn into_parts(self) -> (Vec<Self::Item>, Option<String>);
}

macro_rules! page {
    ($result:ty, $item:ty, $field:ident) => {
        impl Page for $result {
            type Item = $item;
            fn into_parts(self) -> (Vec<$item>, Option<String>) {
                (self.$field, self.next_cursor)
            }
        }
    };
}
page!(ListToolsResult, Tool, tools);
page!(ListResourcesResult, Resource, resources);
page!(
    ListResourceTemplatesResult,
    ResourceTemplate,
    resource_templates
);
page!(ListPromptsResult, Prompt, prompts);

/// Builds a model value from its JSON shape.
fn model<T: DeserializeOwned>(value: Value) -> Result<T, CallError> {
    serde_json::from_value(value).map_err(CallError::Decode)
}

fn cursor_params(cursor: Option<String>) -> Value {
    match cursor {
        Some(cursor) => json!({ "cursor": cursor }),
        None => json!({}),
    }
}

impl ClientSession {
    pub(crate) async fn start(
        client: Client,
        connection: Connection,
    ) -> Result<ClientSession, ConnectError> {
        let (notifications, _) = broadcast::channel(client.shared.notification_buffer);
        let handler = IncomingHandler::new(client.clone(), notifications.clone());
        let rpc = Rpc::start(
            connection,
            handler.clone(),
            client.shared.max_concurrent_requests,
        );
        match negotiate(&client, &rpc).await {
            Ok((version, init)) => {
                handler.set_version(version);
                let server_caps =
                    serde_json::to_value(&init.capabilities).unwrap_or_else(|_| json!({}));
                let inner = Arc::new(SessionInner {
                    rpc,
                    client: client.clone(),
                    version,
                    init,
                    server_caps,
                    notifications,
                    output_schemas: Mutex::new(HashMap::new()),
                });
                if let Some(roots) = &client.shared.roots {
                    spawn_roots_watcher(Arc::downgrade(&inner), roots.subscribe());
                }
                Ok(ClientSession {
                    inner,
                    options: CallOptions::default(),
                })
            }
            Err(error) => {
                rpc.close().await;
                Err(error)
            }
        }
    }

    /// The revision negotiated with the server.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.inner.version
    }

    /// The server's implementation info.
    pub fn server_info(&self) -> &Implementation {
        &self.inner.init.server_info
    }

    /// The capabilities the server declared.
    pub fn server_capabilities(&self) -> &ServerCapabilities {
        &self.inner.init.capabilities
    }

    /// The server's usage instructions, if it gave any.
    pub fn instructions(&self) -> Option<&str> {
        self.inner.init.instructions.as_deref()
    }

    /// The full `initialize` result.
    pub fn initialize_result(&self) -> &InitializeResult {
        &self.inner.init
    }

    /// A bounded receiver of the server's notifications from now on (see [`Notifications`]).
    pub fn notifications(&self) -> Notifications {
        Notifications::new(self.inner.notifications.subscribe())
    }

    /// Whether the connection has closed.
    pub fn is_closed(&self) -> bool {
        self.inner.rpc.is_closed()
    }

    /// Waits until the connection closes and returns why.
    pub async fn closed(&self) -> String {
        self.inner.rpc.closed().await
    }

    /// Closes the connection; pending calls fail with [`CallError::Closed`].
    pub async fn close(&self) {
        self.inner.rpc.close().await;
    }

    /// This session with a timeout for the calls made through the returned value
    /// (`None`: no timeout). On timeout the request is cancelled and the call fails with
    /// [`CallError::Timeout`].
    ///
    /// ```no_run
    /// # async fn f(session: mcp_client::ClientSession) -> Result<(), mcp_client::CallError> {
    /// use std::time::Duration;
    /// session.with_timeout(Some(Duration::from_secs(5))).ping().await?;
    /// # Ok(()) }
    /// ```
    pub fn with_timeout(&self, timeout: Option<Duration>) -> ClientSession {
        let mut session = self.clone();
        session.options.timeout = Some(timeout);
        session
    }

    /// This session with a progress callback for the calls made through the returned value: each
    /// such request carries a progress token and the server's `notifications/progress` for it
    /// reach `callback`.
    ///
    /// ```no_run
    /// # async fn f(session: mcp_client::ClientSession) -> Result<(), mcp_client::CallError> {
    /// let result = session
    ///     .with_progress(|p| eprintln!("{} of {:?}", p.progress, p.total))
    ///     .call_tool("slow", serde_json::json!({}))
    ///     .await?;
    /// # let _ = result; Ok(()) }
    /// ```
    pub fn with_progress(
        &self,
        callback: impl Fn(Progress) + Send + Sync + 'static,
    ) -> ClientSession {
        let mut session = self.clone();
        session.options.progress = Some(Arc::new(callback));
        session
    }

    fn timeout(&self) -> Option<Duration> {
        self.options
            .timeout
            .unwrap_or(self.inner.client.shared.request_timeout)
    }

    /// Whether the server declared the top-level capability `name` (`tools`, `resources`,
    /// `prompts`, `logging`, `completions`, ...).
    pub fn offers(&self, name: &str) -> bool {
        self.has_capability(&[name])
    }

    fn has_capability(&self, path: &[&str]) -> bool {
        let mut value = &self.inner.server_caps;
        for key in path {
            match value.get(key) {
                Some(next) if !next.is_null() => value = next,
                _ => return false,
            }
        }
        // `subscribe` and `listChanged` are booleans; anything else is an object.
        !matches!(value, Value::Bool(false))
    }

    fn check(
        &self,
        method: &'static str,
        capability: Option<(&'static str, &[&str])>,
    ) -> Result<(), CallError> {
        let available = mcp_types::methods::lookup(method)
            .is_some_and(|info| info.available_in(self.inner.version));
        if !available {
            return Err(CallError::NotInRevision {
                method,
                version: self.inner.version,
            });
        }
        if let Some((name, _)) = capability.filter(|(_, path)| !self.has_capability(path)) {
            return Err(CallError::MissingCapability {
                method,
                capability: name,
            });
        }
        Ok(())
    }

    /// Sends a request whose params are already checked and projected.
    async fn send<R: DeserializeOwned>(
        &self,
        method: &'static str,
        params: Option<Value>,
    ) -> Result<R, CallError> {
        let raw = self
            .inner
            .rpc
            .request(
                method,
                params,
                self.timeout(),
                self.options.progress.clone(),
                true,
            )
            .await?;
        serde_json::from_str(raw.get()).map_err(CallError::Decode)
    }

    /// Projects model params onto the negotiated revision and encodes them.
    fn encode<P: Serialize + Project>(&self, mut params: P) -> Result<Value, CallError> {
        params.project(self.inner.version);
        serde_json::to_value(params).map_err(CallError::Decode)
    }

    /// `ping`.
    pub async fn ping(&self) -> Result<(), CallError> {
        self.check("ping", None)?;
        let _: Value = self.send("ping", None).await?;
        Ok(())
    }

    async fn list_page<P: Page>(
        &self,
        method: &'static str,
        capability: (&'static str, &[&str]),
        cursor: Option<String>,
    ) -> Result<P, CallError> {
        self.check(method, Some(capability))?;
        self.send(method, Some(cursor_params(cursor))).await
    }

    fn pages<P: Page + Send + 'static>(
        &self,
        method: &'static str,
        capability: (&'static str, &'static [&'static str]),
    ) -> impl Stream<Item = Result<P::Item, CallError>> + Send + 'static
    where
        P::Item: Send + 'static,
    {
        struct State {
            session: ClientSession,
            cursor: Option<String>,
            seen: HashSet<String>,
            pages: usize,
            done: bool,
        }
        let state = State {
            session: self.clone(),
            cursor: None,
            seen: HashSet::new(),
            pages: 0,
            done: false,
        };
        stream::try_unfold(state, move |mut state| async move {
            if state.done {
                return Ok(None);
            }
            let max = state.session.inner.client.shared.max_pages;
            if state.pages >= max {
                return Err(CallError::Pagination(format!(
                    "`{method}` returned more than {max} pages"
                )));
            }
            state.pages += 1;
            let page: P = state
                .session
                .list_page(method, capability, state.cursor.take())
                .await?;
            let (items, next) = page.into_parts();
            match next {
                Some(cursor) => {
                    if !state.seen.insert(cursor.clone()) {
                        return Err(CallError::Pagination(format!(
                            "`{method}` repeated the cursor {cursor:?}"
                        )));
                    }
                    state.cursor = Some(cursor);
                }
                None => state.done = true,
            }
            Ok(Some((items, state)))
        })
        .map_ok(|items| stream::iter(items.into_iter().map(Ok)))
        .try_flatten()
    }

    /// `tools/list`: one page, from `cursor`.
    pub async fn list_tools(&self, cursor: Option<String>) -> Result<ListToolsResult, CallError> {
        let page: ListToolsResult = self
            .list_page("tools/list", ("tools", &["tools"]), cursor)
            .await?;
        self.remember_output_schemas(&page.tools);
        Ok(page)
    }

    /// Every tool, following `nextCursor` across pages (bounded by
    /// [`ClientBuilder::max_pages`](crate::ClientBuilder::max_pages)).
    pub async fn list_all_tools(&self) -> Result<Vec<Tool>, CallError> {
        self.tools().try_collect().await
    }

    /// Every tool as a stream that fetches pages as it goes.
    pub fn tools(&self) -> impl Stream<Item = Result<Tool, CallError>> + Send + 'static {
        let session = self.clone();
        self.pages::<ListToolsResult>("tools/list", ("tools", &["tools"]))
            .inspect_ok(move |tool| session.remember_output_schemas(std::slice::from_ref(tool)))
    }

    fn remember_output_schemas(&self, tools: &[Tool]) {
        let Ok(mut cache) = self.inner.output_schemas.lock() else {
            return;
        };
        for tool in tools {
            let Some(schema) = &tool.output_schema else {
                cache.remove(&tool.name);
                continue;
            };
            if cache.len() >= MAX_CACHED_SCHEMAS && !cache.contains_key(&tool.name) {
                tracing::debug!(tool = %tool.name, "output schema cache full; not validating this tool");
                continue;
            }
            let schema = serde_json::to_value(schema).unwrap_or(Value::Null);
            let validator = match jsonschema::validator_for(&schema) {
                Ok(validator) => Some(validator),
                Err(error) => {
                    tracing::warn!(tool = %tool.name, %error, "tool output schema does not compile; its results are not validated");
                    None
                }
            };
            cache.insert(tool.name.clone(), Arc::new(OutputSchema { validator }));
        }
    }

    /// `tools/call` with any serializable arguments (a JSON object).
    ///
    /// When the tool was listed with an `outputSchema`, a successful result's
    /// `structuredContent` is checked against it ([`CallError::InvalidStructuredContent`]).
    /// A tool that fails reports it in the result (`is_error`), not as an `Err`.
    pub async fn call_tool(
        &self,
        name: impl Into<String>,
        arguments: impl Serialize,
    ) -> Result<CallToolResult, CallError> {
        let arguments = match serde_json::to_value(arguments).map_err(CallError::Decode)? {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(CallError::Decode(serde::de::Error::custom(format!(
                    "tool arguments must serialize to a JSON object, not {other}"
                ))));
            }
        };
        let mut params = json!({ "name": name.into() });
        if let Some(arguments) = arguments {
            params["arguments"] = Value::Object(arguments);
        }
        self.call_tool_with(model(params)?).await
    }

    /// `tools/call` and decodes the tool's `structuredContent` into `T`.
    pub async fn call_tool_structured<T: DeserializeOwned>(
        &self,
        name: impl Into<String>,
        arguments: impl Serialize,
    ) -> Result<T, CallError> {
        let name = name.into();
        let result = self.call_tool(name.clone(), arguments).await?;
        if result.is_error == Some(true) {
            let text = result
                .content
                .iter()
                .filter_map(|block| match block {
                    mcp_types::ContentBlock::Text(text) => Some(text.text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n");
            return Err(CallError::InvalidStructuredContent {
                tool: name,
                reason: format!("the tool failed: {text}"),
            });
        }
        let structured =
            result
                .structured_content
                .ok_or_else(|| CallError::InvalidStructuredContent {
                    tool: name,
                    reason: "the result has no structuredContent".into(),
                })?;
        serde_json::from_value(structured).map_err(CallError::Decode)
    }

    /// `tools/call` with spec-shaped params.
    pub async fn call_tool_with(
        &self,
        params: CallToolRequestParams,
    ) -> Result<CallToolResult, CallError> {
        self.check("tools/call", Some(("tools", &["tools"])))?;
        let name = params.name.clone();
        let params = self.encode(params)?;
        let result: CallToolResult = self.send("tools/call", Some(params)).await?;
        self.validate_structured(&name, &result)?;
        Ok(result)
    }

    fn validate_structured(&self, tool: &str, result: &CallToolResult) -> Result<(), CallError> {
        if result.is_error == Some(true) {
            return Ok(());
        }
        let schema = match self.inner.output_schemas.lock() {
            Ok(cache) => cache.get(tool).cloned(),
            Err(_) => None,
        };
        let Some(schema) = schema else {
            return Ok(());
        };
        let Some(validator) = &schema.validator else {
            return Ok(());
        };
        let Some(structured) = &result.structured_content else {
            return Err(CallError::InvalidStructuredContent {
                tool: tool.to_owned(),
                reason: "the tool declares an outputSchema but returned no structuredContent"
                    .into(),
            });
        };
        let problems: Vec<String> = validator
            .iter_errors(structured)
            .take(8)
            .map(|error| {
                let at = error.instance_path().to_string();
                if at.is_empty() {
                    error.to_string()
                } else {
                    format!("{at}: {error}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(CallError::InvalidStructuredContent {
                tool: tool.to_owned(),
                reason: problems.join("; "),
            })
        }
    }

    /// `resources/list`: one page, from `cursor`.
    pub async fn list_resources(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, CallError> {
        self.list_page("resources/list", ("resources", &["resources"]), cursor)
            .await
    }

    /// Every resource, across pages.
    pub async fn list_all_resources(&self) -> Result<Vec<Resource>, CallError> {
        self.resources().try_collect().await
    }

    /// Every resource as a stream that fetches pages as it goes.
    pub fn resources(&self) -> impl Stream<Item = Result<Resource, CallError>> + Send + 'static {
        self.pages::<ListResourcesResult>("resources/list", ("resources", &["resources"]))
    }

    /// `resources/templates/list`: one page, from `cursor`.
    pub async fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, CallError> {
        self.list_page(
            "resources/templates/list",
            ("resources", &["resources"]),
            cursor,
        )
        .await
    }

    /// Every resource template, across pages.
    pub async fn list_all_resource_templates(&self) -> Result<Vec<ResourceTemplate>, CallError> {
        self.resource_templates().try_collect().await
    }

    /// Every resource template as a stream that fetches pages as it goes.
    pub fn resource_templates(
        &self,
    ) -> impl Stream<Item = Result<ResourceTemplate, CallError>> + Send + 'static {
        self.pages::<ListResourceTemplatesResult>(
            "resources/templates/list",
            ("resources", &["resources"]),
        )
    }

    /// `resources/read`.
    pub async fn read_resource(
        &self,
        uri: impl Into<String>,
    ) -> Result<ReadResourceResult, CallError> {
        self.read_resource_with(model(json!({ "uri": uri.into() }))?)
            .await
    }

    /// `resources/read` with spec-shaped params.
    pub async fn read_resource_with(
        &self,
        params: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, CallError> {
        self.check("resources/read", Some(("resources", &["resources"])))?;
        let params = self.encode(params)?;
        self.send("resources/read", Some(params)).await
    }

    /// `resources/subscribe`: the server then sends
    /// [`ServerNotification::ResourceUpdated`] when the resource changes.
    pub async fn subscribe(&self, uri: impl Into<String>) -> Result<(), CallError> {
        self.check(
            "resources/subscribe",
            Some(("resources.subscribe", &["resources", "subscribe"])),
        )?;
        let _: Value = self
            .send("resources/subscribe", Some(json!({"uri": uri.into()})))
            .await?;
        Ok(())
    }

    /// `resources/unsubscribe`.
    pub async fn unsubscribe(&self, uri: impl Into<String>) -> Result<(), CallError> {
        self.check(
            "resources/unsubscribe",
            Some(("resources.subscribe", &["resources", "subscribe"])),
        )?;
        let _: Value = self
            .send("resources/unsubscribe", Some(json!({"uri": uri.into()})))
            .await?;
        Ok(())
    }

    /// `prompts/list`: one page, from `cursor`.
    pub async fn list_prompts(
        &self,
        cursor: Option<String>,
    ) -> Result<ListPromptsResult, CallError> {
        self.list_page("prompts/list", ("prompts", &["prompts"]), cursor)
            .await
    }

    /// Every prompt, across pages.
    pub async fn list_all_prompts(&self) -> Result<Vec<Prompt>, CallError> {
        self.prompts().try_collect().await
    }

    /// Every prompt as a stream that fetches pages as it goes.
    pub fn prompts(&self) -> impl Stream<Item = Result<Prompt, CallError>> + Send + 'static {
        self.pages::<ListPromptsResult>("prompts/list", ("prompts", &["prompts"]))
    }

    /// `prompts/get` with string arguments.
    pub async fn get_prompt<K, V>(
        &self,
        name: impl Into<String>,
        arguments: impl IntoIterator<Item = (K, V)>,
    ) -> Result<GetPromptResult, CallError>
    where
        K: Into<String>,
        V: Into<String>,
    {
        let arguments: Map<String, Value> = arguments
            .into_iter()
            .map(|(k, v)| (k.into(), Value::String(v.into())))
            .collect();
        let mut params = json!({ "name": name.into() });
        if !arguments.is_empty() {
            params["arguments"] = Value::Object(arguments);
        }
        self.get_prompt_with(model(params)?).await
    }

    /// `prompts/get` with spec-shaped params.
    pub async fn get_prompt_with(
        &self,
        params: GetPromptRequestParams,
    ) -> Result<GetPromptResult, CallError> {
        self.check("prompts/get", Some(("prompts", &["prompts"])))?;
        let params = self.encode(params)?;
        self.send("prompts/get", Some(params)).await
    }

    /// `completion/complete`: argument suggestions for a prompt or resource template.
    pub async fn complete(
        &self,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, CallError> {
        // 2024-11-05 had no `completions` capability; later revisions require it.
        let capability: Option<(&'static str, &[&str])> =
            if self.inner.version > ProtocolVersion::V2024_11_05 {
                Some(("completions", &["completions"]))
            } else {
                None
            };
        self.check("completion/complete", capability)?;
        let params = self.encode(params)?;
        self.send("completion/complete", Some(params)).await
    }

    /// `logging/setLevel`: the server then sends log messages at `level` and above.
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Result<(), CallError> {
        self.check("logging/setLevel", Some(("logging", &["logging"])))?;
        let _: Value = self
            .send("logging/setLevel", Some(json!({ "level": level })))
            .await?;
        Ok(())
    }

    /// Sends any request the negotiated revision defines, with raw JSON params: the escape hatch
    /// for methods without a typed call. The capability check is the caller's.
    pub async fn request_raw(
        &self,
        method: &'static str,
        params: Option<Value>,
    ) -> Result<Value, CallError> {
        self.check(method, None)?;
        self.send(method, params).await
    }
}

/// `initialize`, then `notifications/initialized`. Kept in one place so that other lifecycles
/// (the stateless `server/discover`) slot in here.
async fn negotiate(
    client: &Client,
    rpc: &Rpc,
) -> Result<(ProtocolVersion, InitializeResult), ConnectError> {
    let shared = &client.shared;
    let requested = shared.protocol_version;
    let mut params = Map::new();
    params.insert("protocolVersion".into(), json!(requested));
    let mut capabilities: mcp_types::ClientCapabilities = client.capabilities();
    capabilities.project(requested);
    params.insert(
        "capabilities".into(),
        serde_json::to_value(capabilities).unwrap_or_else(|_| json!({})),
    );
    let mut info = shared.info.clone();
    info.project(requested);
    params.insert(
        "clientInfo".into(),
        serde_json::to_value(info).map_err(ConnectError::InvalidInitializeResult)?,
    );
    let raw = rpc
        .request(
            "initialize",
            Some(Value::Object(params)),
            Some(shared.initialize_timeout),
            None,
            // The specification forbids cancelling `initialize`.
            false,
        )
        .await
        .map_err(|error| ConnectError::Initialize(error.into()))?;
    let value: Value =
        serde_json::from_str(raw.get()).map_err(ConnectError::InvalidInitializeResult)?;
    let answered = value
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let version = match answered.parse::<ProtocolVersion>() {
        Ok(version)
            if version.era() == Era::Session
                && version >= shared.min_protocol_version
                && version <= requested =>
        {
            version
        }
        _ => {
            return Err(ConnectError::UnsupportedVersion {
                requested,
                min: shared.min_protocol_version,
                answered,
            });
        }
    };
    let init: InitializeResult =
        serde_json::from_value(value).map_err(ConnectError::InvalidInitializeResult)?;
    rpc.notify("notifications/initialized", None)
        .await
        .map_err(ConnectError::Initialized)?;
    tracing::debug!(
        server = %init.server_info.name,
        version = %version,
        "connected"
    );
    Ok((version, init))
}

fn spawn_roots_watcher(
    session: std::sync::Weak<SessionInner>,
    mut changes: tokio::sync::watch::Receiver<u64>,
) {
    tokio::spawn(async move {
        loop {
            let closed = match session.upgrade() {
                Some(inner) => inner.rpc.closed_signal(),
                None => return,
            };
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                _ = closed => return,
            }
            let Some(inner) = session.upgrade() else {
                return;
            };
            if let Err(error) = inner
                .rpc
                .notify("notifications/roots/list_changed", None)
                .await
            {
                tracing::debug!(%error, "could not send roots/list_changed");
                return;
            }
        }
    });
}
