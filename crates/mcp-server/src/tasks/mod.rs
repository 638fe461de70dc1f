//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): a tool call that answers
//! with a task handle at once, keeps running, and is followed with `tasks/get`, fed with
//! `tasks/update` and stopped with `tasks/cancel`.
//!
//! A tool opts in with [`Tool::task_support`](crate::Tool::task_support). Its handler is the
//! same async function as for any tool: when the client of a 2026-07-28 request declared the
//! extension, the call becomes a task (before the handler runs, or where the handler calls
//! [`RequestContext::start_task`](crate::RequestContext::start_task) for a tool registered with
//! [`Tool::defer_task`](crate::Tool::defer_task)); for every other client it runs to
//! completion and answers with its result, as any call does. Inside a task, `cx.elicit`,
//! `cx.sample` and `cx.roots` park the task in `input_required` with the asks in `tasks/get`,
//! and resume when `tasks/update` brings the answers.
//!
//! 2025-11-25 sessions get the same tools as tasks in that revision's form (see [`session`]):
//! a `tools/call` with `task: {ttl}` in its params, then `tasks/get`, `tasks/result`,
//! `tasks/list` and `tasks/cancel`, with input asked by requests on the session.
//!
//! Tasks live in an in-process store (see [`TaskOptions`] for its limits): they do not survive
//! a restart and are found only by the replica that holds them. A deployment with several
//! replicas either routes the tasks methods by their `Mcp-Name` header (the task id), or gives
//! the server a [`TaskBackend`]
//! ([`ServerBuilder::task_backend`](crate::ServerBuilder::task_backend)): tasks are then read,
//! updated, cancelled, listed and their results read through any replica, while their handlers
//! run on the replica that created them. Tasks of 2025-11-25 are shared when the transport
//! names their session (the Streamable HTTP transport does, with the feature `http`); otherwise
//! they stay on the replica that runs them.

pub(crate) mod channel;
pub(crate) mod serve;
pub(crate) mod session;
pub(crate) mod shared;
pub(crate) mod store;
mod time;

pub use shared::{
    LoadedTask, SharedTask, TaskBackend, TaskBackendError, TaskFuture, TaskSignal,
    TaskSignalHandler,
};

use std::time::Duration;

/// The `tasks` capability of 2025-11-25: `tasks/list`, `tasks/cancel` and task-augmented
/// `tools/call`.
pub(crate) fn session_capability() -> mcp_types::ServerCapabilitiesTasks {
    use mcp_types::{
        JsonObject, ServerCapabilitiesTasks, ServerCapabilitiesTasksRequests,
        ServerCapabilitiesTasksRequestsTools,
    };
    ServerCapabilitiesTasks {
        cancel: Some(JsonObject::new()),
        list: Some(JsonObject::new()),
        requests: Some(ServerCapabilitiesTasksRequests {
            tools: Some(ServerCapabilitiesTasksRequestsTools {
                call: Some(JsonObject::new()),
            }),
        }),
    }
}

/// The `execution` a tool is listed with (2025-11-25 only; other revisions project it away).
pub(crate) fn execution(support: TaskSupport) -> Option<mcp_types::ToolExecution> {
    use mcp_types::ToolExecutionTaskSupport as Declared;
    let declared = match support {
        TaskSupport::Forbidden => return None,
        TaskSupport::Optional => Declared::Optional,
        TaskSupport::Required => Declared::Required,
    };
    Some(mcp_types::ToolExecution {
        task_support: Some(declared),
    })
}

/// Whether a tool runs as a task for clients that support the tasks extension (the
/// `execution.taskSupport` of a tool definition).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never a task (the default).
    #[default]
    Forbidden,
    /// A task when the request asks for one (the extension declared, or `task` in the params
    /// of a 2025-11-25 call); an ordinary call otherwise.
    Optional,
    /// A task when the request asks for one. A 2026-07-28 request that does not declare the
    /// extension is refused with `-32021` naming it, a 2025-11-25 call without `task` in its
    /// params with `-32601` (as that revision says); clients of older revisions, which have no
    /// way to ask, get an ordinary call.
    Required,
}

/// The limits and hints of the task store. Tasks are kept in the server's memory: they do not
/// survive a restart and are not shared between replicas.
///
/// ```
/// use std::time::Duration;
/// use mcp_server::{ServerOptions, TaskOptions};
///
/// let mut options = ServerOptions::default();
/// options.tasks = TaskOptions::default().max_tasks(256).ttl(Duration::from_secs(600));
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskOptions {
    /// Tasks kept at the same time, running or finished (default 1024). A call that would
    /// create one more is answered with `-32603`.
    pub max_tasks: usize,
    /// Tasks one caller keeps at the same time, when requests name their caller (default 64;
    /// see [`ServerBuilder::subject`](crate::ServerBuilder::subject)).
    pub max_tasks_per_caller: usize,
    /// How long a task is kept after it was created (`ttlMs`, default 1 hour). A task still
    /// running then is cancelled and forgotten.
    pub ttl: Duration,
    /// The polling interval suggested to clients (`pollIntervalMs`, default 1 s).
    pub poll_interval: Duration,
}

impl Default for TaskOptions {
    fn default() -> Self {
        Self {
            max_tasks: 1024,
            max_tasks_per_caller: 64,
            ttl: Duration::from_secs(3600),
            poll_interval: Duration::from_secs(1),
        }
    }
}

impl TaskOptions {
    /// With at most `n` tasks kept at the same time.
    pub fn max_tasks(mut self, n: usize) -> Self {
        self.max_tasks = n;
        self
    }

    /// With at most `n` tasks per caller.
    pub fn max_tasks_per_caller(mut self, n: usize) -> Self {
        self.max_tasks_per_caller = n;
        self
    }

    /// With tasks kept for `ttl` after their creation.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// With `interval` as the suggested polling interval.
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    pub(crate) fn is_valid(&self) -> bool {
        self.max_tasks > 0
            && self.max_tasks_per_caller > 0
            && !self.ttl.is_zero()
            && self.poll_interval >= Duration::from_millis(1)
    }
}
