//! How the handler of a call that may become a task reaches its client.
//!
//! Until the call becomes a task, everything goes to the request's own channel (notifications
//! on its stream, asks answered from the request or turned into `input_required`). Once it is a
//! task, the request has been answered: asks park the task in `input_required` and wait for
//! `tasks/update`, progress messages become the task's `statusMessage`, and log messages and
//! other notifications are dropped (the extension has no stream for them).
//!
//! A task of 2025-11-25 keeps its session instead: its asks are requests to the client as
//! usual and its notifications are sent, each with the `io.modelcontextprotocol/related-task`
//! `_meta`; the task is `input_required` while one of its requests waits for an answer.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mcp_jsonrpc::ErrorObject;
use mcp_types::wire::tasks::RELATED_TASK_META;
use mcp_types::wire::{self, InputKind};
use mcp_types::{ClientCapabilities, InputResponse};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::store::{Asked, TaskRecord};
use crate::context::{BoxFuture, ClientChannel, ClientScope, Resume};
use crate::error::AskError;
use crate::error::rpc_error;
use crate::input::InputRequired;
use crate::input::Outgoing;

/// The handler asks to become a task; the request answers with the task it created, or with
/// `None` when it did not create one (the request then ends and the handler is dropped).
pub(crate) struct StartTask(pub(crate) oneshot::Sender<Option<Arc<TaskRecord>>>);

enum Phase {
    /// Part of the request. The sender (taken by the first `start_task`) reaches the request.
    Request(Option<oneshot::Sender<StartTask>>),
    /// A task; the request has been answered.
    Task(Arc<TaskRecord>),
}

/// The channel of a call that may become a task.
pub(crate) struct TaskChannel {
    /// The request's own channel.
    inner: Arc<dyn ClientChannel>,
    /// What the creating request declared (for the explicit layer's asks).
    capabilities: ClientCapabilities,
    phase: Mutex<Phase>,
    /// A task of 2025-11-25: asks and notifications go on to the session.
    forward: bool,
    /// Where they go once the request was answered: the session's connection, when the
    /// request's own channel ends with the request (HTTP).
    detached: Option<Arc<dyn ClientChannel>>,
}

/// `params` (an object, or none) with the `_meta` that ties a message to `task`.
fn related(params: Option<Box<RawValue>>, task: &str) -> Result<Box<RawValue>, AskError> {
    let mut object = match params {
        Some(raw) => serde_json::from_str::<serde_json::Map<String, Value>>(raw.get())
            .map_err(|e| AskError::InvalidRequest(e.to_string()))?,
        None => serde_json::Map::new(),
    };
    let meta = object
        .entry("_meta")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(
            RELATED_TASK_META.to_owned(),
            serde_json::json!({ "taskId": task }),
        );
    }
    mcp_jsonrpc::to_raw(&object).map_err(|e| AskError::InvalidRequest(e.to_string()))
}

/// Counts a request of a session-era task as outstanding while it lives.
struct Outstanding(Arc<TaskRecord>);

impl Outstanding {
    fn new(task: Arc<TaskRecord>) -> Self {
        task.forwarded_ask();
        Self(task)
    }
}

impl Drop for Outstanding {
    fn drop(&mut self) {
        self.0.forwarded_answer();
    }
}

fn encode(answer: &InputResponse) -> Result<Box<RawValue>, AskError> {
    mcp_jsonrpc::to_raw(answer).map_err(|e| AskError::InvalidResponse(e.to_string()))
}

/// Waits for the answer to an ask, or for the task's cancellation.
async fn answer(
    rx: oneshot::Receiver<InputResponse>,
    cancel: CancellationToken,
) -> Result<InputResponse, AskError> {
    tokio::select! {
        r = rx => r.map_err(|_| AskError::Cancelled),
        () = cancel.cancelled() => Err(AskError::Cancelled),
    }
}

impl TaskChannel {
    /// A channel in the request phase; `start` reaches the request when the handler asks to
    /// become a task.
    pub(crate) fn new(
        inner: Arc<dyn ClientChannel>,
        capabilities: ClientCapabilities,
        start: oneshot::Sender<StartTask>,
    ) -> Self {
        Self {
            inner,
            capabilities,
            phase: Mutex::new(Phase::Request(Some(start))),
            forward: false,
            detached: None,
        }
    }

    /// The channel of a 2025-11-25 task, whose asks and notifications stay on the session.
    pub(crate) fn forwarding(mut self) -> Self {
        self.forward = true;
        self.detached = self.inner.detached();
        self
    }

    /// Where a task's asks and notifications go (2025-11-25).
    fn session(&self) -> &Arc<dyn ClientChannel> {
        self.detached.as_ref().unwrap_or(&self.inner)
    }

    fn phase(&self) -> MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn task(&self) -> Option<Arc<TaskRecord>> {
        match &*self.phase() {
            Phase::Task(task) => Some(Arc::clone(task)),
            Phase::Request(_) => None,
        }
    }

    /// The request created the task: from now on the call runs as it.
    pub(crate) fn became(&self, task: Arc<TaskRecord>) {
        *self.phase() = Phase::Task(task);
    }
}

