//! Requests and notifications the server sends to the client.

use std::sync::{Arc, OnceLock};

use mcp_jsonrpc::ErrorObject;
use mcp_types::{CreateMessageRequestParams, Project, ProtocolVersion};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use crate::cache::ResponseCache;
use crate::client::Client;
use crate::elicit::FormSchema;
use crate::handler::{ElicitationAnswer, ElicitationRequest, HandlerError};
use crate::listen::Subscriptions;
use crate::notify::ServerNotification;
use mcp_types::wire::latest_session_version;

/// Dispatches what the server sends. Shared by the engine and the session.
#[derive(Clone)]
pub(crate) struct IncomingHandler {
    inner: Arc<IncomingInner>,
}

struct IncomingInner {
    client: Client,
    version: OnceLock<ProtocolVersion>,
    notifications: broadcast::Sender<ServerNotification>,
    subscriptions: Subscriptions,
    cache: OnceLock<Arc<ResponseCache>>,
}

impl IncomingHandler {
    pub(crate) fn new(
        client: Client,
        notifications: broadcast::Sender<ServerNotification>,
    ) -> Self {
        Self {
            inner: Arc::new(IncomingInner {
                client,
                version: OnceLock::new(),
                notifications,
                subscriptions: Subscriptions::default(),
                cache: OnceLock::new(),
            }),
        }
    }

    pub(crate) fn set_version(&self, version: ProtocolVersion) {
        let _ = self.inner.version.set(version);
    }

    /// Lets list-changed notifications drop stale entries of the session's cache.
    pub(crate) fn set_cache(&self, cache: Arc<ResponseCache>) {
        let _ = self.inner.cache.set(cache);
    }

    /// The routing table of the session's `subscriptions/listen` subscriptions.
    pub(crate) fn subscriptions(&self) -> &Subscriptions {
        &self.inner.subscriptions
    }

    /// The negotiated revision; before negotiation ends, the newest `initialize` revision the
    /// client may ask for (servers send nothing before that, except to an `initialize`).
    fn version(&self) -> ProtocolVersion {
        self.inner.version.get().copied().unwrap_or_else(|| {
            self.inner
                .client
                .shared
                .protocol_version
                .min(latest_session_version())
        })
    }

    fn method_exists(&self, method: &str) -> bool {
        mcp_types::methods::lookup(method)
            .is_some_and(|info| info.sender.server() && info.available_in(self.version()))
    }

    /// Answers one server request. The params come as the server wrote them, so that what
    /// depends on their order (the fields of an elicitation form) keeps it.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<Value, ErrorObject> {
        if !self.method_exists(method) {
            return Err(ErrorObject::method_not_found(method));
        }
        let shared = &self.inner.client.shared;
        match method {
            "ping" => Ok(json!({})),
            "sampling/createMessage" => {
                let Some(handler) = &shared.sampling else {
                    return Err(ErrorObject::method_not_found(method));
                };
                let params: CreateMessageRequestParams =
                    serde_json::from_str(params.map_or("{}", RawValue::get))
                        .map_err(ErrorObject::invalid_params)?;
                let mut result = handler
                    .create_message(params)
                    .await
                    .map_err(HandlerError::into_error_object)?;
                result.project(self.version());
                serde_json::to_value(result).map_err(ErrorObject::internal_error)
            }
            "elicitation/create" => self.elicit(params).await,
            "roots/list" => {
                let Some(roots) = &shared.roots else {
                    return Err(ErrorObject::method_not_found(method));
                };
                let mut list = roots.get();
                list.project(self.version());
                Ok(json!({ "roots": list }))
            }
            _ => Err(ErrorObject::method_not_found(method)),
        }
    }

    async fn elicit(&self, raw: Option<&RawValue>) -> Result<Value, ErrorObject> {
        let shared = &self.inner.client.shared;
        let Some(handler) = &shared.elicitation else {
            return Err(ErrorObject::method_not_found("elicitation/create"));
        };
        let not_object = || ErrorObject::invalid_params("params must be an object");
        let raw = raw.ok_or_else(not_object)?;
        let params: Map<String, Value> =
            serde_json::from_str(raw.get()).map_err(|_| not_object())?;
        let text = |key: &str| -> Result<String, ErrorObject> {
            params
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| ErrorObject::invalid_params(format!("`{key}` must be a string")))
        };
        let message = text("message")?;
        let mode = params.get("mode").and_then(Value::as_str).unwrap_or("form");
        let (request, schema) = match mode {
            "form" => {
                let requested_schema = params
                    .get("requestedSchema")
                    .cloned()
                    .ok_or_else(|| ErrorObject::invalid_params("`requestedSchema` is missing"))?;
                // Parsed from the server's text: the `Value` has lost the order of the form's
                // fields.
                let schema = FormSchema::parse_str(form_text(raw)?.get())
                    .map_err(ErrorObject::invalid_params)?;
                (
                    ElicitationRequest::Form {
                        message,
                        schema: schema.clone(),
                        requested_schema,
                    },
                    Some(schema),
                )
            }
            "url" if shared.url_elicitation => (
                ElicitationRequest::Url {
                    message,
                    url: text("url")?,
                    elicitation_id: text("elicitationId")?,
                },
                None,
            ),
            "url" => {
                return Err(ErrorObject::invalid_params(
                    "this client does not support URL mode elicitation",
                ));
            }
            other => {
                return Err(ErrorObject::invalid_params(format!(
                    "unknown elicitation mode `{other}`"
                )));
            }
        };
        let answer = handler
            .elicit(request)
            .await
            .map_err(HandlerError::into_error_object)?;
        match answer {
            ElicitationAnswer::Accept(mut content) => match schema {
                Some(schema) => {
                    if shared.fill_elicitation_defaults {
                        schema.apply_defaults(&mut content);
                    }
                    if let Err(error) = schema.validate(&content) {
                        tracing::warn!(%error, "not sending an elicitation answer that does not match the schema");
                        return Err(ErrorObject::internal_error(error));
                    }
                    Ok(json!({"action": "accept", "content": content}))
                }
                None => Ok(json!({"action": "accept"})),
            },
            ElicitationAnswer::Decline => Ok(json!({"action": "decline"})),
            ElicitationAnswer::Cancel => Ok(json!({"action": "cancel"})),
        }
    }

    /// Delivers one server notification to the application: its subscription (when it carries
    /// a subscription id), the callback and the session's notification stream.
    pub(crate) fn notification(&self, method: &str, params: Option<Value>) {
        if let Some(cache) = self.inner.cache.get() {
            cache.invalidate_for(method);
        }
        let tagged = params.clone();
        let notification = ServerNotification::decode(method, params);
        if !self
            .inner
            .subscriptions
            .route(method, tagged.as_ref(), &notification)
        {
            return;
        }
        if let Some(callback) = &self.inner.client.shared.on_notification {
            callback(&notification);
        }
        // No receiver is fine: nobody asked for the stream.
        let _ = self.inner.notifications.send(notification);
    }
}

/// The `requestedSchema` of `elicitation/create` params, as the server wrote it.
fn form_text(params: &RawValue) -> Result<&RawValue, ErrorObject> {
    #[derive(Deserialize)]
    struct Form<'a> {
        #[serde(rename = "requestedSchema", borrow)]
        requested_schema: &'a RawValue,
    }
    serde_json::from_str::<Form<'_>>(params.get())
        .map(|form| form.requested_schema)
        .map_err(ErrorObject::invalid_params)
}
