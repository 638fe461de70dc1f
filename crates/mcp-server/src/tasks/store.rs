//! The in-process task store: every live task of a server, its state machine and the answers
//! its handler waits for.
//!
//! A task is created when a call turns into one, is kept for its time to live (counted from
//! creation, as `ttlMs` says) and then removed, running or not; a task still running at that
//! point is cancelled. The store holds at most [`TaskOptions::max_tasks`] tasks, and at most
//! [`TaskOptions::max_tasks_per_caller`] of one caller when requests name their caller. Task
//! ids are 128 random bits; a task is found only with the caller that created it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, SystemTime};

use mcp_types::wire::InputKind;
use mcp_types::wire::tasks::{DetailedTask, Task, TaskStatus};
use mcp_types::{InputRequest, InputResponse, JsonObject, RpcError, error_codes};
use serde_json::Value;
use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;

use super::TaskOptions;
use super::shared::{Shared, TaskBackend, TaskBackendError};
use super::time::rfc3339;
use crate::context::ClientScope;
use crate::error::AskError;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A fresh task id: 128 bits from the system's random source, as 32 hex digits.
fn fresh_id() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// An ask of the handler that waits for `tasks/update`.
struct Pending {
    request: InputRequest,
    waiters: Vec<oneshot::Sender<InputResponse>>,
}

/// How an ask of a task's handler is resolved.
pub(crate) enum Asked {
    /// The client answered this key already (keys are unique over a task's lifetime).
    Answered(Box<InputResponse>),
    /// Outstanding: resolves when `tasks/update` brings the answer; fails when the task ends.
    Wait(oneshot::Receiver<InputResponse>),
}

/// How a task ended.
pub(crate) enum Outcome {
    /// The request's result (a tool error included).
    Completed(JsonObject),
    /// A JSON-RPC error.
    Failed(RpcError),
}

struct State {
    status: TaskStatus,
    message: Option<String>,
    updated: SystemTime,
    pending: BTreeMap<String, Pending>,
    answers: BTreeMap<String, InputResponse>,
    /// The handler's state of its last explicit `InputRequired`.
    explicit: Option<Value>,
    rounds: u16,
    /// Requests of a session-era task waiting for the client's answer.
    forwarded: usize,
    result: Option<JsonObject>,
    error: Option<RpcError>,
}

/// Limits on the input one task may ask for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InputLimits {
    /// Asks outstanding at the same time.
    pub(crate) max_pending: usize,
    /// Distinct keys over the task's lifetime.
    pub(crate) max_keys: usize,
    /// Explicit `InputRequired` rounds.
    pub(crate) max_rounds: u16,
}

/// Where a task is created and found.
#[derive(Clone, Default)]
pub(crate) struct Placement {
    /// The session of a 2025-11-25 task: found only from that session. `None`: a task of the
    /// extension, found by stateless requests.
    pub(crate) session: Option<Arc<ClientScope>>,
    /// The time to live the client asked for; the store's is the most it gets.
    pub(crate) ttl: Option<Duration>,
    /// The task's record is kept in the store's shared backend too (on a server with a
    /// [`TaskBackend`](super::shared::TaskBackend)).
    pub(crate) shared: bool,
    /// The id of the session of a 2025-11-25 task, by which other replicas find it (with
    /// `shared`).
    pub(crate) session_key: Option<Arc<str>>,
}

/// One task.
pub(crate) struct TaskRecord {
    pub(crate) id: Arc<str>,
    owner: Option<String>,
    /// The session a 2025-11-25 task belongs to. Weak: the task does not keep the session's
    /// state alive, while the allocation (and so the address compared) is not reused.
    session: Option<Weak<ClientScope>>,
    created: SystemTime,
    pub(crate) expires_at: tokio::time::Instant,
    ttl: Duration,
    poll_interval: Duration,
    /// Fires on `tasks/cancel` and at expiry; the handler's context carries it.
    pub(crate) cancel: CancellationToken,
    limits: InputLimits,
    /// Its record is mirrored to the shared backend.
    shared: bool,
    /// The id of its session, for the shared backend (2025-11-25 tasks).
    session_key: Option<Arc<str>>,
    state: Mutex<State>,
    changes: broadcast::Sender<Arc<str>>,
}

