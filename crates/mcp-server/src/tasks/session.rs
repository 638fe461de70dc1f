//! Tasks as 2025-11-25 has them, on that revision's sessions: a `tools/call` whose params carry
//! `task: {ttl}` is answered at once with a `CreateTaskResult` (`{task: {...}}`), and the task
//! is followed with `tasks/get`, its result read with `tasks/result` (which waits for the end),
//! the session's tasks listed with `tasks/list` and stopped with `tasks/cancel`.
//!
//! The tasks live in the same store as those of the extension and run the same handlers. A
//! task belongs to the session that created it (and to its caller, when requests name one):
//! another session does not find it. Its asks for input are requests on the session, tied to
//! the task by the `io.modelcontextprotocol/related-task` `_meta`; the task is `input_required`
//! while one waits. Its end is announced with `notifications/tasks/status`.

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use mcp_jsonrpc::{ErrorObject, RawJson, codes};
use mcp_types::methods;
use mcp_types::wire::tasks::{
    METHOD_CANCEL, METHOD_GET, METHOD_LIST, METHOD_RESULT, NOTIFICATION_SESSION_STATUS,
    RELATED_TASK_META,
};
use mcp_types::{CreateTaskResult, JsonObject, ListTasksResult, ProtocolVersion};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::TaskSupport;
use super::serve::{Form, Ran, input_limits, outcome, run_as};
use super::store::{Placement, TaskRecord};
use crate::context::{BoxFuture, ClientChannel, ClientScope};
use crate::dispatch::Origin;
use crate::handler::Request;
use crate::server::Server;

/// Marks the request a task's handler runs with: it is not intercepted again.
#[derive(Clone, Copy)]
struct TaskJob;

/// What [`intercept`] made of a request.
pub(crate) enum Intercept<'a> {
    /// Not a matter of tasks: dispatch it as usual.
    Pass(Origin<'a>, Request),
    /// Served here.
    Answer(BoxFuture<'a, Result<RawJson, ErrorObject>>),
}

/// Whether `version` has the tasks of 2025-11-25 (the method tables say so).
fn has_tasks(version: ProtocolVersion) -> bool {
    methods::lookup(METHOD_GET).is_some_and(|m| m.available_in(version))
}

/// Whether the server declares the tasks capability with task-augmented `tools/call` (the
/// builder's router does when tasks are enabled).
pub(crate) fn served(server: &Server) -> bool {
    server
        .inner
        .handler
        .capabilities()
        .tasks
        .and_then(|t| t.requests)
        .and_then(|r| r.tools)
        .is_some_and(|t| t.call.is_some())
}

/// The parts of `tools/call` params that decide whether the call is a task.
#[derive(Deserialize)]
struct TaskCall<'a> {
    #[serde(borrow)]
    name: std::borrow::Cow<'a, str>,
    #[serde(default)]
    task: Option<TaskParams>,
}

#[derive(Deserialize)]
struct TaskParams {
    #[serde(default)]
    ttl: Option<i64>,
}

#[derive(Deserialize)]
struct TaskIdParams {
    #[serde(rename = "taskId")]
    task_id: String,
}

#[derive(Deserialize, Default)]
struct ListParams {
    #[serde(default)]
    cursor: Option<String>,
}

fn params<'a, T: Deserialize<'a>>(raw: Option<&'a RawValue>) -> Result<T, ErrorObject> {
    serde_json::from_str(raw.map_or("{}", RawValue::get)).map_err(ErrorObject::invalid_params)
}

fn internal(e: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::internal_error(e)
}

/// Takes the requests of a 2025-11-25 session that concern tasks: a `tools/call` asking for a
/// task (or refused for want of one) and the tasks methods. Everything else passes.
pub(crate) fn intercept<'a>(
    server: &'a Server,
    origin: Origin<'a>,
    request: Request,
) -> Intercept<'a> {
    let version = origin.scope.version;
    if !has_tasks(version) || request.extensions.get::<TaskJob>().is_some() {
        return Intercept::Pass(origin, request);
    }
    match request.method.as_str() {
        "tools/call" => tools_call(server, origin, request),
        METHOD_GET | METHOD_RESULT | METHOD_LIST | METHOD_CANCEL => {
            Intercept::Answer(Box::pin(method(server, origin.scope, request)))
        }
        _ => Intercept::Pass(origin, request),
    }
}

