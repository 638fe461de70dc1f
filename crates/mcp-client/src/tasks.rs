//! Tool calls that run as tasks, with one API for both forms of tasks: the task-augmented
//! requests of 2025-11-25 (`task` in the `tools/call` params, then `tasks/get`,
//! `tasks/result`, `tasks/list`, `tasks/cancel`) and the tasks extension of 2026-07-28
//! (`io.modelcontextprotocol/tasks`: `resultType: "task"`, then `tasks/get`, `tasks/update`,
//! `tasks/cancel`).

use std::time::Duration;

use mcp_types::wire::TASKS_EXTENSION;
use mcp_types::wire::tasks::{DetailedTask, METHOD_CANCEL, METHOD_GET, METHOD_LIST, METHOD_RESULT};
use mcp_types::{CallToolResult, Project, RpcError};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::error::CallError;
use crate::lifecycle;
use crate::mrtr::retry_params;
use crate::session::ClientSession;
use mcp_types::wire::META_CLIENT_CAPABILITIES;

pub use mcp_types::wire::tasks::{Task, TaskStatus};

/// What [`ClientSession::call_tool_as_task`] started.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TaskStart {
    /// The call runs as this task: follow it with [`ClientSession::get_task`] and read its
    /// result with [`ClientSession::task_result`].
    Task(Task),
    /// The server ran the call at once (a 2026-07-28 server may answer a call that can be a
    /// task with its result).
    Complete(CallToolResult),
}

impl TaskStart {
    /// The task, if the call became one.
    pub fn task(&self) -> Option<&Task> {
        match self {
            TaskStart::Task(task) => Some(task),
            TaskStart::Complete(_) => None,
        }
    }
}

/// A page of [`ClientSession::list_tasks`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TaskPage {
    /// The tasks of this page.
    pub tasks: Vec<Task>,
    /// Where the next page starts; `None` on the last.
    pub next_cursor: Option<String>,
}

/// Shortest wait between two polls of a 2026-07-28 task, whatever the server suggests.
const MIN_POLL: Duration = Duration::from_millis(10);
/// Longest wait between two polls of a 2026-07-28 task, whatever the server suggests.
const MAX_POLL: Duration = Duration::from_secs(30);

#[derive(serde::Deserialize)]
struct Probe<'a> {
    #[serde(rename = "resultType", default, borrow)]
    result_type: Option<&'a str>,
    #[serde(rename = "requestState", default)]
    request_state: Option<String>,
}

fn decode<T: serde::de::DeserializeOwned>(raw: &RawValue) -> Result<T, CallError> {
    serde_json::from_str(raw.get()).map_err(CallError::Decode)
}

fn rpc_error(e: RpcError) -> CallError {
    CallError::Rpc(mcp_jsonrpc::ErrorObject {
        code: e.code,
        message: e.message,
        data: e.data.as_ref().and_then(|d| mcp_jsonrpc::to_raw(d).ok()),
    })
}

impl ClientSession {
    /// Checks that the server runs tool calls as tasks in the negotiated revision.
    fn check_task_calls(&self) -> Result<(), CallError> {
        self.check("tools/call", Some(("tools", &["tools"])))?;
        if self.is_stateless() {
            if !self.has_capability(&["extensions", TASKS_EXTENSION]) {
                return Err(CallError::MissingCapability {
                    method: "tools/call",
                    capability: "extensions.io.modelcontextprotocol/tasks",
                });
            }
        } else if !self.has_capability(&["tasks", "requests", "tools", "call"]) {
            return Err(CallError::MissingCapability {
                method: "tools/call",
                capability: "tasks.requests.tools.call",
            });
        }
        Ok(())
    }

    /// Checks that `method` of the tasks exists for this server; `true` for the extension's.
    fn check_task_method(&self, method: &'static str) -> Result<bool, CallError> {
        if self.is_stateless() && method != METHOD_LIST && method != METHOD_RESULT {
            if !self.has_capability(&["extensions", TASKS_EXTENSION]) {
                return Err(CallError::MissingCapability {
                    method,
                    capability: "extensions.io.modelcontextprotocol/tasks",
                });
            }
            return Ok(true);
        }
        let capability = match method {
            METHOD_LIST => Some(("tasks.list", &["tasks", "list"][..])),
            METHOD_CANCEL => Some(("tasks.cancel", &["tasks", "cancel"][..])),
            _ => Some(("tasks", &["tasks"][..])),
        };
        self.check(method, capability)?;
        Ok(false)
    }

    /// `_meta` declaring the tasks extension with the client's other capabilities (a
    /// stateless request declares its capabilities in each request).
    fn extension_meta(&self) -> Value {
        let mut meta = lifecycle::stateless_meta(self.client(), self.protocol_version());
        let mut capabilities = meta
            .remove(META_CLIENT_CAPABILITIES)
            .unwrap_or_else(|| json!({}));
        if let Value::Object(caps) = &mut capabilities {
            let extensions = caps
                .entry("extensions")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(extensions) = extensions {
                extensions.insert(TASKS_EXTENSION.to_owned(), json!({}));
            }
        }
        json!({ META_CLIENT_CAPABILITIES: capabilities })
    }

