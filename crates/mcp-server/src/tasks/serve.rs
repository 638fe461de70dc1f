//! Serving the tasks extension on the stateless revision: a `tools/call` that may become a
//! task, and `tasks/get`, `tasks/update` and `tasks/cancel`.

use std::sync::{Arc, Weak};

use mcp_jsonrpc::{ErrorObject, RawJson};
use mcp_types::wire::tasks::{
    CreateTaskResult, DetailedTask, METHOD_CANCEL, METHOD_GET, METHOD_UPDATE, TaskIdParams,
    UpdateTaskParams,
};
use mcp_types::wire::{self, ResultType, TASKS_EXTENSION};
use mcp_types::{ClientCapabilities, JsonObject, ProtocolVersion};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::{JoinError, JoinHandle};
use tokio_util::sync::CancellationToken;

use super::TaskSupport;
use super::channel::{StartTask, TaskChannel};
use super::store::{InputLimits, Outcome, Placement, TaskRecord, TaskStore};
use crate::context::{ClientChannel, ClientScope};
use crate::dispatch::{Origin, dispatch};
use crate::error::rpc_error;
use crate::handler::Request;
use crate::server::Server;

type JobResult = Result<RawJson, ErrorObject>;

fn internal(e: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::internal_error(e)
}

/// Whether a `tools/call` may become a task: the tool supports tasks and the request declared
/// the extension. A tool that requires a task refuses a request that did not with `-32021`.
pub(crate) fn eligible(
    server: &Server,
    method: &str,
    name: Option<&str>,
    capabilities: &ClientCapabilities,
) -> Result<bool, ErrorObject> {
    if method != "tools/call" {
        return Ok(false);
    }
    let Some(name) = name else {
        return Ok(false);
    };
    let support = match server.inner.registry.snapshot().tool(name) {
        Some(entry) => entry.tasks.support,
        None => return Ok(false),
    };
    if support == TaskSupport::Forbidden {
        return Ok(false);
    }
    if wire::declares_extension(capabilities, TASKS_EXTENSION) {
        return Ok(true);
    }
    match support {
        TaskSupport::Required => Err(rpc_error(wire::missing_extension(TASKS_EXTENSION))),
        _ => Ok(false),
    }
}

/// Aborts a spawned job when dropped, unless disarmed.
struct AbortOnDrop(Option<JoinHandle<JobResult>>);

impl AbortOnDrop {
    fn handle(&mut self) -> Option<&mut JoinHandle<JobResult>> {
        self.0.as_mut()
    }

    fn disarm(&mut self) -> Option<JoinHandle<JobResult>> {
        self.0.take()
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(job) = self.0.take() {
            job.abort();
        }
    }
}

fn joined(r: Result<JobResult, JoinError>) -> JobResult {
    match r {
        Ok(result) => result,
        Err(e) => {
            if e.is_panic() {
                tracing::error!("a tool handler panicked");
            }
            Err(internal("the request handler failed"))
        }
    }
}

/// How a call that may become a task went.
pub(crate) enum Ran {
    /// It finished as part of the request (or the request ends otherwise): answer as for any
    /// call.
    Finished(JobResult),
    /// It runs on as this task: answer with a `CreateTaskResult`.
    Task(Arc<TaskRecord>),
}

/// Which form of task a call may become.
#[derive(Clone)]
pub(crate) enum Form {
    /// The extension of 2026-07-28: asks park the task until `tasks/update`.
    Extension,
    /// 2025-11-25: the task belongs to its session, which its asks and notifications reach;
    /// it lives for `ttl` at most (the store's time to live when longer or absent). With `key`
    /// (the session's id, when the store is shared) other replicas find it too.
    Session {
        ttl: Option<std::time::Duration>,
        key: Option<Arc<str>>,
    },
}

/// The limits on the input one task may ask for.
pub(crate) fn input_limits(server: &Server) -> InputLimits {
    let o = &server.inner.options;
    InputLimits {
        max_pending: o.max_input_requests,
        max_keys: o
            .max_input_requests
            .saturating_mul(usize::from(o.max_input_rounds)),
        max_rounds: o.max_input_rounds,
    }
}

