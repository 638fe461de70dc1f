//! Tasks shared by every replica of a server: a [`TaskBackend`] holds their records, so that a
//! task created through one replica is read, updated, cancelled, listed and its result read
//! through any other (the tasks of the extension, and those of 2025-11-25 sessions when the
//! transport names the session).
//!
//! The replica that runs a task keeps its live state (the handler, its cancellation token, the
//! answers it waits for) in its own [`TaskStore`]; every change of that state is written to the
//! backend by a background loop, which also renews the task's lease. Every other replica reads
//! the record from the backend and reaches the running replica through signals: a cancellation
//! stops the handler, answers of `tasks/update` reach the asks it waits on. A task whose lease
//! ran out while it had not ended (its replica died) is ended `failed` by the first replica that
//! reads it; its handler is not run again.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use mcp_jsonrpc::ErrorObject;
use mcp_types::wire::InputKind;
use mcp_types::wire::tasks::{DetailedTask, TaskStatus};
use mcp_types::{RpcError, error_codes};
use serde_json::Value;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::store::{TaskRecord, TaskStore};
use super::time::rfc3339;

/// What the methods of a [`TaskBackend`] return.
pub type TaskFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A task as every replica sees it: its caller, its session, when it was created and what
/// `tasks/get` answers.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SharedTask {
    /// The caller that created it (`None`: requests that name no caller).
    pub owner: Option<String>,
    /// The session of a 2025-11-25 task (`None`: a task of the extension).
    pub session: Option<String>,
    /// When it was created (orders `tasks/list`).
    pub created: SystemTime,
    /// The task, with its input requests, result (of a completed task, or of one that failed
    /// on a tool error) or error.
    pub detailed: DetailedTask,
}

impl SharedTask {
    /// A task of `owner`, in `session` (2025-11-25), created at `created`.
    pub fn new(
        owner: Option<String>,
        session: Option<String>,
        created: SystemTime,
        detailed: DetailedTask,
    ) -> Self {
        Self {
            owner,
            session,
            created,
            detailed,
        }
    }

    /// The task id.
    pub fn id(&self) -> &str {
        &self.detailed.task.task_id
    }

    /// The status.
    pub fn status(&self) -> TaskStatus {
        self.detailed.task.status
    }
}

/// A task read from a [`TaskBackend`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LoadedTask {
    /// The record.
    pub task: SharedTask,
    /// The task has not ended and its lease ran out: the replica running it is gone.
    pub orphaned: bool,
}

impl LoadedTask {
    /// A task read from the store; `orphaned` when it has not ended and its lease ran out.
    pub fn new(task: SharedTask, orphaned: bool) -> Self {
        Self { task, orphaned }
    }
}

/// What replicas tell each other about tasks.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TaskSignal {
    /// Stop the handler of this task (`tasks/cancel` through another replica).
    Cancel {
        /// The task.
        id: String,
    },
    /// Answers for this task's outstanding input requests (`tasks/update` through another
    /// replica).
    Update {
        /// The task.
        id: String,
        /// The answers, by input key.
        responses: BTreeMap<String, Value>,
    },
    /// The record of this task changed.
    Changed {
        /// The task.
        id: String,
    },
}

/// What a [`TaskBackend`] hands each signal to.
pub type TaskSignalHandler = Arc<dyn Fn(TaskSignal) + Send + Sync>;

/// Why a [`TaskBackend`] call failed, or a task could not be created in this replica's own
/// store.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskBackendError {
    /// The caller holds the most tasks it may (over every replica, with a backend).
    CallerFull(usize),
    /// The store holds the most tasks it may.
    Full(usize),
    /// The store is unreachable, did not answer in time, or holds something unreadable; or no
    /// task id could be drawn from the system's random source.
    Unavailable(String),
}

impl fmt::Display for TaskBackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskBackendError::CallerFull(e) => write!(
                f,
                "the caller holds the most tasks it may ({e}); try again later"
            ),
            TaskBackendError::Full(e) => write!(
                f,
                "the task store holds the most tasks it may ({e}); try again later"
            ),
            TaskBackendError::Unavailable(e) => write!(f, "the task store is unavailable: {e}"),
        }
    }
}