    /// Params naming a task, declaring the extension when it is the extension's method.
    fn task_params(&self, task_id: &str, extension: bool) -> Value {
        let mut params = json!({ "taskId": task_id });
        if extension {
            params["_meta"] = self.extension_meta();
        }
        params
    }

    /// Calls a tool as a task: `tools/call` with `task` in its params (2025-11-25; `ttl` is
    /// the time to live asked for, which the server may shorten) or declaring the tasks
    /// extension (2026-07-28; `ttl` is not sent, the server decides). The server answers at
    /// once with the task; follow it with [`get_task`](Self::get_task) and read its result
    /// with [`task_result`](Self::task_result).
    ///
    /// Fails with [`CallError::MissingCapability`] when the server does not run tool calls as
    /// tasks (or the revision has no tasks). A 2026-07-28 tool that asks for input before it
    /// becomes a task has its asks answered by the client's handlers, as
    /// [`call_tool`](Self::call_tool) does.
    ///
    /// ```no_run
    /// # async fn f(session: mcp_client::ClientSession) -> Result<(), mcp_client::CallError> {
    /// use mcp_client::TaskStart;
    /// let result = match session.call_tool_as_task("render", serde_json::json!({}), None).await? {
    ///     TaskStart::Task(task) => session.task_result(&task.task_id).await?,
    ///     TaskStart::Complete(result) => result,
    ///     _ => unreachable!(),
    /// };
    /// # let _ = result; Ok(()) }
    /// ```
    pub async fn call_tool_as_task(
        &self,
        name: impl Into<String>,
        arguments: impl Serialize,
        ttl: Option<Duration>,
    ) -> Result<TaskStart, CallError> {
        self.check_task_calls()?;
        let name = name.into();
        let arguments = match serde_json::to_value(arguments).map_err(CallError::Decode)? {
            Value::Null => Value::Object(Map::new()),
            object @ Value::Object(_) => object,
            other => {
                return Err(CallError::Decode(serde::de::Error::custom(format!(
                    "tool arguments must serialize to a JSON object, not {other}"
                ))));
            }
        };
        let mut params = json!({ "name": name, "arguments": arguments });
        if !self.is_stateless() {
            let ttl = ttl.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX));
            params["task"] = match ttl {
                Some(ms) => json!({ "ttl": ms }),
                None => json!({}),
            };
            let raw = self.send_raw("tools/call", Some(&params)).await?;
            return self.started(&name, &raw);
        }
        params["_meta"] = self.extension_meta();
        let max = self.client().shared.max_input_rounds;
        let mut rounds = 0;
        loop {
            let raw = self.send_raw("tools/call", Some(&params)).await?;
            let probe: Probe<'_> = serde_json::from_str(raw.get()).map_err(CallError::Decode)?;
            if probe.result_type != Some("input_required") {
                return self.started(&name, &raw);
            }
            if rounds >= max {
                return Err(CallError::RoundsExceeded {
                    method: "tools/call",
                    rounds,
                });
            }
            rounds += 1;
            let answers = self.answer_raw_inputs(&raw).await?;
            params = retry_params(&params, answers, probe.request_state.as_deref());
        }
    }

    /// A `tools/call` result that may hand out a task, in either form.
    fn started(&self, tool: &str, raw: &RawValue) -> Result<TaskStart, CallError> {
        #[derive(serde::Deserialize)]
        struct Created {
            task: mcp_types::Task,
        }
        let probe: Probe<'_> = serde_json::from_str(raw.get()).map_err(CallError::Decode)?;
        match probe.result_type {
            Some("task") => return Ok(TaskStart::Task(decode(raw)?)),
            Some("complete") | None => {}
            Some(other) => {
                return Err(CallError::InvalidResponse(format!(
                    "unexpected resultType `{other}`"
                )));
            }
        }
        if !self.is_stateless() {
            if let Ok(created) = serde_json::from_str::<Created>(raw.get()) {
                return Ok(TaskStart::Task(created.task.into()));
            }
        }
        let result: CallToolResult = decode(raw)?;
        self.validate_structured(tool, &result)?;
        Ok(TaskStart::Complete(result))
    }

    /// `tasks/get`: where the task stands.
    pub async fn get_task(&self, task_id: &str) -> Result<Task, CallError> {
        self.get_task_raw(task_id).await.map(|(task, _)| task)
    }

    /// `tasks/get`, with the result's text when it is the extension's (which carries the
    /// result, error or input requests).
    async fn get_task_raw(&self, task_id: &str) -> Result<(Task, Box<RawValue>), CallError> {
        let extension = self.check_task_method(METHOD_GET)?;
        let params = self.task_params(task_id, extension);
        let raw = self.send_raw(METHOD_GET, Some(&params)).await?;
        let task = if extension {
            decode::<DetailedTask>(&raw)?.task
        } else {
            decode::<mcp_types::Task>(&raw)?.into()
        };
        Ok((task, raw))
    }

    /// The result of a task's tool call, once the task has ended: `tasks/result`, which the
    /// server answers when the task ends (2025-11-25; requests for input reach the client's
    /// handlers meanwhile), or `tasks/get` polled at the interval the server suggests, with
    /// its `inputRequests` answered by the client's handlers through `tasks/update`
    /// (2026-07-28).
    ///
    /// A tool error is a result with `is_error`; a call that failed with a JSON-RPC error
    /// gives [`CallError::Rpc`] with that error; a cancelled task
    /// [`CallError::TaskCancelled`].
    pub async fn task_result(&self, task_id: &str) -> Result<CallToolResult, CallError> {
        if !self.is_stateless() {
            self.check_task_method(METHOD_RESULT)?;
            let params = self.task_params(task_id, false);
            return match self.send_raw(METHOD_RESULT, Some(&params)).await {
                Ok(raw) => decode(&raw),
                Err(CallError::Rpc(error)) => {
                    // A cancelled task has no result: say so, rather than the server's error.
                    match self.get_task(task_id).await {
                        Ok(task) if task.status == TaskStatus::Cancelled => {
                            Err(CallError::TaskCancelled(task_id.to_owned()))
                        }
                        _ => Err(CallError::Rpc(error)),
                    }
                }
                Err(e) => Err(e),
            };
        }
        let max = self.client().shared.max_input_rounds;
        let mut rounds = 0;
        loop {
            let (task, raw) = self.get_task_raw(task_id).await?;
            match task.status {
                TaskStatus::Completed | TaskStatus::Failed => {
                    let detailed: DetailedTask = decode(&raw)?;
                    if let Some(error) = detailed.error {
                        return Err(rpc_error(error));
                    }
                    let Some(result) = detailed.result else {
                        return Err(CallError::InvalidResponse(format!(
                            "task {task_id} ended {} without a result or error",
                            task.status
                        )));
                    };
                    return serde_json::from_value(Value::Object(result))
                        .map_err(CallError::Decode);
                }
                TaskStatus::Cancelled => return Err(CallError::TaskCancelled(task_id.to_owned())),
                TaskStatus::InputRequired => {
                    if rounds >= max {
                        return Err(CallError::RoundsExceeded {
                            method: METHOD_GET,
                            rounds,
                        });
                    }
                    rounds += 1;
                    let answers = self.answer_raw_inputs(&raw).await?;
                    if !answers.is_empty() {
                        let mut params = self.task_params(task_id, true);
                        params["inputResponses"] = Value::Object(answers);
                        self.send_raw("tasks/update", Some(&params)).await?;
                        continue;
                    }
                }
                TaskStatus::Working => {}
            }
            let wait = task
                .poll_interval_ms
                .map_or(Duration::from_secs(1), Duration::from_millis)
                .clamp(MIN_POLL, MAX_POLL);
            tokio::time::sleep(wait).await;
        }
    }

    /// `tasks/list` (2025-11-25): one page of the tasks this client created, from `cursor`.
    /// The extension of 2026-07-28 has no listing ([`CallError::NotInRevision`]).
    pub async fn list_tasks(&self, cursor: Option<String>) -> Result<TaskPage, CallError> {
        self.check_task_method(METHOD_LIST)?;
        let params = match cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        let raw = self.send_raw(METHOD_LIST, Some(&params)).await?;
        let mut page: mcp_types::ListTasksResult = decode(&raw)?;
        page.project(self.protocol_version());
        Ok(TaskPage {
            tasks: page.tasks.into_iter().map(Task::from).collect(),
            next_cursor: page.next_cursor,
        })
    }

    /// `tasks/cancel`: asks the server to cancel the task. A 2025-11-25 server refuses a task
    /// that already ended ([`CallError::Rpc`], `-32602`); the extension's accepts it and
    /// changes nothing.
    pub async fn cancel_task(&self, task_id: &str) -> Result<(), CallError> {
        let extension = self.check_task_method(METHOD_CANCEL)?;
        let params = self.task_params(task_id, extension);
        let _: Box<RawValue> = self.send_raw(METHOD_CANCEL, Some(&params)).await?;
        Ok(())
    }

    /// Whether the server runs tool calls as tasks in the negotiated revision.
    pub fn offers_tasks(&self) -> bool {
        self.check_task_calls().is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_is_a_task_or_a_result() {
        let task = Task::new("t", TaskStatus::Working, "2025-11-25T00:00:00Z", Some(1000));
        assert_eq!(TaskStart::Task(task.clone()).task(), Some(&task));
        let done = TaskStart::Complete(CallToolResult {
            meta: None,
            content: Vec::new(),
            is_error: None,
            result_type: None,
            structured_content: None,
        });
        assert!(done.task().is_none());
    }
}