/// A `tools/call`: a task when it asks for one and the tool allows it. A tool that does not
/// support tasks refuses a call asking for one, and one that requires a task a call without,
/// both with `-32601`, as the revision says. A server that does not declare tasks ignores the
/// `task` member.
fn tools_call<'a>(server: &'a Server, origin: Origin<'a>, request: Request) -> Intercept<'a> {
    let Ok(call) = params::<TaskCall<'_>>(request.params.as_deref()) else {
        // Malformed: dispatch explains.
        return Intercept::Pass(origin, request);
    };
    let support = server
        .inner
        .registry
        .snapshot()
        .tool(&call.name)
        .map(|t| t.tasks.support);
    let asked = call.task.as_ref().map(|t| t.ttl);
    let name = call.name.into_owned();
    let Some(support) = support else {
        return Intercept::Pass(origin, request);
    };
    if (asked.is_none() && support != TaskSupport::Required) || !served(server) {
        return Intercept::Pass(origin, request);
    }
    let Some(ttl) = asked else {
        return Intercept::Answer(Box::pin(std::future::ready(Err(ErrorObject::new(
            codes::METHOD_NOT_FOUND,
            format!("tool {name} runs only as a task: call it with `task` in its params"),
        )))));
    };
    if support == TaskSupport::Forbidden {
        return Intercept::Answer(Box::pin(std::future::ready(Err(ErrorObject::new(
            codes::METHOD_NOT_FOUND,
            format!("tool {name} does not run as a task"),
        )))));
    }
    let ttl = ttl
        .and_then(|ms| u64::try_from(ms).ok())
        .map(Duration::from_millis);
    Intercept::Answer(Box::pin(start(server, origin, request, ttl)))
}

/// Runs the call as a task: answered with its `CreateTaskResult` once it is one.
async fn start(
    server: &Server,
    origin: Origin<'_>,
    mut request: Request,
    ttl: Option<Duration>,
) -> Result<RawJson, ErrorObject> {
    let owner = server.subject(&request.extensions);
    let key = shared_session(server, &request.extensions).map(Arc::<str>::from);
    let scope = Arc::clone(&origin.scope);
    let version = scope.version;
    let request_cancel = origin.cancel.token().clone();
    request.extensions.insert(TaskJob);
    let ran = run_as(
        server,
        &request_cancel,
        Arc::clone(&scope),
        origin.channel,
        request,
        owner.clone(),
        &|| false,
        Form::Session {
            ttl,
            key: key.clone(),
        },
    )
    .await;
    let task = match ran {
        Ran::Task(task) => task,
        Ran::Finished(result) => {
            // The handler answered before it became a task (one that starts its task itself
            // and did not): the client asked for a task, so it gets one, ended already.
            if request_cancel.is_cancelled() {
                return result;
            }
            let placement = Placement {
                session: Some(scope),
                ttl,
                shared: key.is_some(),
                session_key: key,
            };
            let limits = input_limits(server);
            let Ok(task) =
                server
                    .inner
                    .tasks
                    .create_in(owner, CancellationToken::new(), limits, placement)
            else {
                return result;
            };
            task.finish_session(outcome(result, version));
            if let Err(e) = super::shared::publish(&server.inner.tasks, &task).await {
                server.inner.tasks.remove(&task.id);
                return Err(internal(e));
            }
            task
        }
    };
    created(&task, version)
}