/// Runs a call that may become a task. The handler runs on a task of its own from the start;
/// until it asks to become a task it is part of the request (its context is cancelled with the
/// request, its asks go to `channel`). When it asks, the task is created (unless `blocked()`:
/// the request still waits for answers of its own, or the store is full) and the request is
/// answered, while the handler runs on under a supervisor that records its outcome.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_as(
    server: &Server,
    request_cancel: &CancellationToken,
    scope: Arc<ClientScope>,
    channel: Arc<dyn ClientChannel>,
    request: Request,
    owner: Option<String>,
    // `dyn`: the state machine of this function is compiled once, not once per caller.
    blocked: &(dyn Fn() -> bool + Send + Sync),
    form: Form,
) -> Ran {
    let inner = &server.inner;
    let (start, mut started) = oneshot::channel::<StartTask>();
    let (placement, session_channel) = match form {
        Form::Extension => (
            Placement {
                shared: true,
                ..Placement::default()
            },
            None,
        ),
        Form::Session { ttl, key } => (
            Placement {
                session: Some(Arc::clone(&scope)),
                ttl,
                shared: key.is_some(),
                session_key: key,
            },
            Some(channel.detached().unwrap_or_else(|| Arc::clone(&channel))),
        ),
    };
    let mut task_channel = TaskChannel::new(channel, scope.capabilities.clone(), start);
    if session_channel.is_some() {
        task_channel = task_channel.forwarding();
    }
    let task_channel = Arc::new(task_channel);
    let cancel = CancellationToken::new();
    let version = scope.version;
    let origin = Origin {
        scope,
        channel: Arc::clone(&task_channel) as Arc<dyn ClientChannel>,
        cancel: cancel.clone().into(),
        subscriptions: None,
    };
    let job_server = server.clone();
    let mut job = AbortOnDrop(Some(tokio::spawn(async move {
        dispatch(&job_server, origin, request).await
    })));
    // Until the call becomes a task, the handler is cancelled with the request.
    let mut link = Some(cancel.clone().drop_guard());
    let mut asking = true;
    loop {
        let Some(handle) = job.handle() else {
            return Ran::Finished(Err(internal("the call ended")));
        };
        tokio::select! {
            biased;
            r = handle => {
                job.disarm();
                return Ran::Finished(joined(r));
            }
            () = request_cancel.cancelled() => {
                return Ran::Finished(Err(internal("the request was cancelled")));
            }
            asked = &mut started, if asking => {
                let Ok(StartTask(ack)) = asked else {
                    // The handler's channel is gone; its result is on the way.
                    asking = false;
                    continue;
                };
                if blocked() {
                    // The request asked for input of its own: it answers input_required.
                    let _ = ack.send(None);
                    return Ran::Finished(Err(internal("the request is waiting for client input")));
                }
                let limits = input_limits(server);
                let task = match inner.tasks.create_in(owner, cancel.clone(), limits, placement) {
                    Ok(task) => task,
                    Err(e) => {
                        tracing::warn!(error = %e, "no task created");
                        let _ = ack.send(None);
                        return Ran::Finished(Err(internal(e)));
                    }
                };
                if task.is_shared() {
                    // Stored before the call is answered: the next request may reach any
                    // replica.
                    if let Err(e) = super::shared::publish(&inner.tasks, &task).await {
                        tracing::warn!(error = %e, "no task created");
                        inner.tasks.remove(&task.id);
                        let _ = ack.send(None);
                        return Ran::Finished(Err(internal(e)));
                    }
                }
                task_channel.became(Arc::clone(&task));
                if let Some(link) = link.take() {
                    link.disarm();
                }
                if let Some(handle) = job.disarm() {
                    tokio::spawn(supervise(
                        Arc::downgrade(&inner.tasks),
                        inner.tasks.closed(),
                        Arc::clone(&task),
                        handle,
                        version,
                        session_channel,
                    ));
                }
                tracing::debug!(task = %task.id, "call continues as a task");
                let _ = ack.send(Some(Arc::clone(&task)));
                return Ran::Task(task);
            }
        }
    }
}

/// The error a task failed with, as the revision numbers it.
fn model_error(e: ErrorObject, version: ProtocolVersion) -> mcp_types::RpcError {
    mcp_types::RpcError {
        code: wire::lower_error_code(e.code, version),
        data: e
            .data
            .as_deref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok()),
        message: e.message,
    }
}