impl std::error::Error for TaskBackendError {}

/// Where the tasks of the extension are kept when several replicas serve them
/// ([`ServerBuilder::task_backend`](crate::ServerBuilder::task_backend)).
///
/// The replica that runs a task writes its record ([`create`](Self::create), then
/// [`save`](Self::save) at every change) and renews its lease ([`renew`](Self::renew)); any
/// replica reads it ([`load`](Self::load)). A record that has ended is never written over by
/// [`save`](Self::save) or [`end`](Self::end): the first end wins (a cancellation through one
/// replica against the handler finishing on another, say). Every call is bounded by the
/// backend's own timeout.
pub trait TaskBackend: Send + Sync + 'static {
    /// Stores a new task, kept for `ttl` and leased for [`lease`](Self::lease). Refused when
    /// the task's caller holds `max_per_caller` live tasks already
    /// ([`TaskBackendError::CallerFull`]; requests that name no caller are not counted).
    fn create<'a>(
        &'a self,
        task: &'a SharedTask,
        ttl: Duration,
        max_per_caller: usize,
    ) -> TaskFuture<'a, Result<(), TaskBackendError>>;

    /// Writes a task this replica runs, renews its lease and tells the other replicas
    /// ([`TaskSignal::Changed`]). `false` when nothing was written: the stored task has ended
    /// already, or is gone.
    fn save<'a>(&'a self, task: &'a SharedTask) -> TaskFuture<'a, Result<bool, TaskBackendError>>;

    /// Writes the end of a task (`task` has a terminal status) unless the stored task has ended
    /// already, and tells the other replicas. With `orphaned`, only while its lease has run
    /// out. `false` when nothing was written.
    fn end<'a>(
        &'a self,
        task: &'a SharedTask,
        orphaned: bool,
    ) -> TaskFuture<'a, Result<bool, TaskBackendError>>;

    /// The task `id`, if it is stored and has not expired.
    fn load<'a>(
        &'a self,
        id: &'a str,
    ) -> TaskFuture<'a, Result<Option<LoadedTask>, TaskBackendError>>;

    /// The live tasks of a 2025-11-25 session, oldest first (a bounded number).
    fn list<'a>(
        &'a self,
        session: &'a str,
    ) -> TaskFuture<'a, Result<Vec<LoadedTask>, TaskBackendError>>;

    /// Renews the leases of tasks this replica runs.
    fn renew<'a>(&'a self, ids: &'a [Arc<str>]) -> TaskFuture<'a, Result<(), TaskBackendError>>;

    /// Sends a signal to every replica (this one included).
    fn signal<'a>(&'a self, signal: TaskSignal) -> TaskFuture<'a, Result<(), TaskBackendError>>;

    /// Starts handing every replica's signals to `deliver` (called once, when the server is
    /// built).
    fn subscribe(&self, deliver: TaskSignalHandler);

    /// How long a lease lasts: a task not renewed for that long is orphaned. The running
    /// replica renews it three times as often.
    fn lease(&self) -> Duration;

    /// The longest one call waits for the store; also the longest `tasks/update` through
    /// another replica waits for the running one to record the answers.
    fn timeout(&self) -> Duration;
}

/// How many remote task changes a waiter may fall behind before it skips ahead.
const REMOTE_CAPACITY: usize = 64;

/// The backend of a store whose tasks are shared.
pub(crate) struct Shared {
    pub(crate) backend: Arc<dyn TaskBackend>,
    /// Ids of tasks whose record changed, as every replica's signals report them.
    remote: broadcast::Sender<Arc<str>>,
    /// The mirror loop runs (started with the first shared task).
    mirroring: std::sync::OnceLock<()>,
}

impl Shared {
    pub(crate) fn new(backend: Arc<dyn TaskBackend>) -> Self {
        Self {
            backend,
            remote: broadcast::channel(REMOTE_CAPACITY).0,
            mirroring: std::sync::OnceLock::new(),
        }
    }
}

/// The record of a task this replica runs.
pub(crate) fn snapshot(task: &TaskRecord) -> SharedTask {
    SharedTask::new(
        task.owner().map(str::to_owned),
        task.session_key().map(str::to_owned),
        task.created(),
        task.shared_view(),
    )
}

