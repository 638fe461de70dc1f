//! `subscriptions/listen`: a long-lived request whose response stream carries the change
//! notifications the client opted in to, each tagged with the listen request's id.
//!
//! The subscription lives exactly as long as the request: closing the stream (HTTP) or
//! `notifications/cancelled` (stdio) ends it. Each open subscription occupies one of the
//! connection's concurrent requests, and at most
//! [`ServerOptions::max_subscriptions`](crate::ServerOptions::max_subscriptions) are open per
//! server.
//!
//! With the tasks extension, `notifications.taskIds` asks for `notifications/tasks` about those
//! tasks (a request that did not declare the extension is refused with `-32021`). The
//! acknowledgement names the tasks honoured: those that exist and belong to the caller. Each of
//! them gets its current state at once and again whenever it changes.

use std::sync::Arc;
use std::task::Poll;

use mcp_jsonrpc::{ErrorObject, Id, Peer, RawJson};
use mcp_types::wire::tasks::LISTEN_TASK_IDS;
use mcp_types::wire::{self, RequestMeta, ResultType, TASKS_EXTENSION};
use mcp_types::{
    JsonObject, Meta, RequestId, ServerCapabilities, SubscriptionFilter,
    SubscriptionsListenRequestParams, SubscriptionsListenResult,
};
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use crate::error::rpc_error;
use crate::registry::ServerEvent;
use crate::server::Server;
#[cfg(feature = "tasks")]
use crate::tasks;

/// The part of `requested` the server honours, given its capabilities.
pub(crate) fn honoured(
    requested: &SubscriptionFilter,
    capabilities: &ServerCapabilities,
) -> SubscriptionFilter {
    let asked = |flag: Option<bool>| flag == Some(true);
    let tools = capabilities
        .tools
        .as_ref()
        .is_some_and(|t| t.list_changed == Some(true));
    let prompts = capabilities
        .prompts
        .as_ref()
        .is_some_and(|p| p.list_changed == Some(true));
    let resources = capabilities.resources.as_ref();
    let resources_list = resources.is_some_and(|r| r.list_changed == Some(true));
    let subscribe = resources.is_some_and(|r| r.subscribe == Some(true));
    SubscriptionFilter {
        tools_list_changed: (tools && asked(requested.tools_list_changed)).then_some(true),
        prompts_list_changed: (prompts && asked(requested.prompts_list_changed)).then_some(true),
        resources_list_changed: (resources_list && asked(requested.resources_list_changed))
            .then_some(true),
        resource_subscriptions: requested
            .resource_subscriptions
            .clone()
            .filter(|uris| subscribe && !uris.is_empty()),
    }
}

/// What an event sends on a subscription with `filter`, if anything.
fn notification(event: &ServerEvent, filter: &SubscriptionFilter) -> Option<(&'static str, Value)> {
    let on = |flag: Option<bool>| flag == Some(true);
    match event {
        ServerEvent::ToolsChanged if on(filter.tools_list_changed) => Some((
            "notifications/tools/list_changed",
            Value::Object(JsonObject::new()),
        )),
        ServerEvent::PromptsChanged if on(filter.prompts_list_changed) => Some((
            "notifications/prompts/list_changed",
            Value::Object(JsonObject::new()),
        )),
        ServerEvent::ResourcesChanged if on(filter.resources_list_changed) => Some((
            "notifications/resources/list_changed",
            Value::Object(JsonObject::new()),
        )),
        ServerEvent::ResourceUpdated(uri)
            if filter
                .resource_subscriptions
                .as_ref()
                .is_some_and(|uris| uris.contains(uri)) =>
        {
            Some((
                "notifications/resources/updated",
                serde_json::json!({ "uri": uri }),
            ))
        }
        _ => None,
    }
}

fn subscription_id(id: &Id) -> RequestId {
    match id {
        Id::Number(n) => RequestId::Integer(*n),
        Id::String(s) => RequestId::String(s.clone()),
    }
}

/// Sends a notification tagged with the subscription id; `false` when the connection is gone.
async fn send(peer: &Peer, method: &'static str, params: Value, id: &RequestId) -> bool {
    let Value::Object(mut params) = params else {
        return true;
    };
    wire::tag_subscription(&mut params, id);
    match mcp_jsonrpc::to_raw(&params) {
        Ok(raw) => peer.notify(method, Some(raw)).await.is_ok(),
        Err(e) => {
            tracing::warn!(%method, error = %e, "subscription notification not sent");
            true
        }
    }
}