/// What a finished handler leaves in its task: the result as a `tools/call` of the revision
/// answers it (`resultType: "complete"` in the stateless revision), or the JSON-RPC error.
pub(crate) fn outcome(result: JobResult, version: ProtocolVersion) -> Outcome {
    let raw = match result {
        Ok(raw) => raw,
        Err(e) => return Outcome::Failed(model_error(e, version)),
    };
    let stateless = version.is_stateless();
    let lowered = serde_json::from_str::<JsonObject>(raw.get())
        .map_err(|e| e.to_string())
        .and_then(|mut map| {
            if stateless {
                wire::lower_result("tools/call", &mut map, ResultType::Complete, None, None)
                    .map_err(|e| e.to_string())?;
            }
            Ok(map)
        });
    match lowered {
        Ok(map) => Outcome::Completed(map),
        Err(e) => Outcome::Failed(model_error(internal(e), version)),
    }
}

/// Watches a task's handler: records its outcome, stops it on `tasks/cancel` and at expiry,
/// and forgets the task when its time to live is over. A task of 2025-11-25 (`session` is its
/// session's channel) ends `failed` on a tool error, and its end is announced with
/// `notifications/tasks/status`.
async fn supervise(
    store: Weak<TaskStore>,
    closed: CancellationToken,
    task: Arc<TaskRecord>,
    mut job: JoinHandle<JobResult>,
    version: ProtocolVersion,
    session: Option<Arc<dyn ClientChannel>>,
) {
    let expiry = tokio::time::sleep_until(task.expires_at);
    tokio::pin!(expiry);
    tokio::select! {
        biased;
        () = closed.cancelled() => {
            job.abort();
            return;
        }
        () = &mut expiry => {
            job.abort();
            task.expire();
            if let Some(store) = store.upgrade() {
                store.remove(&task.id);
            }
            return;
        }
        () = task.cancel.cancelled() => {
            job.abort();
            task.cancel();
        }
        r = &mut job => {
            let ended = outcome(joined(r), version);
            if session.is_some() {
                task.finish_session(ended);
            } else {
                task.finish(ended);
            }
        }
    }
    tracing::debug!(task = %task.id, status = %task.status(), "task ended");
    if let Some(channel) = &session {
        super::session::announce(channel.as_ref(), &task).await;
    }
    tokio::select! {
        () = closed.cancelled() => {}
        () = &mut expiry => {}
    }
    if let Some(store) = store.upgrade() {
        store.remove(&task.id);
    }
}

/// Lowers a result of the extension to the stateless wire.
fn lower(
    server: &Server,
    method: &str,
    value: Value,
    kind: ResultType,
) -> Result<RawJson, ErrorObject> {
    let Value::Object(mut map) = value else {
        return Err(internal("a task result is not an object"));
    };
    wire::lower_result(method, &mut map, kind, Some(&server.inner.info), None).map_err(internal)?;
    RawJson::serialize(&map).map_err(internal)
}

/// The `CreateTaskResult` that answers the call that became `task`.
pub(crate) fn created(server: &Server, task: &TaskRecord) -> Result<RawJson, ErrorObject> {
    let value = serde_json::to_value(CreateTaskResult::from(task.task())).map_err(internal)?;
    lower(server, "tools/call", value, ResultType::Task)
}

/// `task` as the JSON object the stateless wire lowers or sends (`tasks/get`,
/// `notifications/tasks/status`): the same object `serde_json::to_value` makes of it.
///
/// Built member by member so that the outstanding input requests, the one large part, go
/// through their text form, which the crate writes for `input_required` results anyway,
/// rather than instantiating a second serializer (into `Value`) for every request type.
pub(crate) fn detailed_json(task: DetailedTask) -> Result<Value, serde_json::Error> {
    let DetailedTask {
        task,
        input_requests,
        result,
        error,
        ..
    } = task;
    let Value::Object(mut map) = serde_json::to_value(&task)? else {
        return Err(serde::ser::Error::custom("a task is not a JSON object"));
    };
    if let Some(requests) = input_requests {
        let raw = mcp_jsonrpc::to_raw(&requests)?;
        map.insert("inputRequests".into(), serde_json::from_str(raw.get())?);
    }
    if let Some(result) = result {
        map.insert("result".into(), Value::Object(result));
    }
    if let Some(error) = error {
        map.insert("error".into(), serde_json::to_value(&error)?);
    }
    Ok(Value::Object(map))
}