/// The id of the session a request arrived on, when the server's tasks are shared and the
/// transport names the session (the Streamable HTTP transport does, feature `http`); `None`
/// keeps the session's tasks on this replica.
fn shared_session(server: &Server, extensions: &mcp_jsonrpc::Extensions) -> Option<String> {
    server.inner.tasks.shared()?;
    #[cfg(feature = "http")]
    {
        extensions
            .get::<mcp_transport_http::server::SessionId>()
            .map(|id| id.0.clone())
    }
    #[cfg(not(feature = "http"))]
    {
        let _ = extensions;
        None
    }
}

/// The `CreateTaskResult` of 2025-11-25: the task under `task`.
fn created(task: &TaskRecord, version: ProtocolVersion) -> Result<RawJson, ErrorObject> {
    let result = CreateTaskResult {
        meta: None,
        task: task.task().into(),
    };
    crate::dispatch::encode(result, version)
}

/// A task as 2025-11-25 shows it (the result of `tasks/get` and `tasks/cancel`).
fn shown(task: &TaskRecord) -> Result<RawJson, ErrorObject> {
    shown_task(task.task())
}

fn shown_task(task: mcp_types::wire::tasks::Task) -> Result<RawJson, ErrorObject> {
    RawJson::serialize(&mcp_types::Task::from(task)).map_err(internal)
}

fn not_cancellable(status: mcp_types::wire::tasks::TaskStatus) -> ErrorObject {
    ErrorObject::new(
        codes::INVALID_PARAMS,
        format!("Cannot cancel task: already in terminal status '{status}'"),
    )
}

/// [`method`] on a server whose tasks are shared: the session's tasks as the shared backend
/// has them.
async fn shared_method(
    server: &Server,
    session: &str,
    owner: Option<&str>,
    request: &Request,
) -> Result<RawJson, ErrorObject> {
    use super::shared::{self, Finder};
    let store = &server.inner.tasks;
    let finder = Finder {
        owner,
        session: Some(session),
    };
    let raw = request.params.as_deref();
    if request.method == METHOD_LIST {
        let p: ListParams = params(raw)?;
        let tasks = shared::list(store, finder).await?;
        let entries = tasks
            .into_iter()
            .map(|t| (nanos(t.created), t.detailed.task))
            .collect();
        return page(server, entries, p.cursor.as_deref());
    }
    let p: TaskIdParams = params(raw)?;
    let id = p.task_id.as_str();
    let task = match request.method.as_str() {
        METHOD_GET => shared::get(store, id, finder).await,
        METHOD_CANCEL => {
            let message = Some("The task was cancelled by request.");
            let cancelled = shared::cancel(store, id, finder, message).await;
            match cancelled {
                Ok(Ok(task)) => Ok(task),
                Ok(Err(ended)) => return Err(not_cancellable(ended.status())),
                Err(e) => Err(e),
            }
        }
        _ => {
            let task = shared::until_ended(store, id, finder).await?;
            let detailed = task.detailed;
            return ended_answer(id, detailed.task.status, detailed.result, detailed.error);
        }
    }
    .map_err(|e| {
        if e.code == codes::INVALID_PARAMS {
            not_found(id)
        } else {
            e
        }
    })?;
    shown_task(task.detailed.task)
}

fn not_found(id: &str) -> ErrorObject {
    ErrorObject::new(
        codes::INVALID_PARAMS,
        format!("Failed to retrieve task: task {id} not found"),
    )
}

/// `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` of a session.
///
/// `-32601` when the server does not declare tasks; `-32602` for malformed params, a task that
/// does not exist, has expired or belongs to another session or caller, a cursor of
/// `tasks/list` that is not one, the cancellation of a task that already ended and the result
/// of a cancelled task (which has none).
async fn method(
    server: &Server,
    scope: Arc<ClientScope>,
    request: Request,
) -> Result<RawJson, ErrorObject> {
    if !served(server) {
        return Err(ErrorObject::method_not_found(&request.method));
    }
    let owner = server.subject(&request.extensions);
    let owner = owner.as_deref();
    if let Some(session) = shared_session(server, &request.extensions) {
        return shared_method(server, &session, owner, &request).await;
    }
    let raw = request.params.as_deref();
    let store = &server.inner.tasks;
    if request.method == METHOD_LIST {
        let p: ListParams = params(raw)?;
        return list(server, &scope, owner, p.cursor.as_deref());
    }
    let p: TaskIdParams = params(raw)?;
    let task = store
        .get_in(&p.task_id, owner, Some(&scope))
        .ok_or_else(|| not_found(&p.task_id))?;
    match request.method.as_str() {
        METHOD_GET => shown(&task),
        METHOD_CANCEL => {
            task.cancel_running("The task was cancelled by request.")
                .map_err(not_cancellable)?;
            shown(&task)
        }
        _ => result(&task).await,
    }
}

