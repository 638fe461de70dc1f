//! Shared by the `tasks_*` tests: a server whose tools run as tasks (the tasks extension,
//! SEP-2663), and the tasks methods on both transports of `stateless_support` (over HTTP the
//! task id is mirrored into `Mcp-Name`, as the extension requires).
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use mcp_server::model::{ElicitRequestParams, Implementation, InputResponse};
use mcp_server::prelude::*;
use mcp_server::{ErrorObject, InputRequired, ServerBuilder};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::stateless_support::{Client, Http, Name, Outcome, V2026, WAIT, meta};

pub const TASKS: &str = "io.modelcontextprotocol/tasks";

/// What the `watch_cancel` tool saw.
#[derive(Default)]
pub struct Observed {
    pub cancelled: AtomicBool,
}

#[derive(Deserialize, JsonSchema)]
pub struct Hold {
    /// How long to hold, in milliseconds
    pub ms: u64,
}

fn form(properties: Value) -> Value {
    json!({"type": "object", "properties": properties})
}

fn text_of(answer: &Elicitation<serde_json::Map<String, Value>>, field: &str) -> String {
    match answer {
        Elicitation::Accepted(content) => content
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned(),
        Elicitation::Declined => "declined".into(),
        Elicitation::Cancelled => "cancelled".into(),
    }
}

async fn panics(_cx: ToolContext, _args: NoArgs) -> &'static str {
    panic!("this handler panics on purpose")
}

/// The tools of the `tasks_*` tests; the handlers never look at the revision or at whether
/// they run as a task.
pub fn builder() -> ServerBuilder {
    builder_with(Arc::default())
}

/// [`builder`], with the flag the `watch_cancel` tool sets when its context is cancelled.
pub fn builder_with(observed: Arc<Observed>) -> ServerBuilder {
    Server::builder(Implementation::new("tasks-test-server", "0.1.0"))
        .with_state(observed)
        .tool(
            Tool::new("echo").description("Never a task"),
            |_cx: ToolContext, args: crate::stateless_support::Text| async move { args.text },
        )
        .tool(
            Tool::new("hold")
                .description("Holds for a while")
                .task_support(TaskSupport::Optional),
            |cx: ToolContext, args: Hold| async move {
                cx.progress(0.0, None, Some("holding")).await;
                tokio::time::sleep(Duration::from_millis(args.ms)).await;
                format!("held {} ms", args.ms)
            },
        )
        .tool(
            Tool::new("must_task")
                .description("Runs only as a task for clients of 2026-07-28")
                .task_support(TaskSupport::Required),
            |_cx: ToolContext, _args: NoArgs| async { "ran" },
        )
        .tool(
            Tool::new("tool_error").task_support(TaskSupport::Optional),
            |_cx: ToolContext, _args: NoArgs| async {
                Err::<String, _>(ToolError::execution("broken on purpose"))
            },
        )
        .tool(
            Tool::new("protocol_error").task_support(TaskSupport::Optional),
            |_cx: ToolContext, _args: NoArgs| async {
                Err::<String, _>(ToolError::Protocol(ErrorObject::invalid_params(
                    "refused on purpose",
                )))
            },
        )
        .tool(
            Tool::new("two_questions")
                .description("Asks two questions at once")
                .task_support(TaskSupport::Optional),
            |cx: ToolContext, _args: NoArgs| async move {
                let (first, second) = tokio::join!(
                    cx.elicit_with_schema(
                        "first",
                        "First?",
                        form(json!({"v": {"type": "string"}}))
                    ),
                    cx.elicit_with_schema(
                        "second",
                        "Second?",
                        form(json!({"v": {"type": "string"}}))
                    ),
                );
                let (first, second) = (first?, second?);
                Ok::<_, ToolError>(format!(
                    "first={} second={}",
                    text_of(&first, "v"),
                    text_of(&second, "v")
                ))
            },
        )
        .tool(
            Tool::new("count_roots")
                .description("Asks for the roots")
                .task_support(TaskSupport::Optional),
            |cx: ToolContext, _args: NoArgs| async move {
                let roots = cx.roots("roots").await?;
                Ok::<_, ToolError>(format!("{} root(s)", roots.len()))
            },
        )
        .tool(
            Tool::new("explicit")
                .description("Asks the explicit way, with state")
                .task_support(TaskSupport::Optional),
            |cx: ToolContext, _args: NoArgs| async move {
                if let Some(InputResponse::Elicit(answer)) = cx.input_response("confirm") {
                    let state = cx.input_state().unwrap_or(Value::Null);
                    return Ok::<_, ToolError>(format!(
                        "{} (state {state})",
                        answer.action.as_str()
                    ));
                }
                let params: ElicitRequestParams = serde_json::from_value(json!({
                    "mode": "form",
                    "message": "Go ahead?",
                    "requestedSchema": {"type": "object", "properties": {}},
                }))
                .map_err(ToolError::execution)?;
                Err(InputRequired::new()
                    .elicit("confirm", params)
                    .state(json!({"step": 1}))
                    .into())
            },
        )
        .tool(
            Tool::new("intro")
                .description("Asks for a name, then continues as a task")
                .task_support(TaskSupport::Required)
                .defer_task(),
            |cx: ToolContext, _args: NoArgs| async move {
                let name = match cx.elicit::<Name>("name", "Your name?").await? {
                    Elicitation::Accepted(n) => n.name,
                    _ => "nobody".to_owned(),
                };
                let before = cx.task_id();
                let became = cx.start_task().await;
                tokio::time::sleep(Duration::from_millis(50)).await;
                Ok::<_, ToolError>(format!(
                    "Hello, {name}! (task before: {}, became: {became}, task now: {})",
                    before.is_some(),
                    cx.task_id().is_some()
                ))
            },
        )
        .tool(
            Tool::new("panics").task_support(TaskSupport::Optional),
            panics,
        )
        .tool(
            Tool::new("watch_cancel")
                .description("Runs until cancelled")
                .task_support(TaskSupport::Optional),
            |cx: ToolContext, _args: NoArgs| async move {
                let observed = cx.state::<Arc<Observed>>();
                let token = cx.cancellation_token();
                tokio::spawn(async move {
                    token.cancelled().await;
                    if let Some(o) = observed {
                        o.cancelled.store(true, Ordering::SeqCst);
                    }
                });
                std::future::pending::<()>().await;
                "never"
            },
        )
}