/// Whether the server serves the extension (declares it in its capabilities).
pub(crate) fn served(server: &Server) -> bool {
    server
        .inner
        .handler
        .capabilities()
        .extensions
        .is_some_and(|e| e.contains_key(TASKS_EXTENSION))
}

/// The task id and, for `tasks/update`, the answers of a tasks method; refused when the server
/// does not serve the extension or the request did not declare it.
fn parse(
    server: &Server,
    method: &str,
    params: Option<&Value>,
    capabilities: &ClientCapabilities,
) -> Result<(String, Option<std::collections::BTreeMap<String, Value>>), ErrorObject> {
    if !served(server) {
        return Err(ErrorObject::method_not_found(method));
    }
    if !wire::declares_extension(capabilities, TASKS_EXTENSION) {
        return Err(rpc_error(wire::missing_extension(TASKS_EXTENSION)));
    }
    let params = params.cloned().unwrap_or(Value::Null);
    if method == METHOD_UPDATE {
        let p: UpdateTaskParams =
            serde_json::from_value(params).map_err(ErrorObject::invalid_params)?;
        Ok((p.task_id, Some(p.input_responses)))
    } else {
        let p: TaskIdParams =
            serde_json::from_value(params).map_err(ErrorObject::invalid_params)?;
        Ok((p.task_id, None))
    }
}

/// `tasks/get`, `tasks/update` and `tasks/cancel` of a stateless request.
///
/// `-32601` when the server does not serve the extension, `-32021` when the request did not
/// declare it, `-32602` for malformed params and for a task that does not exist, has expired or
/// belongs to another caller (the three are indistinguishable).
pub(crate) fn handle(
    server: &Server,
    method: &str,
    params: Option<&Value>,
    capabilities: &ClientCapabilities,
    owner: Option<&str>,
) -> Result<RawJson, ErrorObject> {
    let (id, responses) = parse(server, method, params, capabilities)?;
    let Some(task) = server.inner.tasks.get(&id, owner) else {
        return Err(ErrorObject::invalid_params(format!("unknown task: {id}")));
    };
    let value = match (method, responses) {
        (METHOD_GET, _) => detailed_json(task.detailed()).map_err(internal)?,
        (METHOD_UPDATE, Some(responses)) => {
            task.update(responses).map_err(rpc_error)?;
            Value::Object(JsonObject::new())
        }
        (METHOD_CANCEL, _) => {
            task.cancel();
            Value::Object(JsonObject::new())
        }
        _ => return Err(ErrorObject::method_not_found(method)),
    };
    lower(server, method, value, ResultType::Complete)
}