/// Subscribes `store` to the backend's signals: cancellations and answers for the tasks this
/// replica runs, changes of every task for the requests waiting on one.
pub(crate) fn subscribe(store: &Arc<TaskStore>) {
    let Some(shared) = store.shared() else {
        return;
    };
    let weak = Arc::downgrade(store);
    shared.backend.subscribe(Arc::new(move |signal| {
        let Some(store) = weak.upgrade() else {
            return;
        };
        match signal {
            TaskSignal::Cancel { id } => {
                if let Some(task) = store.local(&id) {
                    tracing::debug!(task = %id, "cancelled through another replica");
                    task.cancel();
                }
            }
            TaskSignal::Update { id, responses } => {
                let Some(task) = store.local(&id) else {
                    return;
                };
                if let Err(e) = task.update(responses) {
                    tracing::debug!(task = %id, error = %e.message, "answers from another replica refused");
                }
            }
            TaskSignal::Changed { id } => {
                if let Some(shared) = store.shared() {
                    let _ = shared.remote.send(Arc::from(id));
                }
            }
        }
    }));
}

/// Stores a task this replica just created and starts mirroring its changes.
pub(crate) async fn publish(store: &Arc<TaskStore>, task: &TaskRecord) -> Result<(), String> {
    let Some(shared) = store.shared() else {
        return Ok(());
    };
    shared.mirroring.get_or_init(|| {
        tokio::spawn(mirror(
            Arc::downgrade(store),
            store.closed(),
            store.changes(),
            Arc::clone(&shared.backend),
        ));
    });
    shared
        .backend
        .create(
            &snapshot(task),
            task.ttl(),
            store.options().max_tasks_per_caller,
        )
        .await
        .map_err(|e| e.to_string())
}

/// Writes every change of the tasks this replica runs to the backend (retrying failed writes
/// at the next renewal) and renews their leases.
async fn mirror(
    store: Weak<TaskStore>,
    closed: CancellationToken,
    mut changes: broadcast::Receiver<Arc<str>>,
    backend: Arc<dyn TaskBackend>,
) {
    let every = (backend.lease() / 3).max(Duration::from_millis(10));
    let mut renewal = tokio::time::interval(every);
    renewal.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut dirty: HashSet<Arc<str>> = HashSet::new();
    loop {
        tokio::select! {
            biased;
            () = closed.cancelled() => return,
            changed = changes.recv() => match changed {
                Ok(id) => {
                    dirty.insert(id);
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let Some(store) = store.upgrade() else { return };
                    dirty.extend(store.shared_ids(false));
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
            _ = renewal.tick() => {
                let Some(store) = store.upgrade() else { return };
                // Running here, or ended here with the end not stored yet (Redis was away):
                // still vouched for, so that no other replica ends it failed meanwhile.
                let mut running = store.shared_ids(true);
                running.extend(dirty.iter().filter(|id| !running.contains(id)).cloned().collect::<Vec<_>>());
                drop(store);
                if !running.is_empty() {
                    if let Err(e) = backend.renew(&running).await {
                        tracing::warn!(error = %e, tasks = running.len(), "task leases not renewed");
                    }
                }
            }
        }
        // Everything changed meanwhile is written together.
        while let Ok(id) = changes.try_recv() {
            dirty.insert(id);
        }
        let Some(current) = store.upgrade() else {
            return;
        };
        let pending: Vec<Arc<TaskRecord>> = dirty
            .iter()
            .filter_map(|id| current.local(id))
            .filter(|t| t.is_shared())
            .collect();
        drop(current);
        dirty.clear();
        for task in pending {
            if let Err(e) = backend.save(&snapshot(&task)).await {
                tracing::warn!(task = %task.id, error = %e, "task state not stored; retrying");
                dirty.insert(Arc::clone(&task.id));
            }
        }
    }
}

fn unavailable(e: TaskBackendError) -> ErrorObject {
    ErrorObject::internal_error(e)
}

fn unknown(id: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("unknown task: {id}"))
}

/// The message of a task whose replica stopped before it ended.
pub(crate) const ORPHANED: &str =
    "the server replica running this task stopped before the task finished";

/// `task` ended with `status` now (a cancellation, or a failure for want of its replica), with
/// `message` as its status message.
fn ended(
    task: &SharedTask,
    status: TaskStatus,
    message: Option<&str>,
    error: Option<RpcError>,
) -> SharedTask {
    let mut ended = task.clone();
    let detailed = &mut ended.detailed;
    detailed.task.status = status;
    detailed.task.last_updated_at = rfc3339(SystemTime::now());
    detailed.input_requests = None;
    detailed.result = None;
    if let Some(message) = message {
        detailed.task.status_message = Some(message.to_owned());
    }
    detailed.error = error;
    ended
}

/// Where a request looks for a task: its caller and, for a 2025-11-25 session, the session.
#[derive(Clone, Copy)]
pub(crate) struct Finder<'a> {
    pub(crate) owner: Option<&'a str>,
    pub(crate) session: Option<&'a str>,
}