/// The task ids a listen request asks about (`notifications.taskIds`), if it names any.
fn requested_task_ids(params: Option<&Value>) -> Result<Option<Vec<String>>, ErrorObject> {
    let Some(ids) = params
        .and_then(|p| p.get("notifications"))
        .and_then(|n| n.get(LISTEN_TASK_IDS))
    else {
        return Ok(None);
    };
    serde_json::from_value(ids.clone())
        .map(Some)
        .map_err(|e| ErrorObject::invalid_params(format!("notifications.taskIds: {e}")))
}

/// The tasks a listen stream reports on: those `notifications.taskIds` names that exist and
/// belong to the caller (none without the `tasks` feature, where no task exists).
struct Watched<'a> {
    ids: Vec<Arc<str>>,
    #[cfg(feature = "tasks")]
    server: &'a Server,
    #[cfg(feature = "tasks")]
    owner: Option<&'a str>,
    #[cfg(feature = "tasks")]
    changes: tokio::sync::broadcast::Receiver<Arc<str>>,
    #[cfg(not(feature = "tasks"))]
    _server: std::marker::PhantomData<&'a Server>,
}

impl<'a> Watched<'a> {
    /// Subscribes to task changes (before the acknowledgement, so none after it is missed).
    #[cfg(feature = "tasks")]
    fn new(server: &'a Server, requested: Option<&[String]>, owner: Option<&'a str>) -> Self {
        let served = tasks::serve::served(server);
        let mut ids: Vec<Arc<str>> = Vec::new();
        for task_id in requested.into_iter().flatten() {
            if served
                && !ids.iter().any(|t| **t == **task_id)
                && server.inner.tasks.get(task_id, owner).is_some()
            {
                ids.push(Arc::from(task_id.as_str()));
            }
        }
        Watched {
            ids,
            server,
            owner,
            changes: server.inner.tasks.changes(),
        }
    }

    #[cfg(not(feature = "tasks"))]
    fn new(_server: &'a Server, _requested: Option<&[String]>, _owner: Option<&'a str>) -> Self {
        Watched {
            ids: Vec::new(),
            _server: std::marker::PhantomData,
        }
    }

    /// The tasks whose state changed (all of them after missed changes); pending for ever
    /// while none is watched.
    async fn changed(&mut self) -> Vec<Arc<str>> {
        #[cfg(feature = "tasks")]
        while !self.ids.is_empty() {
            match self.changes.recv().await {
                Ok(task_id) if self.ids.contains(&task_id) => return vec![task_id],
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => return self.ids.clone(),
                Err(RecvError::Closed) => self.ids.clear(),
            }
        }
        std::future::pending().await
    }

    /// Sends the current state of each of `ids` (`notifications/tasks`); `false` when the
    /// connection is gone.
    #[cfg(feature = "tasks")]
    async fn send(&self, peer: &Peer, ids: &[Arc<str>], id: &RequestId) -> bool {
        for task_id in ids {
            let Some(task) = self.server.inner.tasks.get(task_id, self.owner) else {
                continue;
            };
            match crate::tasks::serve::detailed_json(task.detailed()) {
                Ok(params) => {
                    let status = mcp_types::wire::tasks::NOTIFICATION_STATUS;
                    if !send(peer, status, params, id).await {
                        return false;
                    }
                }
                Err(e) => tracing::warn!(error = %e, "task notification not sent"),
            }
        }
        true
    }

    #[cfg(not(feature = "tasks"))]
    async fn send(&self, _peer: &Peer, ids: &[Arc<str>], _id: &RequestId) -> bool {
        debug_assert!(
            ids.is_empty(),
            "no task is watched without the tasks feature"
        );
        true
    }
}

