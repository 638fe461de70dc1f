//! The shapes of the tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on the
//! stateless revision.
//!
//! A server that declared the extension may answer a [`TASK_METHODS`](super::TASK_METHODS)
//! request of a client that declared it too with a [`CreateTaskResult`] (`resultType: "task"`)
//! instead of the method's own result. The client then polls [`METHOD_GET`] (a [`DetailedTask`]
//! inlining the final `result` or `error`), answers the task's `inputRequests` with
//! [`METHOD_UPDATE`] and may ask for cancellation with [`METHOD_CANCEL`]. Servers may push
//! [`NOTIFICATION_STATUS`] on a `subscriptions/listen` stream that asked for the task's id
//! (`notifications.taskIds`).
//!
//! The 2025-11-25 form of tasks (a `task` member in `tools/call` params, `tasks/get`,
//! [`METHOD_RESULT`], [`METHOD_LIST`], `tasks/cancel`) uses the model types ([`crate::Task`],
//! [`crate::CreateTaskResult`], ...); [`Task`] converts to and from [`crate::Task`], so one
//! value describes a task of either form.
//!
//! ```
//! use mcp_types::wire::tasks::{DetailedTask, Task, TaskStatus};
//!
//! let task = Task::new("7f3a", TaskStatus::Working, "2026-07-28T10:30:00Z", Some(60_000));
//! let detailed = DetailedTask::from(task).result(
//!     serde_json::json!({"content": [{"type": "text", "text": "done"}]})
//!         .as_object()
//!         .cloned()
//!         .unwrap_or_default(),
//! );
//! let wire = serde_json::to_value(&detailed)?;
//! assert_eq!(wire["taskId"], "7f3a");
//! assert_eq!(wire["status"], "completed");
//! assert_eq!(wire["result"]["content"][0]["text"], "done");
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{InputRequests, JsonObject, Meta, RpcError};

/// `tasks/get`: the current state of a task.
pub const METHOD_GET: &str = "tasks/get";
/// `tasks/update`: answers to a task's outstanding `inputRequests`.
pub const METHOD_UPDATE: &str = "tasks/update";
/// `tasks/cancel`: asks the server to cancel a task.
pub const METHOD_CANCEL: &str = "tasks/cancel";
/// `notifications/tasks`: a task's state, pushed on a `subscriptions/listen` stream.
pub const NOTIFICATION_STATUS: &str = "notifications/tasks";
/// The methods of the extension, each carrying `params.taskId` (HTTP clients mirror it into
/// the `Mcp-Name` header).
pub const METHODS: [&str; 3] = [METHOD_GET, METHOD_UPDATE, METHOD_CANCEL];
/// The field of `subscriptions/listen`'s `notifications` (and of its acknowledgement) that
/// names the tasks to receive [`NOTIFICATION_STATUS`] for.
pub const LISTEN_TASK_IDS: &str = "taskIds";

/// `tasks/result` (2025-11-25): the final result of a task, waited for.
pub const METHOD_RESULT: &str = "tasks/result";
/// `tasks/list` (2025-11-25): the caller's tasks, paginated.
pub const METHOD_LIST: &str = "tasks/list";
/// `notifications/tasks/status` (2025-11-25): a task's state, sent on the session.
pub const NOTIFICATION_SESSION_STATUS: &str = "notifications/tasks/status";
/// The `_meta` key that ties a message to a task (2025-11-25): `{"taskId": ...}`.
pub const RELATED_TASK_META: &str = "io.modelcontextprotocol/related-task";

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The request is being processed.
    Working,
    /// The server waits for the client to answer the task's `inputRequests` (`tasks/update`).
    InputRequired,
    /// The request completed; `result` holds its result (a tool error included:
    /// `isError: true` is a completed task).
    Completed,
    /// The request failed with a JSON-RPC error; `error` holds it.
    Failed,
    /// The request was cancelled before it completed.
    Cancelled,
}