impl ClientChannel for TaskChannel {
    fn request(
        &self,
        key: &str,
        ask: Outgoing,
        cancel: &CancellationToken,
    ) -> BoxFuture<'static, Result<Box<RawValue>, AskError>> {
        let Some(task) = self.task() else {
            return self.inner.request(key, ask, cancel);
        };
        if self.forward {
            let Outgoing {
                method,
                params,
                request,
            } = ask;
            let params = match related(params, &task.id) {
                Ok(params) => params,
                Err(e) => return Box::pin(std::future::ready(Err(e))),
            };
            let outstanding = Outstanding::new(task);
            let ask = Outgoing {
                method,
                params: Some(params),
                request,
            };
            let call = self.session().request(key, ask, cancel);
            return Box::pin(async move {
                let answer = call.await;
                drop(outstanding);
                answer
            });
        }
        let asked = task.ask(key, ask.request);
        match asked {
            Err(e) => Box::pin(std::future::ready(Err(e))),
            Ok(Asked::Answered(a)) => Box::pin(std::future::ready(encode(&a))),
            Ok(Asked::Wait(rx)) => {
                let cancel = cancel.clone();
                Box::pin(async move { encode(&answer(rx, cancel).await?) })
            }
        }
    }

    fn notify(&self, method: &'static str, params: Box<RawValue>) -> BoxFuture<'static, ()> {
        let Some(task) = self.task() else {
            return self.inner.notify(method, params);
        };
        if self.forward {
            return match related(Some(params), &task.id) {
                Ok(params) => self.session().notify(method, params),
                Err(e) => {
                    tracing::debug!(%method, error = %e, "notification not sent");
                    Box::pin(std::future::ready(()))
                }
            };
        }
        tracing::debug!(%method, "not sent: a task has no stream for notifications");
        Box::pin(std::future::ready(()))
    }

    fn missing_capability(&self, path: &'static str) {
        if self.forward || self.task().is_none() {
            self.inner.missing_capability(path);
        }
    }

    fn input_response(&self, key: &str) -> Option<InputResponse> {
        match self.task() {
            Some(task) => task
                .answer(key)
                .or_else(|| self.detached.as_ref()?.input_response(key))
                .or_else(|| self.inner.input_response(key)),
            None => self.inner.input_response(key),
        }
    }

    fn input_state(&self) -> Option<Value> {
        match self.task() {
            Some(task) => task
                .explicit_state()
                .or_else(|| self.detached.as_ref()?.input_state())
                .or_else(|| self.inner.input_state()),
            None => self.inner.input_state(),
        }
    }

    fn input_required(
        &self,
        ask: InputRequired,
        scope: &Arc<ClientScope>,
        cancel: &CancellationToken,
    ) -> BoxFuture<'static, Result<Resume, ErrorObject>> {
        let Some(task) = self.task() else {
            return self.inner.input_required(ask, scope, cancel);
        };
        if self.forward {
            let outstanding = Outstanding::new(task);
            let asked = self.session().input_required(ask, scope, cancel);
            return Box::pin(async move {
                let resume = asked.await;
                drop(outstanding);
                resume
            });
        }
        let (requests, state) = ask.into_parts();
        let mut waits = Vec::new();
        let prepared = (|| {
            task.explicit_round(state)
                .map_err(ErrorObject::invalid_params)?;
            for (key, request) in requests {
                let kind = InputKind::of(&request);
                if !kind.declared_by(&self.capabilities) {
                    return Err(rpc_error(wire::missing_capability(
                        &kind.required_capabilities(),
                    )));
                }
                match task.ask(&key, request) {
                    Ok(Asked::Answered(_)) => {}
                    Ok(Asked::Wait(rx)) => waits.push(rx),
                    Err(e) => return Err(e.to_error_object()),
                }
            }
            Ok(())
        })();
        if let Err(e) = prepared {
            return Box::pin(std::future::ready(Err(e)));
        }
        let cancel = cancel.clone();
        Box::pin(async move {
            for rx in waits {
                answer(rx, cancel.clone())
                    .await
                    .map_err(|e| e.to_error_object())?;
            }
            Ok(Resume::Replay)
        })
    }

    fn take_pending(&self) -> Option<InputRequired> {
        match self.task() {
            Some(_) if !self.forward => None,
            Some(_) => self.session().take_pending(),
            None => self.inner.take_pending(),
        }
    }

    fn records_asks(&self) -> bool {
        self.inner.records_asks()
    }

    fn start_task(&self) -> BoxFuture<'static, bool> {
        let start = match &mut *self.phase() {
            Phase::Task(_) => return Box::pin(std::future::ready(true)),
            Phase::Request(start) => start.take(),
        };
        let Some(start) = start else {
            // Asked before and refused: the request is over and this handler is being dropped.
            return Box::pin(std::future::pending());
        };
        Box::pin(async move {
            let (ack, answer) = oneshot::channel();
            if start.send(StartTask(ack)).is_err() {
                return false;
            }
            match answer.await {
                Ok(Some(_)) => true,
                // No task: the request answered otherwise and drops this handler.
                Ok(None) | Err(_) => std::future::pending().await,
            }
        })
    }

    fn task_id(&self) -> Option<String> {
        self.task().map(|t| t.id.to_string())
    }

    fn task_status(&self, message: &str) -> bool {
        match self.task() {
            Some(task) => {
                task.set_message(message);
                // A session-era task still sends its progress notifications.
                !self.forward
            }
            None => false,
        }
    }
}