impl Finder<'_> {
    fn sees(&self, task: &SharedTask) -> bool {
        task.owner.as_deref() == self.owner && task.session.as_deref() == self.session
    }
}

/// An orphaned task ended `failed` (unless it was renewed or ended meanwhile): what is stored.
async fn settle(backend: &dyn TaskBackend, loaded: LoadedTask) -> Result<SharedTask, ErrorObject> {
    if !loaded.orphaned {
        return Ok(loaded.task);
    }
    let id = loaded.task.id().to_owned();
    let failed = ended(
        &loaded.task,
        TaskStatus::Failed,
        Some(ORPHANED),
        Some(RpcError {
            code: error_codes::INTERNAL_ERROR,
            message: ORPHANED.to_owned(),
            data: None,
        }),
    );
    if backend.end(&failed, true).await.map_err(unavailable)? {
        tracing::warn!(task = %id, "task orphaned by its replica: ended failed");
        return Ok(failed);
    }
    backend
        .load(&id)
        .await
        .map_err(unavailable)?
        .map(|l| l.task)
        .ok_or_else(|| unknown(&id))
}

/// The task `id` as the backend has it, if `finder` sees it; an orphaned one is ended `failed`
/// first.
pub(crate) async fn find(
    backend: &dyn TaskBackend,
    id: &str,
    finder: Finder<'_>,
) -> Result<SharedTask, ErrorObject> {
    let loaded = backend
        .load(id)
        .await
        .map_err(unavailable)?
        .filter(|l| finder.sees(&l.task))
        .ok_or_else(|| unknown(id))?;
    settle(backend, loaded).await
}

fn backend<'a>(store: &'a TaskStore, id: &str) -> Result<&'a Shared, ErrorObject> {
    store.shared().ok_or_else(|| unknown(id))
}

/// `tasks/get`: the stored task.
pub(crate) async fn get(
    store: &TaskStore,
    id: &str,
    finder: Finder<'_>,
) -> Result<SharedTask, ErrorObject> {
    find(backend(store, id)?.backend.as_ref(), id, finder).await
}

/// `tasks/cancel`: the stored task ends `cancelled` (with `message`) unless it had ended, and
/// the replica running it stops its handler. `Err` with the stored task when it had ended.
pub(crate) async fn cancel(
    store: &TaskStore,
    id: &str,
    finder: Finder<'_>,
    message: Option<&str>,
) -> Result<Result<SharedTask, SharedTask>, ErrorObject> {
    let backend = backend(store, id)?.backend.as_ref();
    let task = find(backend, id, finder).await?;
    if task.status().is_terminal() {
        return Ok(Err(task));
    }
    let cancelled = ended(&task, TaskStatus::Cancelled, message, None);
    if !backend.end(&cancelled, false).await.map_err(unavailable)? {
        // Ended meanwhile, elsewhere.
        return Ok(Err(find(backend, id, finder).await?));
    }
    match store.local(id) {
        Some(local) => match message {
            Some(message) => {
                let _ = local.cancel_running(message);
            }
            None => local.cancel(),
        },
        None => backend
            .signal(TaskSignal::Cancel { id: id.to_owned() })
            .await
            .map_err(unavailable)?,
    }
    Ok(Ok(cancelled))
}