impl std::fmt::Debug for TaskRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskRecord")
            .field("id", &self.id)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl TaskRecord {
    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn changed(&self, state: &mut State) {
        state.updated = SystemTime::now().max(self.created);
        // Nobody listening is fine.
        let _ = self.changes.send(Arc::clone(&self.id));
    }

    /// The caller that created the task.
    pub(crate) fn owner(&self) -> Option<&str> {
        self.owner.as_deref()
    }

    /// How long the task is kept after its creation.
    pub(crate) fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Whether its record is mirrored to the shared backend.
    pub(crate) fn is_shared(&self) -> bool {
        self.shared
    }

    /// The id of its session, for the shared backend.
    pub(crate) fn session_key(&self) -> Option<&str> {
        self.session_key.as_deref()
    }

    /// Whether a request of `owner` may see this task.
    pub(crate) fn owned_by(&self, owner: Option<&str>) -> bool {
        self.owner.as_deref() == owner
    }

    /// Whether a request of `owner` from `session` (`None`: a stateless request) may see this
    /// task.
    fn visible(&self, owner: Option<&str>, session: Option<&Arc<ClientScope>>) -> bool {
        let same_place = match (&self.session, session) {
            (None, None) => true,
            (Some(mine), Some(theirs)) => std::ptr::eq(mine.as_ptr(), Arc::as_ptr(theirs)),
            _ => false,
        };
        same_place && self.owned_by(owner)
    }

    /// When the task was created (orders `tasks/list`).
    pub(crate) fn created(&self) -> SystemTime {
        self.created
    }

    /// The final result or error, once the task has ended: `(status, result, error)`.
    pub(crate) fn ended(&self) -> Option<(TaskStatus, Option<JsonObject>, Option<RpcError>)> {
        let state = self.state();
        state
            .status
            .is_terminal()
            .then(|| (state.status, state.result.clone(), state.error.clone()))
    }

    /// Waits until the task has ended (or the store is gone).
    pub(crate) async fn until_ended(&self) {
        // Subscribed before the status is read: no change is missed in between.
        let mut changes = self.changes.subscribe();
        loop {
            if self.status().is_terminal() {
                return;
            }
            match changes.recv().await {
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    /// A request of a session-era task went to the client: `input_required` until answered.
    pub(crate) fn forwarded_ask(&self) {
        let mut state = self.state();
        if state.status.is_terminal() {
            return;
        }
        state.forwarded += 1;
        if state.status != TaskStatus::InputRequired {
            state.status = TaskStatus::InputRequired;
            self.changed(&mut state);
        }
    }

    /// The client answered (or failed) a request of a session-era task: `working` again once
    /// none is outstanding.
    pub(crate) fn forwarded_answer(&self) {
        let mut state = self.state();
        state.forwarded = state.forwarded.saturating_sub(1);
        if state.forwarded == 0 && state.status == TaskStatus::InputRequired {
            state.status = TaskStatus::Working;
            self.changed(&mut state);
        }
    }

    pub(crate) fn status(&self) -> TaskStatus {
        self.state().status
    }

    /// The task's fields (what a `CreateTaskResult` carries).
    pub(crate) fn task(&self) -> Task {
        let state = self.state();
        self.task_of(&state)
    }

    fn task_of(&self, state: &State) -> Task {
        let mut task = Task::new(
            self.id.to_string(),
            state.status,
            rfc3339(self.created),
            Some(millis(self.ttl)),
        );
        task.last_updated_at = rfc3339(state.updated);
        task.status_message.clone_from(&state.message);
        task.poll_interval_ms = Some(millis(self.poll_interval).max(1));
        task
    }

    /// The task with what its status implies (the result of `tasks/get`).
    pub(crate) fn detailed(&self) -> DetailedTask {
        let state = self.state();
        let mut detailed = DetailedTask::from(self.task_of(&state));
        match state.status {
            TaskStatus::InputRequired => {
                // Inserted one by one (collecting sorts first: one more sort instantiation).
                let mut requests = BTreeMap::new();
                for (k, p) in &state.pending {
                    requests.insert(k.clone(), p.request.clone());
                }
                detailed.input_requests = Some(requests);
            }
            TaskStatus::Completed => detailed.result.clone_from(&state.result),
            TaskStatus::Failed => detailed.error.clone_from(&state.error),
            TaskStatus::Working | TaskStatus::Cancelled => {}
        }
        detailed
    }

    /// What the shared backend keeps: [`detailed`](Self::detailed), with the result of a task
    /// that ended `failed` on a tool error (2025-11-25 `tasks/result` answers it).
    pub(crate) fn shared_view(&self) -> DetailedTask {
        let mut detailed = self.detailed();
        if detailed.result.is_none() && detailed.task.status == TaskStatus::Failed {
            detailed.result.clone_from(&self.state().result);
        }
        detailed
    }

    /// An ask of the handler under `key`.
    pub(crate) fn ask(&self, key: &str, request: InputRequest) -> Result<Asked, AskError> {
        let mut state = self.state();
        if let Some(answer) = state.answers.get(key) {
            return Ok(Asked::Answered(Box::new(answer.clone())));
        }
        if state.status.is_terminal() {
            return Err(AskError::Cancelled);
        }
        let (tx, rx) = oneshot::channel();
        if let Some(pending) = state.pending.get_mut(key) {
            pending.waiters.push(tx);
            return Ok(Asked::Wait(rx));
        }
        if state.pending.len() >= self.limits.max_pending
            || state.pending.len() + state.answers.len() >= self.limits.max_keys
        {
            return Err(AskError::InvalidRequest(format!(
                "the task asked for more input than allowed ({} outstanding, {} in all)",
                self.limits.max_pending, self.limits.max_keys
            )));
        }
        state.pending.insert(
            key.to_owned(),
            Pending {
                request,
                waiters: vec![tx],
            },
        );
        state.status = TaskStatus::InputRequired;
        self.changed(&mut state);
        Ok(Asked::Wait(rx))
    }

    /// The answer the client gave under `key`, if any.
    pub(crate) fn answer(&self, key: &str) -> Option<InputResponse> {
        self.state().answers.get(key).cloned()
    }

    /// Counts a round of the explicit layer and keeps the handler's state; `Err` past the limit.
    pub(crate) fn explicit_round(&self, handler_state: Option<Value>) -> Result<(), String> {
        let mut state = self.state();
        state.rounds = state.rounds.saturating_add(1);
        if state.rounds > self.limits.max_rounds {
            return Err(format!(
                "the task did not complete within {} rounds of input",
                self.limits.max_rounds
            ));
        }
        if handler_state.is_some() {
            state.explicit = handler_state;
        }
        Ok(())
    }

    /// The handler's state of its last explicit `InputRequired`.
    pub(crate) fn explicit_state(&self) -> Option<Value> {
        self.state().explicit.clone()
    }

    /// Delivers answers (`tasks/update`). Keys that are not outstanding are ignored; an answer
    /// of the wrong shape for its request refuses the whole update (`-32602`) and changes
    /// nothing. The task is `working` again once nothing is outstanding.
    pub(crate) fn update(&self, responses: BTreeMap<String, Value>) -> Result<(), RpcError> {
        let mut state = self.state();
        let mut parsed = Vec::new();
        for (key, value) in responses {
            let Some(pending) = state.pending.get(&key) else {
                continue;
            };
            let answer = InputKind::of(&pending.request)
                .parse_response(&value)
                .map_err(|e| RpcError {
                    code: error_codes::INVALID_PARAMS,
                    message: format!("inputResponses.{key}: {e}"),
                    data: None,
                })?;
            parsed.push((key, answer));
        }
        if parsed.is_empty() {
            return Ok(());
        }
        for (key, answer) in parsed {
            if let Some(pending) = state.pending.remove(&key) {
                for waiter in pending.waiters {
                    // A waiter that went away (its handler was cancelled) needs no answer.
                    let _ = waiter.send(answer.clone());
                }
            }
            state.answers.insert(key, answer);
        }
        if state.pending.is_empty() && state.status == TaskStatus::InputRequired {
            state.status = TaskStatus::Working;
        }
        self.changed(&mut state);
        Ok(())
    }

    /// Sets the status message (the handler reported progress).
    pub(crate) fn set_message(&self, message: &str) {
        let mut state = self.state();
        if state.status.is_terminal() || state.message.as_deref() == Some(message) {
            return;
        }
        state.message = Some(message.to_owned());
        self.changed(&mut state);
    }

    /// Ends the task unless it already ended; `false` if it had.
    fn end(&self, status: TaskStatus, message: Option<String>, outcome: Option<Outcome>) -> bool {
        let mut state = self.state();
        if state.status.is_terminal() {
            return false;
        }
        state.status = status;
        if message.is_some() {
            state.message = message;
        }
        // Dropping the waiters fails the handler's outstanding asks.
        state.pending.clear();
        match outcome {
            Some(Outcome::Completed(result)) => state.result = Some(result),
            Some(Outcome::Failed(error)) => state.error = Some(error),
            None => {}
        }
        self.changed(&mut state);
        true
    }

    /// `tasks/cancel`: the task ends `cancelled` (unless it ended already) and its handler's
    /// context is cancelled. Cancelling again changes nothing.
    pub(crate) fn cancel(&self) {
        self.end(TaskStatus::Cancelled, None, None);
        self.cancel.cancel();
    }

    /// `tasks/cancel` of 2025-11-25: as [`cancel`](Self::cancel) with `message`, but a task
    /// that already ended is refused with its status.
    pub(crate) fn cancel_running(&self, message: &str) -> Result<(), TaskStatus> {
        if !self.end(TaskStatus::Cancelled, Some(message.to_owned()), None) {
            return Err(self.status());
        }
        self.cancel.cancel();
        Ok(())
    }

    /// The handler of a 2025-11-25 task finished: a tool result with `isError: true` ends the
    /// task `failed` (with the result kept for `tasks/result`), a JSON-RPC error `failed` with
    /// its message as the status message, anything else `completed`.
    pub(crate) fn finish_session(&self, outcome: Outcome) {
        match outcome {
            Outcome::Completed(result) if result.get("isError") == Some(&Value::Bool(true)) => {
                self.end(
                    TaskStatus::Failed,
                    Some("the tool reported an error".into()),
                    Some(Outcome::Completed(result)),
                );
            }
            Outcome::Failed(error) => {
                let message = error.message.clone();
                self.end(
                    TaskStatus::Failed,
                    Some(message),
                    Some(Outcome::Failed(error)),
                );
            }
            completed @ Outcome::Completed(_) => self.finish(completed),
        }
    }

    /// The handler finished: `completed` with its result or `failed` with its error.
    pub(crate) fn finish(&self, outcome: Outcome) {
        let status = match &outcome {
            Outcome::Completed(_) => TaskStatus::Completed,
            Outcome::Failed(_) => TaskStatus::Failed,
        };
        self.end(status, None, Some(outcome));
    }

    /// The time to live ran out while the handler still ran.
    pub(crate) fn expire(&self) {
        let error = RpcError {
            code: error_codes::INTERNAL_ERROR,
            message: "the task expired before it completed".into(),
            data: None,
        };
        self.end(
            TaskStatus::Failed,
            Some("expired".into()),
            Some(Outcome::Failed(error)),
        );
        self.cancel.cancel();
    }
}

/// How many task changes a slow watcher may fall behind before it skips ahead.
const CHANGES_CAPACITY: usize = 256;

/// Every live task of a server.
pub(crate) struct TaskStore {
    options: TaskOptions,
    tasks: Mutex<HashMap<Arc<str>, Arc<TaskRecord>>>,
    /// Made when first needed (a first task, a first watcher): its 256 slots are 10 KiB that a
    /// server without tasks would otherwise allocate and write at every start.
    changes: std::sync::OnceLock<broadcast::Sender<Arc<str>>>,
    /// Fires when the store is dropped (the server is gone): supervisors stop.
    closed: CancellationToken,
    /// Where the records of the extension's tasks are shared with other replicas.
    shared: Option<Shared>,
}

impl Drop for TaskStore {
    fn drop(&mut self) {
        self.closed.cancel();
        for task in lock(&self.tasks).values() {
            task.cancel.cancel();
        }
    }
}

impl TaskStore {
    pub(crate) fn new(options: TaskOptions) -> Self {
        Self {
            options,
            tasks: Mutex::new(HashMap::new()),
            changes: std::sync::OnceLock::new(),
            closed: CancellationToken::new(),
            shared: None,
        }
    }

    /// A store whose tasks of the extension are shared through `backend`.
    pub(crate) fn with_backend(options: TaskOptions, backend: Arc<dyn TaskBackend>) -> Self {
        let mut store = Self::new(options);
        store.shared = Some(Shared::new(backend));
        store
    }

    /// The shared backend, if any.
    pub(crate) fn shared(&self) -> Option<&Shared> {
        self.shared.as_ref()
    }

    pub(crate) fn options(&self) -> &TaskOptions {
        &self.options
    }

    /// The task `id` this replica holds, whoever created it.
    pub(crate) fn local(&self, id: &str) -> Option<Arc<TaskRecord>> {
        lock(&self.tasks).get(id).cloned()
    }

    /// The ids of the shared tasks this replica holds (only those still running with
    /// `running`).
    pub(crate) fn shared_ids(&self, running: bool) -> Vec<Arc<str>> {
        lock(&self.tasks)
            .values()
            .filter(|t| t.shared && !(running && t.status().is_terminal()))
            .map(|t| Arc::clone(&t.id))
            .collect()
    }

    pub(crate) fn closed(&self) -> CancellationToken {
        self.closed.clone()
    }

    /// Ids of tasks whose state changed, as they change.
    pub(crate) fn changes(&self) -> broadcast::Receiver<Arc<str>> {
        self.sender().subscribe()
    }

    fn sender(&self) -> &broadcast::Sender<Arc<str>> {
        self.changes
            .get_or_init(|| broadcast::channel(CHANGES_CAPACITY).0)
    }

    /// Drops every expired task (cancelling the ones still running).
    fn sweep(tasks: &mut HashMap<Arc<str>, Arc<TaskRecord>>, now: tokio::time::Instant) {
        tasks.retain(|_, task| {
            let live = task.expires_at > now;
            if !live {
                task.expire();
            }
            live
        });
    }

    /// Creates a `working` task of the extension for `owner`, whose handler's context carries
    /// `cancel`.
    #[cfg(test)]
    pub(crate) fn create(
        &self,
        owner: Option<String>,
        cancel: CancellationToken,
        limits: InputLimits,
    ) -> Result<Arc<TaskRecord>, TaskBackendError> {
        self.create_in(owner, cancel, limits, Placement::default())
    }

    /// [`create`](Self::create) in `placement`.
    pub(crate) fn create_in(
        &self,
        owner: Option<String>,
        cancel: CancellationToken,
        limits: InputLimits,
        placement: Placement,
    ) -> Result<Arc<TaskRecord>, TaskBackendError> {
        let mut tasks = lock(&self.tasks);
        let now = tokio::time::Instant::now();
        Self::sweep(&mut tasks, now);
        if tasks.len() >= self.options.max_tasks {
            return Err(TaskBackendError::Full(self.options.max_tasks));
        }
        if let Some(owner) = &owner {
            let held = tasks
                .values()
                .filter(|t| t.owner.as_deref() == Some(owner))
                .count();
            if held >= self.options.max_tasks_per_caller {
                return Err(TaskBackendError::CallerFull(
                    self.options.max_tasks_per_caller,
                ));
            }
        }
        let id: Arc<str> = loop {
            let id = fresh_id()
                .map_err(|e| TaskBackendError::Unavailable(format!("no task id: {e}")))?;
            if !tasks.contains_key(id.as_str()) {
                break Arc::from(id);
            }
        };
        let created = SystemTime::now();
        let ttl = placement
            .ttl
            .map_or(self.options.ttl, |asked| asked.min(self.options.ttl))
            .max(Duration::from_millis(1));
        let record = Arc::new(TaskRecord {
            id: Arc::clone(&id),
            owner,
            session: placement.session.as_ref().map(Arc::downgrade),
            created,
            expires_at: now + ttl,
            ttl,
            poll_interval: self.options.poll_interval,
            cancel,
            limits,
            shared: placement.shared && self.shared.is_some(),
            session_key: placement.session_key,
            state: Mutex::new(State {
                status: TaskStatus::Working,
                message: None,
                updated: created,
                pending: BTreeMap::new(),
                answers: BTreeMap::new(),
                explicit: None,
                rounds: 0,
                forwarded: 0,
                result: None,
                error: None,
            }),
            changes: self.sender().clone(),
        });
        tasks.insert(id, Arc::clone(&record));
        Ok(record)
    }

    /// The task `id` of the extension if it exists, has not expired and belongs to `owner`.
    pub(crate) fn get(&self, id: &str, owner: Option<&str>) -> Option<Arc<TaskRecord>> {
        self.get_in(id, owner, None)
    }

    /// The task `id` if it exists, has not expired, belongs to `owner` and was created in
    /// `session` (`None`: by a stateless request).
    pub(crate) fn get_in(
        &self,
        id: &str,
        owner: Option<&str>,
        session: Option<&Arc<ClientScope>>,
    ) -> Option<Arc<TaskRecord>> {
        let tasks = lock(&self.tasks);
        let task = tasks.get(id)?;
        (task.expires_at > tokio::time::Instant::now() && task.visible(owner, session))
            .then(|| Arc::clone(task))
    }

    /// Every live task `owner` created in `session`, oldest first (ties by id).
    pub(crate) fn list_in(
        &self,
        owner: Option<&str>,
        session: Option<&Arc<ClientScope>>,
    ) -> Vec<Arc<TaskRecord>> {
        let now = tokio::time::Instant::now();
        let mut found: Vec<_> = lock(&self.tasks)
            .values()
            .filter(|t| t.expires_at > now && t.visible(owner, session))
            .cloned()
            .collect();
        found.sort_by(|a, b| (a.created, &a.id).cmp(&(b.created, &b.id)));
        found
    }

    /// Forgets a task.
    pub(crate) fn remove(&self, id: &str) {
        let removed = lock(&self.tasks).remove(id);
        if let Some(task) = removed {
            task.cancel.cancel();
        }
    }

    /// Tasks held at the moment (expired ones included until the next sweep).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.tasks).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn limits() -> InputLimits {
        InputLimits {
            max_pending: 2,
            max_keys: 3,
            max_rounds: 2,
        }
    }

    fn store(max: usize, per_caller: usize, ttl: Duration) -> TaskStore {
        TaskStore::new(
            TaskOptions::default()
                .max_tasks(max)
                .max_tasks_per_caller(per_caller)
                .ttl(ttl),
        )
    }

    fn elicit(message: &str) -> InputRequest {
        serde_json::from_value(json!({
            "method": "elicitation/create",
            "params": {"mode": "form", "message": message,
                       "requestedSchema": {"type": "object", "properties": {}}}
        }))
        .unwrap()
    }

    fn accept() -> Value {
        json!({"action": "accept", "content": {}})
    }

    #[tokio::test]
    async fn watchers_see_changes_whether_they_come_before_or_after_the_first_task() {
        let s = store(4, 4, Duration::from_secs(60));
        assert!(s.changes.get().is_none(), "no channel before it is needed");
        let mut early = s.changes();
        let t = s.create(None, CancellationToken::new(), limits()).unwrap();
        let mut late = s.changes();
        t.set_message("working on it");
        assert_eq!(&*early.recv().await.unwrap(), &*t.id);
        assert_eq!(&*late.recv().await.unwrap(), &*t.id);
    }

    #[tokio::test]
    async fn lifecycle_with_partial_updates() {
        let s = store(4, 4, Duration::from_secs(60));
        let t = s.create(None, CancellationToken::new(), limits()).unwrap();
        assert_eq!(t.id.len(), 32);
        assert_eq!(t.status(), TaskStatus::Working);
        let Ok(Asked::Wait(first)) = t.ask("a", elicit("A?")) else {
            panic!("a is outstanding")
        };
        let Ok(Asked::Wait(second)) = t.ask("b", elicit("B?")) else {
            panic!("b is outstanding")
        };
        let d = t.detailed();
        assert_eq!(d.task.status, TaskStatus::InputRequired);
        assert_eq!(d.input_requests.as_ref().unwrap().len(), 2);
        // A third outstanding ask is over the limit.
        assert!(matches!(
            t.ask("c", elicit("C?")),
            Err(AskError::InvalidRequest(_))
        ));
        // Unknown keys are ignored; a malformed answer refuses the whole update.
        t.update([("zzz".to_owned(), accept())].into()).unwrap();
        let e = t
            .update([("a".to_owned(), accept()), ("b".to_owned(), json!(5))].into())
            .unwrap_err();
        assert_eq!(e.code, error_codes::INVALID_PARAMS);
        assert_eq!(t.detailed().input_requests.unwrap().len(), 2);
        // A partial update keeps the task waiting for the rest.
        t.update([("a".to_owned(), accept())].into()).unwrap();
        assert!(matches!(first.await, Ok(InputResponse::Elicit(_))));
        let d = t.detailed();
        assert_eq!(d.task.status, TaskStatus::InputRequired);
        assert_eq!(d.input_requests.unwrap().keys().collect::<Vec<_>>(), ["b"]);
        t.update([("b".to_owned(), accept())].into()).unwrap();
        assert!(second.await.is_ok());
        assert_eq!(t.status(), TaskStatus::Working);
        // Keys are never reused: asking "a" again returns its answer.
        assert!(matches!(t.ask("a", elicit("A?")), Ok(Asked::Answered(_))));
        assert!(t.answer("b").is_some());
        t.set_message("halfway");
        t.finish(Outcome::Completed(
            json!({"content": []}).as_object().cloned().unwrap(),
        ));
        let d = t.detailed();
        assert_eq!(d.task.status, TaskStatus::Completed);
        assert_eq!(d.task.status_message.as_deref(), Some("halfway"));
        assert!(d.result.is_some() && d.error.is_none());
        // Terminal: cancel changes nothing, asks fail.
        t.cancel();
        assert_eq!(t.status(), TaskStatus::Completed);
        assert!(matches!(t.ask("z", elicit("Z?")), Err(AskError::Cancelled)));
    }

    #[tokio::test]
    async fn cancel_ends_waiters_and_the_context() {
        let s = store(4, 4, Duration::from_secs(60));
        let token = CancellationToken::new();
        let t = s.create(None, token.clone(), limits()).unwrap();
        let Ok(Asked::Wait(rx)) = t.ask("a", elicit("A?")) else {
            panic!()
        };
        t.cancel();
        assert!(token.is_cancelled());
        assert!(rx.await.is_err());
        assert_eq!(t.status(), TaskStatus::Cancelled);
        t.finish(Outcome::Failed(RpcError {
            code: -1,
            message: "late".into(),
            data: None,
        }));
        let d = t.detailed();
        assert_eq!(d.task.status, TaskStatus::Cancelled);
        assert!(d.error.is_none());
    }

    #[tokio::test]
    async fn limits_and_owners() {
        let s = store(3, 2, Duration::from_secs(60));
        let alice = || Some("alice".to_owned());
        let a1 = s
            .create(alice(), CancellationToken::new(), limits())
            .unwrap();
        s.create(alice(), CancellationToken::new(), limits())
            .unwrap();
        assert_eq!(
            s.create(alice(), CancellationToken::new(), limits())
                .unwrap_err(),
            TaskBackendError::CallerFull(2)
        );
        let anon = s.create(None, CancellationToken::new(), limits()).unwrap();
        assert_eq!(
            s.create(Some("bob".into()), CancellationToken::new(), limits())
                .unwrap_err(),
            TaskBackendError::Full(3)
        );
        // Only the owner finds a task.
        assert!(s.get(&a1.id, Some("alice")).is_some());
        assert!(s.get(&a1.id, Some("bob")).is_none());
        assert!(s.get(&a1.id, None).is_none());
        assert!(s.get(&anon.id, None).is_some());
        assert!(s.get(&anon.id, Some("alice")).is_none());
        assert!(s.get("no-such-task", None).is_none());
        s.remove(&a1.id);
        assert!(a1.cancel.is_cancelled());
        assert_eq!(s.len(), 2);
        s.create(Some("bob".into()), CancellationToken::new(), limits())
            .unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn expired_tasks_disappear() {
        let s = store(1, 1, Duration::from_secs(10));
        let token = CancellationToken::new();
        let t = s.create(None, token.clone(), limits()).unwrap();
        let expired_at = t.expires_at;
        assert!(s.create(None, CancellationToken::new(), limits()).is_err());
        tokio::time::advance(Duration::from_secs(9)).await;
        assert!(s.get(&t.id, None).is_some());
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(tokio::time::Instant::now() >= expired_at);
        assert!(s.get(&t.id, None).is_none());
        // Creating sweeps: the slot is free again and the running task was cancelled.
        s.create(None, CancellationToken::new(), limits()).unwrap();
        assert!(token.is_cancelled());
        assert_eq!(t.status(), TaskStatus::Failed);
        assert_eq!(s.len(), 1);
    }
}