pub fn server() -> Server {
    builder().build().unwrap()
}

/// Capabilities with every kind of input and the tasks extension.
pub fn task_caps() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {}, "extensions": {TASKS: {}}})
}

/// Capabilities with every kind of input and no extension.
pub fn plain_caps() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {}})
}

static NEXT_ID: AtomicI64 = AtomicI64::new(1_000_000);

/// A stateless request on HTTP with the given `Mcp-Name` and extra headers.
pub async fn http_request(
    h: &Http,
    method: &str,
    params: Value,
    name: Option<&str>,
    extra: &[(&str, String)],
) -> Outcome {
    let id = json!(NEXT_ID.fetch_add(1, Ordering::SeqCst));
    let mut headers = vec![
        ("mcp-protocol-version", V2026.to_owned()),
        ("mcp-method", method.to_owned()),
    ];
    if let Some(name) = name {
        headers.push(("mcp-name", name.to_owned()));
    }
    headers.extend(extra.iter().cloned());
    let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let answer = h.post_raw(&message, &headers).await;
    Outcome::read(answer, &id, method, true).await
}

/// `tasks/get`, `tasks/update` or `tasks/cancel` of `task_id` with `extra` params, declaring
/// `capabilities`.
pub async fn task_method(
    c: &mut Client,
    method: &str,
    task_id: &str,
    extra: Value,
    capabilities: Value,
) -> Outcome {
    let mut params = extra;
    if params.is_null() {
        params = json!({});
    }
    params["taskId"] = json!(task_id);
    params["_meta"] = meta(capabilities);
    match c {
        Client::Stdio(s) => s.request(method, params).await,
        Client::Http(h) => http_request(h, method, params, Some(task_id), &[]).await,
    }
}

/// `tasks/get` of a task, declaring the extension: the result.
pub async fn get(c: &mut Client, task_id: &str) -> Value {
    task_method(c, "tasks/get", task_id, Value::Null, task_caps())
        .await
        .result()
        .clone()
}

/// Polls `tasks/get` until the task's status is one of `statuses`.
pub async fn wait_for(c: &mut Client, task_id: &str, statuses: &[&str]) -> Value {
    wait_until(c, task_id, &format!("{statuses:?}"), |task| {
        statuses.iter().any(|s| task["status"] == *s)
    })
    .await
}

/// Polls `tasks/get` until the task satisfies `reached` (described by `what` in the failure).
///
/// A handler that asks several questions at once registers them one after the other, and
/// another thread's `tasks/get` may see the task parked with only the first: a test that
/// needs all of them waits for all of them.
pub async fn wait_until(
    c: &mut Client,
    task_id: &str,
    what: &str,
    reached: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let task = get(c, task_id).await;
        if reached(&task) {
            return task;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "task {task_id} never reached {what}: {task}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Calls a task-supporting tool declaring the extension; the task's id.
pub async fn start(c: &mut Client, tool: &str, arguments: Value) -> String {
    let o = c.call(tool, arguments, task_caps()).await;
    let r = o.result();
    assert_eq!(r["resultType"], "task", "{} on {}", r, c.name());
    r["taskId"].as_str().expect("a task id").to_owned()
}