impl TaskStatus {
    /// The value as it appears on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the task can no longer change (`completed`, `failed` or `cancelled`).
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

impl From<TaskStatus> for crate::TaskStatus {
    fn from(status: TaskStatus) -> Self {
        match status {
            TaskStatus::Working => crate::TaskStatus::Working,
            TaskStatus::InputRequired => crate::TaskStatus::InputRequired,
            TaskStatus::Completed => crate::TaskStatus::Completed,
            TaskStatus::Failed => crate::TaskStatus::Failed,
            TaskStatus::Cancelled => crate::TaskStatus::Cancelled,
        }
    }
}

impl From<crate::TaskStatus> for TaskStatus {
    fn from(status: crate::TaskStatus) -> Self {
        match status {
            crate::TaskStatus::Working => TaskStatus::Working,
            crate::TaskStatus::InputRequired => TaskStatus::InputRequired,
            crate::TaskStatus::Completed => TaskStatus::Completed,
            crate::TaskStatus::Failed => TaskStatus::Failed,
            crate::TaskStatus::Cancelled => TaskStatus::Cancelled,
        }
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What every shape of a task carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Task {
    /// The server-generated identifier of the task.
    #[serde(rename = "taskId")]
    pub task_id: String,
    /// Where the task stands.
    pub status: TaskStatus,
    /// A human-readable description of the current state.
    #[serde(
        rename = "statusMessage",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub status_message: Option<String>,
    /// When the task was created (ISO 8601).
    #[serde(rename = "createdAt")]
    pub created_at: String,
    /// When the task last changed (ISO 8601).
    #[serde(rename = "lastUpdatedAt")]
    pub last_updated_at: String,
    /// How long after creation the server keeps the task, in milliseconds; `null` for no
    /// limit. Always sent.
    #[serde(rename = "ttlMs")]
    pub ttl_ms: Option<u64>,
    /// How often the client should poll `tasks/get`, in milliseconds.
    #[serde(
        rename = "pollIntervalMs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub poll_interval_ms: Option<u64>,
}

impl Task {
    /// A task created (and last updated) at `created_at`.
    pub fn new(
        task_id: impl Into<String>,
        status: TaskStatus,
        created_at: impl Into<String>,
        ttl_ms: Option<u64>,
    ) -> Self {
        let created_at = created_at.into();
        Self {
            task_id: task_id.into(),
            status,
            status_message: None,
            last_updated_at: created_at.clone(),
            created_at,
            ttl_ms,
            poll_interval_ms: None,
        }
    }
}

fn to_i64(ms: Option<u64>) -> Option<i64> {
    ms.map(|ms| i64::try_from(ms).unwrap_or(i64::MAX))
}

fn to_u64(ms: Option<i64>) -> Option<u64> {
    ms.and_then(|ms| u64::try_from(ms).ok())
}

/// The same task in the shape of 2025-11-25 (`ttl` and `pollInterval` instead of `ttlMs` and
/// `pollIntervalMs`).
impl From<Task> for crate::Task {
    fn from(task: Task) -> Self {
        crate::Task {
            created_at: task.created_at,
            last_updated_at: task.last_updated_at,
            poll_interval: to_i64(task.poll_interval_ms),
            status: task.status.into(),
            status_message: task.status_message,
            task_id: task.task_id,
            ttl: to_i64(task.ttl_ms),
        }
    }
}

/// A task of 2025-11-25 in the extension's shape (a negative `ttl` or `pollInterval` is
/// dropped).
impl From<crate::Task> for Task {
    fn from(task: crate::Task) -> Self {
        Task {
            task_id: task.task_id,
            status: task.status.into(),
            status_message: task.status_message,
            created_at: task.created_at,
            last_updated_at: task.last_updated_at,
            ttl_ms: to_u64(task.ttl),
            poll_interval_ms: to_u64(task.poll_interval),
        }
    }
}

/// A task with what its status implies: the outstanding `inputRequests` of an
/// `input_required` task, the `result` of a completed one, the `error` of a failed one. The
/// result of `tasks/get` (with `resultType: "complete"`) and the params of
/// `notifications/tasks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DetailedTask {
    /// The task.
    #[serde(flatten)]
    pub task: Task,
    /// The requests the client has to answer with `tasks/update` (`input_required` only).
    #[serde(
        rename = "inputRequests",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub input_requests: Option<InputRequests>,
    /// The final result of the request (`completed` only), shaped like the method's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<JsonObject>,
    /// The JSON-RPC error the request failed with (`failed` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcError>,
}

impl From<Task> for DetailedTask {
    fn from(task: Task) -> Self {
        Self {
            task,
            input_requests: None,
            result: None,
            error: None,
        }
    }
}

impl DetailedTask {
    /// `input_required` with these outstanding requests.
    pub fn input_requests(mut self, requests: InputRequests) -> Self {
        self.task.status = TaskStatus::InputRequired;
        self.input_requests = Some(requests);
        self
    }

    /// `completed` with this result.
    pub fn result(mut self, result: JsonObject) -> Self {
        self.task.status = TaskStatus::Completed;
        self.result = Some(result);
        self
    }