/// `tasks/result` (2025-11-25): the task once it has ended. Waits for a change signalled by the
/// running replica, reading again at least every poll interval (which also finds a task whose
/// replica died), and at most the store's time to live.
pub(crate) async fn until_ended(
    store: &TaskStore,
    id: &str,
    finder: Finder<'_>,
) -> Result<SharedTask, ErrorObject> {
    let shared = backend(store, id)?;
    let backend = shared.backend.as_ref();
    // Subscribed before the first read: no change is missed in between.
    let mut changes = shared.remote.subscribe();
    let deadline = tokio::time::Instant::now() + store.options().ttl;
    let poll = store.options().poll_interval.min(backend.lease());
    loop {
        let task = find(backend, id, finder).await?;
        if task.status().is_terminal() {
            return Ok(task);
        }
        let changed = async {
            loop {
                match changes.recv().await {
                    Ok(changed) if &*changed == id => return,
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => {
                        std::future::pending::<()>().await;
                    }
                }
            }
        };
        tokio::select! {
            () = changed => {}
            () = tokio::time::sleep(poll) => {}
            () = tokio::time::sleep_until(deadline) => {
                return Err(ErrorObject::internal_error(format!("task {id} did not end in time")));
            }
        }
    }
}

/// `tasks/list` (2025-11-25): the live tasks `finder` sees in its session, oldest first.
pub(crate) async fn list(
    store: &TaskStore,
    finder: Finder<'_>,
) -> Result<Vec<SharedTask>, ErrorObject> {
    let Some(session) = finder.session else {
        return Ok(Vec::new());
    };
    let backend = backend(store, session)?.backend.as_ref();
    let mut found = Vec::new();
    for loaded in backend.list(session).await.map_err(unavailable)? {
        if finder.sees(&loaded.task) {
            found.push(settle(backend, loaded).await?);
        }
    }
    found.sort_by(|a, b| (a.created, a.id()).cmp(&(b.created, b.id())));
    Ok(found)
}

