//! The context a handler receives: who the client is, progress, logging, cancellation, app state
//! and requests back to the client (sampling, elicitation, roots).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::error::CallError;
use crate::model::{
    CreateMessageRequest, CreateMessageResult, ElicitAction, ElicitResult, Elicitation,
    Implementation, LoggingLevel, ProtocolVersion, Root,
};

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A map from type to value, for application state and per-request extensions.
#[derive(Default)]
pub struct Extensions {
    map: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.map.len())
            .finish()
    }
}

impl Extensions {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts a value, replacing any previous value of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        self.map.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The value of type `T`, if present.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.map
            .get(&TypeId::of::<T>())
            .and_then(|v| v.downcast_ref::<T>())
    }

    /// A shared handle to the value of type `T`, if present.
    pub fn get_arc<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.map
            .get(&TypeId::of::<T>())
            .and_then(|v| Arc::clone(v).downcast::<T>().ok())
    }
}

/// How requests and notifications reach the client. A stateful session sends them on its
/// connection; other backends (the stateless revision) implement the same operations differently,
/// so handler code never depends on the transport or the era.
pub(crate) trait ClientChannel: Send + Sync + 'static {
    /// Sends a request to the client and waits for its result.
    fn request(
        &self,
        method: &'static str,
        params: Value,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<Value, CallError>>;

    /// Sends a notification to the client.
    fn notify(&self, method: &'static str, params: Value) -> BoxFuture<'static, ()>;
}

/// What the server knows about the client of a session.
#[derive(Debug, Clone)]
pub(crate) struct ClientInfo {
    pub(crate) version: ProtocolVersion,
    pub(crate) implementation: Implementation,
    pub(crate) capabilities: Value,
}

/// The session-wide logging threshold; `u8::MAX` means "send nothing".
#[derive(Debug)]
pub(crate) struct LogThreshold(AtomicU8);

impl LogThreshold {
    pub(crate) fn new(level: Option<LoggingLevel>) -> Self {
        Self(AtomicU8::new(level.map_or(u8::MAX, |l| l as u8)))
    }
    pub(crate) fn set(&self, level: LoggingLevel) {
        self.0.store(level as u8, Ordering::Relaxed);
    }
    pub(crate) fn allows(&self, level: LoggingLevel) -> bool {
        (level as u8) >= self.0.load(Ordering::Relaxed)
    }
}

pub(crate) struct SessionHandle {
    pub(crate) client: ClientInfo,
    pub(crate) log_level: Arc<LogThreshold>,
    pub(crate) channel: Arc<dyn ClientChannel>,
}

/// The context of one request: identical for tools, resources, prompts and completions, and the
/// same in every protocol revision.
///
/// ```
/// use mcp_server::{RequestContext, model::LoggingLevel};
///
/// async fn work(cx: RequestContext) {
///     cx.progress(1.0, Some(2.0), Some("halfway")).await;
///     cx.log(LoggingLevel::Info, "still working").await;
///     if cx.is_cancelled() {
///         return;
///     }
/// }
/// # let _ = work;
/// ```
#[derive(Clone)]
pub struct RequestContext {
    pub(crate) session: Arc<SessionHandle>,
    pub(crate) request_id: Value,
    pub(crate) progress_token: Option<Value>,
    pub(crate) cancel: CancellationToken,
    pub(crate) state: Arc<Extensions>,
    pub(crate) extensions: Arc<Extensions>,
    pub(crate) uri: Option<String>,
    pub(crate) server: crate::Server,
}

/// The context of a tool call (the same type as [`RequestContext`]).
pub type ToolContext = RequestContext;

impl fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestContext")
            .field("request_id", &self.request_id)
            .field("protocol_version", &self.session.client.version)
            .field("client", &self.session.client.implementation.name)
            .finish_non_exhaustive()
    }
}

fn has_capability(caps: &Value, path: &[&str]) -> bool {
    let mut cur = caps;
    for p in path {
        match cur.get(p) {
            Some(v) if !v.is_null() => cur = v,
            _ => return false,
        }
    }
    true
}