/// `tasks/result`: waits for the task to end, then answers what the call would have: its
/// result (with the task in `_meta`), or its error.
async fn result(task: &TaskRecord) -> Result<RawJson, ErrorObject> {
    task.until_ended().await;
    let Some((status, result, error)) = task.ended() else {
        return Err(internal("the server is shutting down"));
    };
    ended_answer(&task.id, status, result, error)
}

/// What `tasks/result` answers for a task that ended with `status`, `result` and `error`.
fn ended_answer(
    id: &str,
    status: mcp_types::wire::tasks::TaskStatus,
    result: Option<JsonObject>,
    error: Option<mcp_types::RpcError>,
) -> Result<RawJson, ErrorObject> {
    if let Some(mut result) = result {
        let meta = result
            .entry("_meta")
            .or_insert_with(|| Value::Object(JsonObject::new()));
        if let Value::Object(meta) = meta {
            meta.insert(
                RELATED_TASK_META.to_owned(),
                serde_json::json!({ "taskId": id }),
            );
        }
        return RawJson::serialize(&result).map_err(internal);
    }
    if let Some(e) = error {
        return Err(ErrorObject {
            code: e.code,
            message: e.message,
            data: e
                .data
                .as_ref()
                .map(mcp_jsonrpc::to_raw)
                .transpose()
                .ok()
                .flatten(),
        });
    }
    Err(ErrorObject::new(
        codes::INVALID_PARAMS,
        format!("task {id} was {status}: it has no result"),
    ))
}

fn nanos(t: std::time::SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos()
}

/// The opaque position after the task created at `nanos` with `id` in the list.
fn cursor_of(nanos: u128, id: &str) -> String {
    format!("{nanos:x}.{id}")
}

fn parse_cursor(cursor: &str) -> Option<(u128, &str)> {
    let (nanos, id) = cursor.split_once('.')?;
    Some((u128::from_str_radix(nanos, 16).ok()?, id))
}

/// `tasks/list`: the session's tasks, oldest first, a page at a time.
fn list(
    server: &Server,
    scope: &Arc<ClientScope>,
    owner: Option<&str>,
    cursor: Option<&str>,
) -> Result<RawJson, ErrorObject> {
    let entries = server
        .inner
        .tasks
        .list_in(owner, Some(scope))
        .iter()
        .map(|t| (nanos(t.created()), t.task()))
        .collect();
    page(server, entries, cursor)
}

/// The page after `cursor` of `all` (the tasks with their creation times, oldest first).
fn page(
    server: &Server,
    all: Vec<(u128, mcp_types::wire::tasks::Task)>,
    cursor: Option<&str>,
) -> Result<RawJson, ErrorObject> {
    let after = cursor
        .map(|c| {
            parse_cursor(c).ok_or_else(|| ErrorObject::new(codes::INVALID_PARAMS, "invalid cursor"))
        })
        .transpose()?;
    let from = match after {
        None => 0,
        Some((nanos, id)) => all
            .iter()
            .position(|(created, t)| (*created, t.task_id.as_str()) > (nanos, id))
            .unwrap_or(all.len()),
    };
    let size = server.inner.options.page_size;
    let page = &all[from..all.len().min(from.saturating_add(size))];
    let next_cursor = (from + page.len() < all.len())
        .then(|| {
            page.last()
                .map(|(created, t)| cursor_of(*created, &t.task_id))
        })
        .flatten();
    let result = ListTasksResult {
        meta: None,
        next_cursor,
        tasks: page.iter().map(|(_, t)| t.clone().into()).collect(),
    };
    RawJson::serialize(&result).map_err(internal)
}