/// `tasks/update`: the answers reach the replica running the task. Through another replica,
/// they are checked against the stored input requests first, and the request waits (at most
/// the backend's timeout) for the running replica to record them.
pub(crate) async fn update(
    store: &TaskStore,
    id: &str,
    owner: Option<&str>,
    responses: BTreeMap<String, Value>,
) -> Result<(), ErrorObject> {
    let shared = backend(store, id)?;
    let backend = shared.backend.as_ref();
    let task = find(
        backend,
        id,
        Finder {
            owner,
            session: None,
        },
    )
    .await?;
    if let Some(local) = store.local(id) {
        local.update(responses).map_err(crate::error::rpc_error)?;
        // Recorded before the answer, so that the next `tasks/get` anywhere sees it.
        backend.save(&snapshot(&local)).await.map_err(unavailable)?;
        return Ok(());
    }
    let pending = task.detailed.input_requests.as_ref();
    let mut relevant = false;
    for (key, value) in &responses {
        let Some(request) = pending.and_then(|p| p.get(key)) else {
            continue;
        };
        InputKind::of(request)
            .parse_response(value)
            .map_err(|e| ErrorObject::invalid_params(format!("inputResponses.{key}: {e}")))?;
        relevant = true;
    }
    if !relevant || task.status().is_terminal() {
        return Ok(());
    }
    let mut changes = shared.remote.subscribe();
    backend
        .signal(TaskSignal::Update {
            id: id.to_owned(),
            responses,
        })
        .await
        .map_err(unavailable)?;
    let recorded = async {
        loop {
            match changes.recv().await {
                Ok(changed) if &*changed == id => return,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    };
    if tokio::time::timeout(backend.timeout(), recorded)
        .await
        .is_err()
    {
        tracing::debug!(
            task = id,
            "answers forwarded; their recording was not seen in time"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::TaskOptions;
    use mcp_types::wire::tasks::Task;
    use serde_json::json;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// A backend in memory: records, whether each lease ran out, the signals sent.
    #[derive(Default)]
    struct Memory {
        records: Mutex<HashMap<String, (SharedTask, bool)>>,
        signals: Mutex<Vec<TaskSignal>>,
    }

    impl Memory {
        fn put(&self, task: SharedTask, lease_ran_out: bool) {
            let id = task.id().to_owned();
            self.records
                .lock()
                .unwrap()
                .insert(id, (task, lease_ran_out));
        }

        fn stored(&self, id: &str) -> SharedTask {
            self.records.lock().unwrap()[id].0.clone()
        }

        fn write(&self, task: &SharedTask, orphaned: bool) -> bool {
            let mut records = self.records.lock().unwrap();
            let Some((stored, ran_out)) = records.get_mut(task.id()) else {
                return false;
            };
            if stored.status().is_terminal() || (orphaned && !*ran_out) {
                return false;
            }
            *stored = task.clone();
            true
        }
    }

    impl TaskBackend for Memory {
        fn create<'a>(
            &'a self,
            task: &'a SharedTask,
            _ttl: Duration,
            _max: usize,
        ) -> TaskFuture<'a, Result<(), TaskBackendError>> {
            self.put(task.clone(), false);
            Box::pin(async { Ok(()) })
        }
        fn save<'a>(
            &'a self,
            task: &'a SharedTask,
        ) -> TaskFuture<'a, Result<bool, TaskBackendError>> {
            let written = self.write(task, false);
            Box::pin(async move { Ok(written) })
        }
        fn end<'a>(
            &'a self,
            task: &'a SharedTask,
            orphaned: bool,
        ) -> TaskFuture<'a, Result<bool, TaskBackendError>> {
            let written = self.write(task, orphaned);
            Box::pin(async move { Ok(written) })
        }
        fn load<'a>(
            &'a self,
            id: &'a str,
        ) -> TaskFuture<'a, Result<Option<LoadedTask>, TaskBackendError>> {
            let found = self.records.lock().unwrap().get(id).map(|(t, ran_out)| {
                LoadedTask::new(t.clone(), *ran_out && !t.status().is_terminal())
            });
            Box::pin(async move { Ok(found) })
        }
        fn list<'a>(
            &'a self,
            session: &'a str,
        ) -> TaskFuture<'a, Result<Vec<LoadedTask>, TaskBackendError>> {
            let found = self
                .records
                .lock()
                .unwrap()
                .values()
                .filter(|(t, _)| t.session.as_deref() == Some(session))
                .map(|(t, ran_out)| {
                    LoadedTask::new(t.clone(), *ran_out && !t.status().is_terminal())
                })
                .collect();
            Box::pin(async move { Ok(found) })
        }
        fn renew<'a>(
            &'a self,
            _ids: &'a [Arc<str>],
        ) -> TaskFuture<'a, Result<(), TaskBackendError>> {
            Box::pin(async { Ok(()) })
        }
        fn signal<'a>(
            &'a self,
            signal: TaskSignal,
        ) -> TaskFuture<'a, Result<(), TaskBackendError>> {
            self.signals.lock().unwrap().push(signal);
            Box::pin(async { Ok(()) })
        }
        fn subscribe(&self, _deliver: TaskSignalHandler) {}
        fn lease(&self) -> Duration {
            Duration::from_secs(5)
        }
        fn timeout(&self) -> Duration {
            Duration::from_millis(50)
        }
    }

    fn stored(id: &str, status: TaskStatus, owner: Option<&str>) -> SharedTask {
        let task = Task::new(id, status, "2026-07-28T10:30:00.000Z", Some(60_000));
        SharedTask::new(
            owner.map(str::to_owned),
            None,
            SystemTime::UNIX_EPOCH,
            DetailedTask::from(task),
        )
    }

    const ANYONE: Finder<'static> = Finder {
        owner: None,
        session: None,
    };

    fn store(memory: &Arc<Memory>) -> TaskStore {
        TaskStore::with_backend(
            TaskOptions::default(),
            Arc::clone(memory) as Arc<dyn TaskBackend>,
        )
    }

    #[tokio::test]
    async fn an_orphaned_task_ends_failed_once_and_reads_the_same_after() {
        let memory = Arc::new(Memory::default());
        memory.put(stored("t1", TaskStatus::Working, Some("alice")), true);
        let s = store(&memory);
        // Another caller does not find it, and does not end it.
        let alice = Finder {
            owner: Some("alice"),
            session: None,
        };
        let bob = Finder {
            owner: Some("bob"),
            ..alice
        };
        let e = get(&s, "t1", bob).await.unwrap_err();
        assert_eq!(e.code, mcp_jsonrpc::codes::INVALID_PARAMS);
        assert_eq!(memory.stored("t1").status(), TaskStatus::Working);

        let failed = get(&s, "t1", alice).await.unwrap().detailed;
        assert_eq!(failed.task.status, TaskStatus::Failed);
        let error = failed.error.clone().unwrap();
        assert_eq!(error.code, error_codes::INTERNAL_ERROR);
        assert_eq!(error.message, ORPHANED);
        assert_eq!(failed.task.status_message.as_deref(), Some(ORPHANED));
        assert_eq!(memory.stored("t1").detailed, failed);
        assert_eq!(get(&s, "t1", alice).await.unwrap().detailed, failed);
        // Ended: a cancellation changes nothing and tells nobody.
        let refused = cancel(&s, "t1", alice, None).await.unwrap().unwrap_err();
        assert_eq!(refused.status(), TaskStatus::Failed);
        assert_eq!(memory.stored("t1").status(), TaskStatus::Failed);
        assert!(memory.signals.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_task_renewed_meanwhile_is_not_ended() {
        let memory = Arc::new(Memory::default());
        // The lease ran out when read, but the write finds it renewed: what is stored stands.
        memory.put(stored("t2", TaskStatus::Working, None), false);
        let loaded = LoadedTask::new(stored("t2", TaskStatus::Working, None), true);
        assert!(loaded.orphaned);
        let failed = ended(&loaded.task, TaskStatus::Failed, None, None);
        assert!(!memory.end(&failed, true).await.unwrap());
        assert_eq!(
            get(&store(&memory), "t2", ANYONE).await.unwrap().status(),
            TaskStatus::Working
        );
    }

    #[tokio::test]
    async fn cancel_and_answers_through_a_replica_that_does_not_run_the_task() {
        let memory = Arc::new(Memory::default());
        let s = store(&memory);
        memory.put(stored("t3", TaskStatus::Working, None), false);
        let cancelled = cancel(&s, "t3", ANYONE, None).await.unwrap().unwrap();
        assert_eq!(cancelled.status(), TaskStatus::Cancelled);
        assert_eq!(memory.stored("t3").status(), TaskStatus::Cancelled);
        assert_eq!(
            memory.signals.lock().unwrap().as_slice(),
            [TaskSignal::Cancel { id: "t3".into() }]
        );

        let mut asking = stored("t4", TaskStatus::InputRequired, None);
        let request: mcp_types::InputRequest = serde_json::from_value(json!({
            "method": "elicitation/create",
            "params": {"mode": "form", "message": "Name?",
                       "requestedSchema": {"type": "object", "properties": {}}}
        }))
        .unwrap();
        asking.detailed.input_requests = Some([("name".to_owned(), request)].into());
        memory.put(asking, false);
        memory.signals.lock().unwrap().clear();
        // A malformed answer is refused here; an unknown key alone is ignored; neither is sent.
        let e = update(&s, "t4", None, [("name".to_owned(), json!(5))].into())
            .await
            .unwrap_err();
        assert_eq!(e.code, mcp_jsonrpc::codes::INVALID_PARAMS);
        update(&s, "t4", None, [("other".to_owned(), json!({}))].into())
            .await
            .unwrap();
        assert!(memory.signals.lock().unwrap().is_empty());
        // A good one goes to the running replica (the wait for its write is bounded).
        let answer = json!({"action": "accept", "content": {}});
        update(&s, "t4", None, [("name".to_owned(), answer.clone())].into())
            .await
            .unwrap();
        assert_eq!(
            memory.signals.lock().unwrap().as_slice(),
            [TaskSignal::Update {
                id: "t4".into(),
                responses: [("name".to_owned(), answer)].into()
            }]
        );
    }
}