impl RequestContext {
    /// The protocol revision negotiated with the client.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.session.client.version
    }

    /// The client's name and version, as it sent them.
    pub fn client_info(&self) -> &Implementation {
        &self.session.client.implementation
    }

    /// The capabilities the client declared, as JSON.
    pub fn client_capabilities(&self) -> &Value {
        &self.session.client.capabilities
    }

    /// Whether the client declared a capability, by path (`["sampling"]`,
    /// `["elicitation", "url"]`, `["roots"]`).
    pub fn client_supports(&self, path: &[&str]) -> bool {
        has_capability(&self.session.client.capabilities, path)
    }

    /// The JSON-RPC id of the request.
    pub fn request_id(&self) -> &Value {
        &self.request_id
    }

    /// The server handling the request (to add or remove tools, resources and prompts at run
    /// time, or to announce resource updates).
    pub fn server(&self) -> &crate::Server {
        &self.server
    }

    /// The URI being read (resource and template handlers only).
    pub fn uri(&self) -> Option<&str> {
        self.uri.as_deref()
    }

    /// Application state given to [`ServerBuilder::with_state`](crate::ServerBuilder::with_state).
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.state.get_arc::<T>()
    }

    /// Per-request extensions (for example the HTTP request parts or an authenticated principal
    /// set by a transport).
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// Whether the client cancelled the request (or the connection closed).
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Completes when the request is cancelled.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await
    }

    /// The request's cancellation token (to hand to other tasks).
    pub fn cancellation_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Reports progress. Sent only if the client asked for progress (a `progressToken` in the
    /// request's `_meta`); otherwise nothing happens. `message` reaches clients of 2025-03-26 and
    /// later.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.progress_token else {
            return;
        };
        let mut params = json!({"progressToken": token, "progress": progress});
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            if self.protocol_version() >= ProtocolVersion::V2025_03_26 {
                params["message"] = json!(message);
            }
        }
        self.session
            .channel
            .notify("notifications/progress", params)
            .await;
    }

    /// Sends a log message (`notifications/message`) if the session's level lets it through.
    pub async fn log(&self, level: LoggingLevel, data: impl Serialize) {
        self.log_to(level, None, data).await
    }

    /// Like [`log`](Self::log), naming the logger.
    pub async fn log_to(&self, level: LoggingLevel, logger: Option<&str>, data: impl Serialize) {
        if !self.session.log_level.allows(level) {
            return;
        }
        let data = serde_json::to_value(data).unwrap_or_else(|e| json!(e.to_string()));
        let mut params = json!({"level": level, "data": data});
        if let Some(logger) = logger {
            params["logger"] = json!(logger);
        }
        self.session
            .channel
            .notify("notifications/message", params)
            .await;
    }

    /// Asks the user for input through the client, with a form generated from `T` (flat
    /// primitive fields only: strings, numbers, booleans, enums). `key` names the ask; it keeps
    /// the answer apart from other asks when a handler is replayed under the stateless revision.
    ///
    /// Fails with [`CallError::MissingCapability`] when the client did not declare elicitation
    /// (or speaks a revision without it).
    pub async fn elicit<T>(&self, key: &str, message: &str) -> Result<Elicitation<T>, CallError>
    where
        T: DeserializeOwned + schemars::JsonSchema,
    {
        let schema = crate::schema::elicitation_schema_for::<T>().map_err(|e| {
            CallError::InvalidResponse(format!("the requested type is not a flat form: {e}"))
        })?;
        let answer = self.elicit_with_schema(key, message, schema).await?;
        match answer.action {
            ElicitAction::Accept => {
                let content = Value::Object(answer.content.unwrap_or_default());
                let value = serde_json::from_value(content).map_err(|e| {
                    CallError::InvalidResponse(format!("the submitted form does not match: {e}"))
                })?;
                Ok(Elicitation::Accepted(value))
            }
            ElicitAction::Decline => Ok(Elicitation::Declined),
            ElicitAction::Cancel => Ok(Elicitation::Cancelled),
        }
    }

    /// Asks the user for input with an explicit restricted schema (form mode). Accepted content
    /// is checked against the schema before it is returned.
    pub async fn elicit_with_schema(
        &self,
        _key: &str,
        message: &str,
        schema: Value,
    ) -> Result<ElicitResult, CallError> {
        self.require_elicitation("form")?;
        let schema = crate::schema::restrict_elicitation_schema(schema)
            .map_err(|e| CallError::InvalidResponse(format!("invalid requested schema: {e}")))?;
        let checker = crate::validate::CompiledSchema::any(schema.clone())
            .map_err(|e| CallError::InvalidResponse(format!("invalid requested schema: {e}")))?;
        let mut params = json!({"message": message, "requestedSchema": schema});
        if self.protocol_version() >= ProtocolVersion::V2025_11_25 {
            params["mode"] = json!("form");
        }
        let raw = self
            .session
            .channel
            .request("elicitation/create", params, self.cancel.clone())
            .await?;
        let result: ElicitResult =
            serde_json::from_value(raw).map_err(|e| CallError::InvalidResponse(e.to_string()))?;
        if result.action == ElicitAction::Accept {
            let content = Value::Object(result.content.clone().unwrap_or_default());
            checker
                .check(&content)
                .map_err(|e| CallError::InvalidResponse(format!("submitted form: {e}")))?;
        }
        Ok(result)
    }

    /// Sends the user to a URL (URL-mode elicitation, 2025-11-25 with `elicitation.url`).
    pub async fn elicit_url(
        &self,
        _key: &str,
        message: &str,
        url: &str,
        elicitation_id: &str,
    ) -> Result<ElicitAction, CallError> {
        if self.protocol_version() < ProtocolVersion::V2025_11_25 {
            return Err(CallError::NotInRevision {
                feature: "URL-mode elicitation",
                version: self.protocol_version().to_string(),
            });
        }
        self.require_elicitation("url")?;
        let params = json!({
            "mode": "url",
            "message": message,
            "url": url,
            "elicitationId": elicitation_id,
        });
        let raw = self
            .session
            .channel
            .request("elicitation/create", params, self.cancel.clone())
            .await?;
        let result: ElicitResult =
            serde_json::from_value(raw).map_err(|e| CallError::InvalidResponse(e.to_string()))?;
        Ok(result.action)
    }

    fn require_elicitation(&self, mode: &'static str) -> Result<(), CallError> {
        if self.protocol_version() < ProtocolVersion::V2025_06_18 {
            return Err(CallError::NotInRevision {
                feature: "elicitation",
                version: self.protocol_version().to_string(),
            });
        }
        let caps = &self.session.client.capabilities;
        let Some(elicitation) = caps.get("elicitation").filter(|v| v.is_object()) else {
            return Err(CallError::MissingCapability("elicitation"));
        };
        // An empty `elicitation: {}` means form mode only; URL mode must be declared.
        let declared_any = elicitation.get("form").is_some() || elicitation.get("url").is_some();
        let ok = match mode {
            "url" => elicitation.get("url").is_some(),
            _ => !declared_any || elicitation.get("form").is_some(),
        };
        if ok {
            Ok(())
        } else if mode == "url" {
            Err(CallError::MissingCapability("elicitation.url"))
        } else {
            Err(CallError::MissingCapability("elicitation.form"))
        }
    }

    /// Asks the client's language model for a completion (`sampling/createMessage`). Tools in
    /// the request need a 2025-11-25 client that declared `sampling.tools`.
    pub async fn sample(
        &self,
        _key: &str,
        request: CreateMessageRequest,
    ) -> Result<CreateMessageResult, CallError> {
        if !self.client_supports(&["sampling"]) {
            return Err(CallError::MissingCapability("sampling"));
        }
        if request.tools.is_some() || request.tool_choice.is_some() {
            if self.protocol_version() < ProtocolVersion::V2025_11_25 {
                return Err(CallError::NotInRevision {
                    feature: "tools in sampling",
                    version: self.protocol_version().to_string(),
                });
            }
            if !self.client_supports(&["sampling", "tools"]) {
                return Err(CallError::MissingCapability("sampling.tools"));
            }
        }
        let params = serde_json::to_value(&request)
            .map_err(|e| CallError::InvalidResponse(e.to_string()))?;
        let raw = self
            .session
            .channel
            .request("sampling/createMessage", params, self.cancel.clone())
            .await?;
        serde_json::from_value(raw).map_err(|e| CallError::InvalidResponse(e.to_string()))
    }

    /// Asks the client for its roots (`roots/list`).
    pub async fn roots(&self, _key: &str) -> Result<Vec<Root>, CallError> {
        if !self.client_supports(&["roots"]) {
            return Err(CallError::MissingCapability("roots"));
        }
        let raw = self
            .session
            .channel
            .request("roots/list", json!({}), self.cancel.clone())
            .await?;
        #[derive(serde::Deserialize)]
        struct ListRoots {
            roots: Vec<Root>,
        }
        let list: ListRoots =
            serde_json::from_value(raw).map_err(|e| CallError::InvalidResponse(e.to_string()))?;
        Ok(list.roots)
    }
}