    /// `failed` with this error.
    pub fn error(mut self, error: RpcError) -> Self {
        self.task.status = TaskStatus::Failed;
        self.error = Some(error);
        self
    }
}

/// The result that hands out a task instead of the method's own result: flat (the task's
/// fields at the top level, no `task` wrapper), with `resultType: "task"`. It never carries
/// `result`, `error`, `inputRequests` or `requestState`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CreateTaskResult {
    /// Result metadata (`io.modelcontextprotocol/serverInfo`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The task, typically `working`.
    #[serde(flatten)]
    pub task: Task,
    /// Always `"task"`.
    #[serde(rename = "resultType")]
    pub result_type: String,
}

impl From<Task> for CreateTaskResult {
    fn from(task: Task) -> Self {
        Self {
            meta: None,
            task,
            result_type: super::ResultType::Task.as_str().to_owned(),
        }
    }
}

/// The params of `tasks/get` and `tasks/cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskIdParams {
    /// The task.
    #[serde(rename = "taskId")]
    pub task_id: String,
    /// The request's `_meta` (the stateless envelope).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The params of `tasks/update`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UpdateTaskParams {
    /// The task.
    #[serde(rename = "taskId")]
    pub task_id: String,
    /// Answers keyed like the task's `inputRequests`, unparsed: each is checked against the
    /// kind of request it answers ([`super::InputKind::parse_response`]). Keys that are not
    /// outstanding are ignored.
    #[serde(rename = "inputResponses")]
    pub input_responses: BTreeMap<String, Value>,
    /// The request's `_meta` (the stateless envelope).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes_are_flat_and_exact() {
        let mut task = Task::new(
            "t1",
            TaskStatus::Working,
            "2026-07-28T00:00:00Z",
            Some(1000),
        );
        task.poll_interval_ms = Some(250);
        let created = serde_json::to_value(CreateTaskResult::from(task.clone())).unwrap();
        assert_eq!(
            created,
            json!({"taskId": "t1", "status": "working", "createdAt": "2026-07-28T00:00:00Z",
                   "lastUpdatedAt": "2026-07-28T00:00:00Z", "ttlMs": 1000, "pollIntervalMs": 250,
                   "resultType": "task"})
        );
        // An unlimited ttl is an explicit null.
        task.ttl_ms = None;
        let v = serde_json::to_value(DetailedTask::from(task.clone())).unwrap();
        assert_eq!(v["ttlMs"], Value::Null);
        assert!(v.get("result").is_none() && v.get("inputRequests").is_none());
        let failed = DetailedTask::from(task).error(RpcError {
            code: -32603,
            message: "boom".into(),
            data: None,
        });
        let v = serde_json::to_value(&failed).unwrap();
        assert_eq!(v["status"], "failed");
        assert_eq!(v["error"]["code"], -32603);
        let back: DetailedTask = serde_json::from_value(v).unwrap();
        assert_eq!(back, failed);
    }

    #[test]
    fn statuses() {
        for (s, text, terminal) in [
            (TaskStatus::Working, "working", false),
            (TaskStatus::InputRequired, "input_required", false),
            (TaskStatus::Completed, "completed", true),
            (TaskStatus::Failed, "failed", true),
            (TaskStatus::Cancelled, "cancelled", true),
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), json!(text));
            assert_eq!(s.as_str(), text);
            assert_eq!(s.is_terminal(), terminal);
        }
    }

    #[test]
    fn both_revisions_shapes_convert() {
        let mut task = Task::new("t", TaskStatus::InputRequired, "2025-11-25T00:00:00Z", None);
        task.poll_interval_ms = Some(500);
        let old = crate::Task::from(task.clone());
        assert_eq!(
            serde_json::to_value(&old).unwrap(),
            json!({"taskId": "t", "status": "input_required", "createdAt": "2025-11-25T00:00:00Z",
                   "lastUpdatedAt": "2025-11-25T00:00:00Z", "ttl": null, "pollInterval": 500})
        );
        assert_eq!(Task::from(old), task);
        let mut negative = crate::Task::from(task);
        negative.ttl = Some(-1);
        assert_eq!(Task::from(negative).ttl_ms, None);
        for s in [
            TaskStatus::Working,
            TaskStatus::InputRequired,
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Cancelled,
        ] {
            assert_eq!(crate::TaskStatus::from(s).as_str(), s.as_str());
            assert_eq!(TaskStatus::from(crate::TaskStatus::from(s)), s);
        }
    }

    #[test]
    fn params() {
        let p: UpdateTaskParams = serde_json::from_value(
            json!({"taskId": "t", "inputResponses": {"a": {"action": "cancel"}}}),
        )
        .unwrap();
        assert_eq!(p.input_responses.len(), 1);
        assert!(serde_json::from_value::<UpdateTaskParams>(json!({"taskId": "t"})).is_err());
        assert!(serde_json::from_value::<TaskIdParams>(json!({"taskId": 5})).is_err());
    }
}