/// Serves one `subscriptions/listen` request until it is cancelled or the server's registry
/// goes away.
pub(crate) async fn listen(
    server: &Server,
    rpc: &mcp_jsonrpc::RequestContext,
    params: Option<&Value>,
    meta: &RequestMeta,
    owner: Option<&str>,
) -> Result<RawJson, ErrorObject> {
    let requested_tasks = requested_task_ids(params)?;
    let params: SubscriptionsListenRequestParams =
        serde_json::from_value(params.cloned().unwrap_or(Value::Null))
            .map_err(ErrorObject::invalid_params)?;
    let inner = &server.inner;
    if requested_tasks.is_some()
        && !wire::declares_extension(&meta.client_capabilities, TASKS_EXTENSION)
    {
        return Err(rpc_error(wire::missing_extension(TASKS_EXTENSION)));
    }
    let filter = honoured(&params.notifications, &inner.handler.capabilities());
    let Ok(_permit) = std::sync::Arc::clone(&inner.subscriptions).try_acquire_owned() else {
        return Err(ErrorObject::internal_error(format!(
            "too many open subscriptions (at most {})",
            inner.options.max_subscriptions
        )));
    };
    let id = subscription_id(rpc.id());
    // Subscribe before acknowledging, so nothing that happens after the acknowledgement is
    // missed.
    let mut events = inner.registry.subscribe();
    let mut watched = Watched::new(server, requested_tasks.as_deref(), owner);
    let peer = rpc.peer();
    let mut ack = serde_json::json!({ "notifications": filter });
    if requested_tasks.is_some() {
        let honoured: Vec<&str> = watched.ids.iter().map(|t| &**t).collect();
        ack["notifications"][LISTEN_TASK_IDS] = serde_json::json!(honoured);
    }
    if !send(peer, "notifications/subscriptions/acknowledged", ack, &id).await {
        return Err(ErrorObject::internal_error("the connection closed"));
    }
    tracing::debug!(subscription = %rpc.id(), "subscription open");
    if !watched.send(peer, &watched.ids, &id).await {
        return Err(ErrorObject::internal_error("the connection closed"));
    }
    let cancel = rpc.cancellation();
    /// What the subscription waits for, after its cancellation.
    enum Next<C, E> {
        Changed(C),
        Event(E),
    }
    loop {
        let next = {
            let mut changed = std::pin::pin!(watched.changed());
            let mut event = std::pin::pin!(events.recv());
            let next = std::future::poll_fn(|cx| match changed.as_mut().poll(cx) {
                Poll::Ready(c) => Poll::Ready(Next::Changed(c)),
                Poll::Pending => event.as_mut().poll(cx).map(Next::Event),
            });
            cancel.run_until_cancelled(next).await
        };
        let event = match next {
            None => {
                return Err(ErrorObject::internal_error(
                    "the subscription was cancelled",
                ));
            }
            Some(Next::Changed(changed)) => {
                if !watched.send(peer, &changed, &id).await {
                    return Err(ErrorObject::internal_error("the connection closed"));
                }
                continue;
            }
            Some(Next::Event(e)) => e,
        };
        let event = match event {
            Ok(e) => e,
            Err(RecvError::Lagged(n)) => {
                tracing::debug!(missed = n, "subscription events lagged");
                continue;
            }
            Err(RecvError::Closed) => break,
        };
        if let Some((method, params)) = notification(&event, &filter) {
            if !send(peer, method, params, &id).await {
                return Err(ErrorObject::internal_error("the connection closed"));
            }
        }
    }
    let mut meta = Meta::new();
    meta.insert(
        wire::META_SUBSCRIPTION_ID.into(),
        serde_json::to_value(&id).map_err(ErrorObject::internal_error)?,
    );
    let result = SubscriptionsListenResult {
        meta,
        result_type: ResultType::Complete.as_str().to_owned(),
    };
    let mut map = match serde_json::to_value(&result) {
        Ok(Value::Object(m)) => m,
        _ => return Err(ErrorObject::internal_error("listen result")),
    };
    wire::lower_result(
        "subscriptions/listen",
        &mut map,
        ResultType::Complete,
        Some(&inner.info),
        None,
    )
    .map_err(ErrorObject::internal_error)?;
    RawJson::serialize(&map).map_err(ErrorObject::internal_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_types::{ServerCapabilitiesResources, ServerCapabilitiesTools};

    #[test]
    fn honours_only_what_is_declared() {
        let caps = ServerCapabilities {
            tools: Some(ServerCapabilitiesTools {
                list_changed: Some(true),
            }),
            resources: Some(ServerCapabilitiesResources {
                list_changed: None,
                subscribe: Some(true),
            }),
            ..ServerCapabilities::default()
        };
        let asked = SubscriptionFilter {
            tools_list_changed: Some(true),
            prompts_list_changed: Some(true),
            resources_list_changed: Some(true),
            resource_subscriptions: Some(vec!["test://a".into()]),
        };
        let got = honoured(&asked, &caps);
        assert_eq!(got.tools_list_changed, Some(true));
        assert_eq!(got.prompts_list_changed, None);
        assert_eq!(got.resources_list_changed, None);
        assert_eq!(
            got.resource_subscriptions,
            Some(vec!["test://a".to_owned()])
        );
        assert!(notification(&ServerEvent::ToolsChanged, &got).is_some());
        assert!(notification(&ServerEvent::PromptsChanged, &got).is_none());
        assert!(notification(&ServerEvent::ResourceUpdated("test://a".into()), &got).is_some());
        assert!(notification(&ServerEvent::ResourceUpdated("test://b".into()), &got).is_none());
        let nothing = honoured(&SubscriptionFilter::default(), &caps);
        assert_eq!(nothing, SubscriptionFilter::default());
        assert!(notification(&ServerEvent::ToolsChanged, &nothing).is_none());
    }
}