/// [`handle`] on a server whose tasks of the extension are shared between replicas: the task
/// is read from the shared backend, its answers and cancellation reach the replica running it.
pub(crate) async fn handle_shared(
    server: &Server,
    method: &str,
    params: Option<&Value>,
    capabilities: &ClientCapabilities,
    owner: Option<&str>,
) -> Result<RawJson, ErrorObject> {
    let store = &server.inner.tasks;
    let (id, responses) = parse(server, method, params, capabilities)?;
    let finder = super::shared::Finder {
        owner,
        session: None,
    };
    let value = match (method, responses) {
        (METHOD_GET, _) => {
            let task = super::shared::get(store, &id, finder).await?;
            detailed_json(task.detailed).map_err(internal)?
        }
        (METHOD_UPDATE, Some(responses)) => {
            super::shared::update(store, &id, owner, responses).await?;
            Value::Object(JsonObject::new())
        }
        (METHOD_CANCEL, _) => {
            // Cancelling a task that ended is acknowledged too.
            let _ = super::shared::cancel(store, &id, finder, None).await?;
            Value::Object(JsonObject::new())
        }
        _ => return Err(ErrorObject::method_not_found(method)),
    };
    lower(server, method, value, ResultType::Complete)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NoArgs, Server, Tool, ToolContext};
    use mcp_types::Implementation;
    use serde_json::json;

    fn caps(v: Value) -> ClientCapabilities {
        serde_json::from_value(v).unwrap()
    }

    fn server() -> Server {
        let ok = |_cx: ToolContext, _a: NoArgs| async { "ok" };
        Server::builder(Implementation::new("t", "1"))
            .tool(Tool::new("plain"), ok)
            .tool(
                Tool::new("optional").task_support(TaskSupport::Optional),
                ok,
            )
            .tool(
                Tool::new("required").task_support(TaskSupport::Required),
                ok,
            )
            .build()
            .unwrap()
    }

    #[test]
    fn a_detailed_task_is_the_object_to_value_makes() {
        let task: DetailedTask = serde_json::from_value(json!({
            "taskId": "t1",
            "status": "input_required",
            "statusMessage": "waiting",
            "createdAt": "2026-01-01T00:00:00Z",
            "lastUpdatedAt": "2026-01-01T00:00:01Z",
            "ttlMs": null,
            "pollIntervalMs": 500,
            "inputRequests": {
                "ask": {"method": "elicitation/create", "params": {
                    "mode": "form", "message": "n?",
                    "requestedSchema": {"type": "object", "properties": {
                        "n": {"type": "number", "minimum": 1.5, "description": "a number"}
                    }}
                }},
                "llm": {"method": "sampling/createMessage", "params": {
                    "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                    "maxTokens": 10,
                    "temperature": 0.25,
                    "tools": [{"name": "t", "inputSchema": {
                        "type": "object", "additionalProperties": false, "$defs": {}
                    }}]
                }},
                "roots": {"method": "roots/list"}
            },
            "result": {"content": [], "z": 1, "a": [1.0, 2e40]},
            "error": {"code": -32000, "message": "failed", "data": {"why": "x"}}
        }))
        .unwrap();
        let expected = serde_json::to_value(&task).unwrap();
        let got = detailed_json(task).unwrap();
        assert_eq!(got, expected);
        assert_eq!(
            mcp_jsonrpc::to_raw(&got).unwrap().get(),
            mcp_jsonrpc::to_raw(&expected).unwrap().get()
        );
        let plain: DetailedTask = serde_json::from_value(json!({
            "taskId": "t2", "status": "working", "createdAt": "c", "lastUpdatedAt": "l",
            "ttlMs": 1000
        }))
        .unwrap();
        assert_eq!(
            detailed_json(plain.clone()).unwrap(),
            serde_json::to_value(&plain).unwrap()
        );
    }

    #[test]
    fn which_calls_may_become_tasks() {
        let s = server();
        let with = caps(json!({"extensions": {TASKS_EXTENSION: {}}}));
        let without = caps(json!({"sampling": {}}));
        for (method, name, caps, may) in [
            ("tools/call", Some("optional"), &with, true),
            ("tools/call", Some("optional"), &without, false),
            ("tools/call", Some("required"), &with, true),
            ("tools/call", Some("plain"), &with, false),
            ("tools/call", Some("unknown"), &with, false),
            ("tools/call", None, &with, false),
            ("prompts/get", Some("required"), &without, false),
        ] {
            assert_eq!(
                eligible(&s, method, name, caps),
                Ok(may),
                "{method} {name:?}"
            );
        }
        let e = eligible(&s, "tools/call", Some("required"), &without).unwrap_err();
        assert_eq!(
            e.code,
            mcp_types::error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY
        );
        assert!(served(&s));
        let bare = Server::builder(Implementation::new("t", "1"))
            .build()
            .unwrap();
        assert!(!served(&bare));
    }

    #[test]
    fn outcomes_are_lowered_for_the_revision() {
        let v = ProtocolVersion::V2026_07_28;
        let raw = RawJson::serialize(&json!({"content": [], "isError": true})).unwrap();
        let Outcome::Completed(map) = outcome(Ok(raw), v) else {
            panic!("a result completes")
        };
        assert_eq!(map["resultType"], "complete");
        assert_eq!(map["isError"], true);
        // Resource not found does not exist in 2026-07-28: -32602, data kept.
        let e = crate::resource_not_found("test://x");
        let Outcome::Failed(e) = outcome(Err(e), v) else {
            panic!("an error fails")
        };
        assert_eq!(e.code, mcp_types::error_codes::INVALID_PARAMS);
        assert_eq!(e.data, Some(json!({"uri": "test://x"})));
        let not_an_object = RawJson::serialize(&json!([1])).unwrap();
        assert!(matches!(outcome(Ok(not_an_object), v), Outcome::Failed(_)));
    }

    #[tokio::test]
    async fn a_panicking_handler_fails_the_call() {
        let job: JoinHandle<JobResult> = tokio::spawn(async { panic!("on purpose") });
        let e = joined(job.await).unwrap_err();
        assert_eq!(e.code, mcp_types::error_codes::INTERNAL_ERROR);
    }
}