/// Announces a task's state on its session (`notifications/tasks/status`).
pub(crate) async fn announce(channel: &dyn ClientChannel, task: &TaskRecord) {
    let params = match mcp_jsonrpc::to_raw(&mcp_types::Task::from(task.task())) {
        Ok(params) => params,
        Err(e) => {
            tracing::debug!(error = %e, "task status not encoded");
            return;
        }
    };
    channel.notify(NOTIFICATION_SESSION_STATUS, params).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::LogThreshold;
    use crate::tasks::store::Outcome;
    use crate::{NoArgs, Tool, ToolContext};
    use mcp_types::Implementation;
    use serde_json::json;

    fn server() -> Server {
        let ok = |_cx: ToolContext, _a: NoArgs| async { "ok" };
        Server::builder(Implementation::new("t", "1"))
            .tool(Tool::new("slow").task_support(TaskSupport::Optional), ok)
            .build()
            .unwrap()
    }

    fn scope() -> Arc<ClientScope> {
        Arc::new(ClientScope {
            version: ProtocolVersion::V2025_11_25,
            info: None,
            capabilities: mcp_types::ClientCapabilities::default(),
            log: LogThreshold::new(None),
        })
    }

    fn request(method: &str, params: Value) -> Request {
        Request {
            id: mcp_jsonrpc::Id::Number(1),
            method: method.to_owned(),
            params: Some(mcp_jsonrpc::to_raw(&params).unwrap()),
            protocol_version: Some(ProtocolVersion::V2025_11_25),
            extensions: mcp_jsonrpc::Extensions::default(),
        }
    }

    async fn call(
        server: &Server,
        scope: &Arc<ClientScope>,
        method: &str,
        params: Value,
    ) -> Result<Value, ErrorObject> {
        let raw = super::method(server, Arc::clone(scope), request(method, params)).await?;
        Ok(serde_json::from_str(raw.get()).unwrap())
    }

    fn task_in(server: &Server, scope: &Arc<ClientScope>) -> Arc<TaskRecord> {
        let placement = Placement {
            session: Some(Arc::clone(scope)),
            ttl: Some(Duration::from_secs(60)),
            shared: false,
            session_key: None,
        };
        server
            .inner
            .tasks
            .create_in(
                None,
                CancellationToken::new(),
                input_limits(server),
                placement,
            )
            .unwrap()
    }

    fn code(r: Result<Value, ErrorObject>) -> i64 {
        r.unwrap_err().code
    }

    #[tokio::test]
    async fn errors_of_the_tasks_methods() {
        let s = server();
        let mine = scope();
        for method in [METHOD_GET, METHOD_RESULT, METHOD_CANCEL] {
            let r = call(&s, &mine, method, json!({"taskId": "nope"})).await;
            assert_eq!(code(r), codes::INVALID_PARAMS, "{method}");
            let r = call(&s, &mine, method, json!({"task": "nope"})).await;
            assert_eq!(code(r), codes::INVALID_PARAMS, "{method}");
        }
        let r = call(&s, &mine, METHOD_LIST, json!({"cursor": "zz"})).await;
        assert_eq!(code(r), codes::INVALID_PARAMS);

        // Cancelled: at once, then refused again; no result.
        let t = task_in(&s, &mine);
        let id = t.id.to_string();
        let got = call(&s, &mine, METHOD_CANCEL, json!({"taskId": id}))
            .await
            .unwrap();
        assert_eq!(got["status"], "cancelled");
        assert!(t.cancel.is_cancelled());
        let r = call(&s, &mine, METHOD_CANCEL, json!({"taskId": id})).await;
        let e = r.unwrap_err();
        assert_eq!(e.code, codes::INVALID_PARAMS);
        assert!(e.message.contains("'cancelled'"), "{}", e.message);
        let r = call(&s, &mine, METHOD_RESULT, json!({"taskId": id})).await;
        assert_eq!(code(r), codes::INVALID_PARAMS);

        // Another session (or a stateless request) does not find it.
        let other = scope();
        let r = call(&s, &other, METHOD_GET, json!({"taskId": id})).await;
        assert_eq!(code(r), codes::INVALID_PARAMS);
        assert!(s.inner.tasks.get(&id, None).is_none());
        let listed = call(&s, &other, METHOD_LIST, json!({})).await.unwrap();
        assert_eq!(listed["tasks"], json!([]));
        let listed = call(&s, &mine, METHOD_LIST, json!({})).await.unwrap();
        assert_eq!(listed["tasks"][0]["taskId"], id.as_str());
    }

    #[tokio::test]
    async fn results_are_what_the_call_would_have_answered() {
        let s = server();
        let mine = scope();
        let map = |v: Value| v.as_object().cloned().unwrap();

        let done = task_in(&s, &mine);
        done.finish_session(Outcome::Completed(map(json!({"content": []}))));
        let r = call(&s, &mine, METHOD_RESULT, json!({"taskId": &*done.id}))
            .await
            .unwrap();
        assert_eq!(r["_meta"][RELATED_TASK_META]["taskId"], &*done.id);
        assert!(r.get("resultType").is_none());

        let tool_error = task_in(&s, &mine);
        tool_error.finish_session(Outcome::Completed(map(
            json!({"content": [], "isError": true}),
        )));
        let got = call(&s, &mine, METHOD_GET, json!({"taskId": &*tool_error.id}))
            .await
            .unwrap();
        assert_eq!(got["status"], "failed");
        let r = call(&s, &mine, METHOD_RESULT, json!({"taskId": &*tool_error.id}))
            .await
            .unwrap();
        assert_eq!(r["isError"], true);

        let failed = task_in(&s, &mine);
        failed.finish_session(Outcome::Failed(mcp_types::RpcError {
            code: -32000,
            message: "no".into(),
            data: Some(json!({"why": 1})),
        }));
        let e = call(&s, &mine, METHOD_RESULT, json!({"taskId": &*failed.id}))
            .await
            .unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (-32000, "no"));
        assert_eq!(e.data.unwrap().get(), r#"{"why":1}"#);
        let got = call(&s, &mine, METHOD_GET, json!({"taskId": &*failed.id}))
            .await
            .unwrap();
        assert_eq!(got["statusMessage"], "no");

        // A running task: `tasks/result` waits for its end.
        let running = task_in(&s, &mine);
        let waiting = {
            let (s, mine, id) = (s.clone(), Arc::clone(&mine), running.id.to_string());
            tokio::spawn(async move { call(&s, &mine, METHOD_RESULT, json!({"taskId": id})).await })
        };
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        running.finish_session(Outcome::Completed(map(json!({"content": []}))));
        assert!(waiting.await.unwrap().is_ok());
    }

    #[tokio::test]
    async fn a_server_without_tasks_has_no_methods() {
        let bare = Server::builder(Implementation::new("t", "1"))
            .build()
            .unwrap();
        assert!(!served(&bare));
        assert!(served(&server()));
        let r = call(&bare, &scope(), METHOD_GET, json!({"taskId": "x"})).await;
        assert_eq!(code(r), codes::METHOD_NOT_FOUND);
        assert!(has_tasks(ProtocolVersion::V2025_11_25));
        assert!(!has_tasks(ProtocolVersion::V2025_06_18));
        assert!(!has_tasks(ProtocolVersion::V2026_07_28));
    }

    #[test]
    fn cursors_round_trip() {
        assert_eq!(parse_cursor("ff.abc"), Some((255, "abc")));
        assert_eq!(parse_cursor("abc"), None);
        assert_eq!(parse_cursor("xyz.abc"), None);
    }
}
