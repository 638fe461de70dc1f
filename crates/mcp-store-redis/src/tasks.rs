//! The tasks of the extension shared by the replicas (`mcp_server::TaskBackend`, feature
//! `server`).
//!
//! * a task is one hash, `<prefix>:task:<id>`: `status`, `data` (what `tasks/get` answers, as
//!   JSON), `owner` (the caller, when requests name one), `session` (of a 2025-11-25 task),
//!   `created` (nanoseconds since the epoch) and `lease` (milliseconds of the Redis clock until
//!   which the running replica vouches for it); it expires with the task's time to live,
//!   counted from its creation;
//! * `<prefix>:tasks` and `<prefix>:tasks:owner:<caller>` are sorted sets of live task ids
//!   (scored by expiry) that bound the tasks of the deployment
//!   ([`RedisConfig::max_tasks`](crate::RedisConfig::max_tasks)) and of one caller;
//!   `<prefix>:tasks:session:<session>` lists a session's tasks (scored by creation);
//! * signals travel on the pub/sub channel `<prefix>:tasks`: `cancel\n<id>`, `changed\n<id>` and
//!   `update\n<id>\n<answers as JSON>`.
//!
//! Every write that ends a task, or changes one, is a Lua script that leaves a task that has
//! ended as it is: the first end wins. Leases are compared with the Redis clock (`TIME`), so
//! the replicas' clocks do not matter.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_server::model::wire::tasks::DetailedTask;
use mcp_server::{
    LoadedTask, SharedTask, TaskBackend, TaskBackendError, TaskFuture, TaskSignal,
    TaskSignalHandler,
};
use redis::Value;
use serde_json::Value as Json;

use crate::{RedisStore, RedisStoreError, subscription};

/// The Redis clock in milliseconds, and the terminal statuses.
const PRELUDE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function ended(s)
  return s == 'completed' or s == 'failed' or s == 'cancelled'
end
-- A task's hash as [data, owner, has owner, orphaned, session, has session, created], or nil.
local function record(key)
  local v = redis.call('HMGET', key, 'status', 'data', 'owner', 'lease', 'session', 'created')
  if not v[1] or not v[2] then return nil end
  local orphaned = 0
  if not ended(v[1]) and tonumber(v[4] or '0') < now then orphaned = 1 end
  return {v[2], v[3] or '', v[3] and 1 or 0, orphaned, v[5] or '', v[5] and 1 or 0, v[6] or '0'}
end
";

/// KEYS: task, deployment index, caller index, session index. ARGV: ttl ms, lease ms, status,
/// data, owner (`=` and the caller, or empty), most tasks, most per caller, id, session (`=`
/// and the id, or empty), created ns. Answers 1, or -1 (the deployment is full), -2 (the
/// caller is), -3 (the id is taken).
const CREATE: &str = r"
local ttl = tonumber(ARGV[1])
local owned, in_session = ARGV[5] ~= '', ARGV[9] ~= ''
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[6]) then return -1 end
if owned then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[7]) then return -2 end
end
if redis.call('EXISTS', KEYS[1]) == 1 then return -3 end
redis.call('HSET', KEYS[1], 'status', ARGV[3], 'data', ARGV[4], 'lease', now + tonumber(ARGV[2]),
  'created', ARGV[10])
if owned then redis.call('HSET', KEYS[1], 'owner', string.sub(ARGV[5], 2)) end
if in_session then redis.call('HSET', KEYS[1], 'session', string.sub(ARGV[9], 2)) end
redis.call('PEXPIRE', KEYS[1], ttl)
local function index(key, score)
  redis.call('ZADD', key, score, ARGV[8])
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end
index(KEYS[2], now + ttl)
if owned then index(KEYS[3], now + ttl) end
if in_session then index(KEYS[4], now) end
return 1
";

/// KEYS: task. ARGV: status, data, lease ms, mode (`save`, `end` or `orphan`: only while the
/// lease has run out), channel, message. Answers 1 when written (and published), else 0.
const WRITE: &str = r"
local s = redis.call('HGET', KEYS[1], 'status')
if not s or ended(s) then return 0 end
if ARGV[4] == 'orphan' and tonumber(redis.call('HGET', KEYS[1], 'lease') or '0') >= now then
  return 0
end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'data', ARGV[2], 'lease', now + tonumber(ARGV[3]))
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 1
";

/// KEYS: tasks. ARGV: lease ms. Renews the leases of those that have not ended.
const RENEW: &str = r"
for _, key in ipairs(KEYS) do
  local s = redis.call('HGET', key, 'status')
  if s and not ended(s) then redis.call('HSET', key, 'lease', now + tonumber(ARGV[1])) end
end
return 0
";

/// KEYS: task. Answers nil, or the task's record.
const LOAD: &str = r"
return record(KEYS[1]) or false
";

/// KEYS: session index. ARGV: task key prefix, most listed. Answers the records of the
/// session's live tasks, oldest first (the ids of expired ones are dropped from the index).
const LIST: &str = r"
local out = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[2]) - 1)) do
  local found = record(ARGV[1] .. id)
  if found then out[#out + 1] = found else redis.call('ZREM', KEYS[1], id) end
end
return out
";

/// The most tasks one `tasks/list` reads for a session.
const MAX_LISTED: usize = 10_000;

/// Leases renewed per script call.
const RENEW_BATCH: usize = 256;

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

fn unavailable(e: RedisStoreError) -> TaskBackendError {
    TaskBackendError::Unavailable(e.to_string())
}

fn encode(task: &SharedTask) -> Result<Vec<u8>, TaskBackendError> {
    serde_json::to_vec(&task.detailed)
        .map_err(|e| TaskBackendError::Unavailable(format!("a task does not encode: {e}")))
}

fn script(source: &str) -> String {
    format!("{PRELUDE}{source}")
}

/// The text of a signal on the channel.
fn encode_signal(signal: &TaskSignal) -> Option<String> {
    Some(match signal {
        TaskSignal::Cancel { id } => format!("cancel\n{id}"),
        TaskSignal::Changed { id } => format!("changed\n{id}"),
        TaskSignal::Update { id, responses } => {
            format!("update\n{id}\n{}", serde_json::to_string(responses).ok()?)
        }
        _ => return None,
    })
}

/// The signal [`encode_signal`] wrote; `None` for anything else.
fn decode_signal(payload: &[u8]) -> Option<TaskSignal> {
    let text = std::str::from_utf8(payload).ok()?;
    let (kind, rest) = text.split_once('\n')?;
    match kind {
        "cancel" => Some(TaskSignal::Cancel {
            id: rest.to_owned(),
        }),
        "changed" => Some(TaskSignal::Changed {
            id: rest.to_owned(),
        }),
        "update" => {
            let (id, answers) = rest.split_once('\n')?;
            let responses: BTreeMap<String, Json> = serde_json::from_str(answers).ok()?;
            Some(TaskSignal::Update {
                id: id.to_owned(),
                responses,
            })
        }
        _ => None,
    }
}

fn bulk(value: &Value) -> Option<&[u8]> {
    match value {
        Value::BulkString(bytes) => Some(bytes),
        _ => None,
    }
}

fn int(value: &Value) -> Option<i64> {
    match value {
        Value::Int(n) => Some(*n),
        _ => None,
    }
}

/// A record as the scripts answer it (see `record` in [`PRELUDE`]), of task `id`.
fn decode_loaded(id: &str, value: Value) -> Result<Option<LoadedTask>, TaskBackendError> {
    let malformed = |what: &str| TaskBackendError::Unavailable(format!("task {id}: {what}"));
    let parts = match value {
        Value::Nil => return Ok(None),
        Value::Array(parts) if parts.len() == 7 => parts,
        other => return Err(malformed(&format!("the store answered {other:?}"))),
    };
    let text = |i: usize, flag: usize| -> Result<Option<String>, TaskBackendError> {
        if int(&parts[flag]) != Some(1) {
            return Ok(None);
        }
        std::str::from_utf8(bulk(&parts[i]).unwrap_or_default())
            .map(|s| Some(s.to_owned()))
            .map_err(|e| malformed(&e.to_string()))
    };
    let data = bulk(&parts[0]).ok_or_else(|| malformed("no data"))?;
    let detailed: DetailedTask =
        serde_json::from_slice(data).map_err(|e| malformed(&e.to_string()))?;
    let owner = text(1, 2)?;
    let orphaned = int(&parts[3]) == Some(1);
    let session = text(4, 5)?;
    let created = bulk(&parts[6])
        .and_then(|b| std::str::from_utf8(b).ok())
        .and_then(|s| s.parse::<u64>().ok())
        .map_or(UNIX_EPOCH, |nanos| UNIX_EPOCH + Duration::from_nanos(nanos));
    let task = SharedTask::new(owner, session, created, detailed);
    Ok(Some(LoadedTask::new(task, orphaned)))
}

fn unix_nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl RedisStore {
    fn task_key(&self, id: &str) -> String {
        format!("{}:task:{id}", self.config.prefix)
    }

    fn session_tasks_key(&self, session: &str) -> String {
        format!("{}:tasks:session:{session}", self.config.prefix)
    }

    fn task_channel(&self) -> String {
        format!("{}:tasks", self.config.prefix)
    }

    /// Runs the script `source` (after the prelude) on `keys` with the arguments `args` adds,
    /// as the one command of a Redis call named `what`: its value.
    async fn eval<T: redis::FromRedisValue>(
        &self,
        what: &'static str,
        source: &str,
        keys: &[String],
        args: impl FnOnce(&mut redis::Pipeline),
    ) -> Result<T, TaskBackendError> {
        let (value,): (T,) = self
            .run(what, |p| {
                args(p.cmd("EVAL").arg(script(source)).arg(keys.len()).arg(keys));
            })
            .await
            .map_err(unavailable)?;
        Ok(value)
    }

    async fn write_task(
        &self,
        task: &SharedTask,
        mode: &'static str,
    ) -> Result<bool, TaskBackendError> {
        let key = self.task_key(task.id());
        let data = encode(task)?;
        let lease = millis(self.config.task_lease);
        let channel = self.task_channel();
        let message = format!("changed\n{}", task.id());
        let written: i64 = self
            .eval("task write", WRITE, &[key], |p| {
                p.arg(task.status().as_str())
                    .arg(data)
                    .arg(lease)
                    .arg(mode)
                    .arg(&channel)
                    .arg(&message);
            })
            .await?;
        Ok(written == 1)
    }
}

impl TaskBackend for RedisStore {
    fn create<'a>(
        &'a self,
        task: &'a SharedTask,
        ttl: Duration,
        max_per_caller: usize,
    ) -> TaskFuture<'a, Result<(), TaskBackendError>> {
        Box::pin(async move {
            let prefix = &self.config.prefix;
            let keys = [
                self.task_key(task.id()),
                format!("{prefix}:tasks"),
                format!(
                    "{prefix}:tasks:owner:{}",
                    task.owner.as_deref().unwrap_or("")
                ),
                self.session_tasks_key(task.session.as_deref().unwrap_or("")),
            ];
            let data = encode(task)?;
            let flagged =
                |v: &Option<String>| v.as_ref().map_or_else(String::new, |v| format!("={v}"));
            let (owner, session) = (flagged(&task.owner), flagged(&task.session));
            let created: i64 = self
                .eval("task create", CREATE, &keys, |p| {
                    p.arg(millis(ttl))
                        .arg(millis(self.config.task_lease))
                        .arg(task.status().as_str())
                        .arg(data)
                        .arg(owner)
                        .arg(self.config.max_tasks)
                        .arg(max_per_caller)
                        .arg(task.id())
                        .arg(session)
                        .arg(unix_nanos(task.created));
                })
                .await?;
            match created {
                1 => Ok(()),
                -1 => Err(TaskBackendError::Full(self.config.max_tasks)),
                -2 => Err(TaskBackendError::CallerFull(max_per_caller)),
                _ => Err(TaskBackendError::Unavailable(format!(
                    "task id {} is taken",
                    task.id()
                ))),
            }
        })
    }

    fn save<'a>(&'a self, task: &'a SharedTask) -> TaskFuture<'a, Result<bool, TaskBackendError>> {
        Box::pin(self.write_task(task, "save"))
    }

    fn end<'a>(
        &'a self,
        task: &'a SharedTask,
        orphaned: bool,
    ) -> TaskFuture<'a, Result<bool, TaskBackendError>> {
        Box::pin(self.write_task(task, if orphaned { "orphan" } else { "end" }))
    }

    fn load<'a>(
        &'a self,
        id: &'a str,
    ) -> TaskFuture<'a, Result<Option<LoadedTask>, TaskBackendError>> {
        Box::pin(async move {
            let key = self.task_key(id);
            let value: Value = self.eval("task read", LOAD, &[key], |_| {}).await?;
            decode_loaded(id, value)
        })
    }

    fn list<'a>(
        &'a self,
        session: &'a str,
    ) -> TaskFuture<'a, Result<Vec<LoadedTask>, TaskBackendError>> {
        Box::pin(async move {
            let index = self.session_tasks_key(session);
            let prefix = self.task_key("");
            let value: Value = self
                .eval("task list", LIST, &[index], |p| {
                    p.arg(&prefix).arg(MAX_LISTED);
                })
                .await?;
            let Value::Array(records) = value else {
                return Err(TaskBackendError::Unavailable(format!(
                    "the tasks of session {session}: the store answered {value:?}"
                )));
            };
            let mut found = Vec::with_capacity(records.len());
            for record in records {
                found.extend(decode_loaded(session, record)?);
            }
            Ok(found)
        })
    }

    fn renew<'a>(&'a self, ids: &'a [Arc<str>]) -> TaskFuture<'a, Result<(), TaskBackendError>> {
        Box::pin(async move {
            let lease = millis(self.config.task_lease);
            for batch in ids.chunks(RENEW_BATCH) {
                let keys: Vec<String> = batch.iter().map(|id| self.task_key(id)).collect();
                let _: Value = self
                    .eval("task lease", RENEW, &keys, |p| {
                        p.arg(lease);
                    })
                    .await?;
            }
            Ok(())
        })
    }

    fn signal<'a>(&'a self, signal: TaskSignal) -> TaskFuture<'a, Result<(), TaskBackendError>> {
        Box::pin(async move {
            let Some(payload) = encode_signal(&signal) else {
                return Err(TaskBackendError::Unavailable(
                    "a signal that does not encode".to_owned(),
                ));
            };
            let channel = self.task_channel();
            self.run::<()>("task signal", |p| {
                p.cmd("PUBLISH").arg(&channel).arg(payload).ignore();
            })
            .await
            .map_err(unavailable)
        })
    }

    fn subscribe(&self, deliver: TaskSignalHandler) {
        tokio::spawn(subscription(
            self.client.clone(),
            self.task_channel(),
            self.config.timeout,
            Arc::downgrade(&self.alive),
            Arc::new(move |payload: &[u8]| match decode_signal(payload) {
                Some(signal) => deliver(signal),
                None => tracing::warn!("task signals: a malformed payload: dropped"),
            }),
        ));
    }

    fn lease(&self) -> Duration {
        self.config.task_lease
    }

    fn timeout(&self) -> Duration {
        self.config.timeout
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_round_trip() {
        let responses: BTreeMap<String, Json> =
            [("a".to_owned(), serde_json::json!({"action": "accept"}))].into();
        for signal in [
            TaskSignal::Cancel { id: "t1".into() },
            TaskSignal::Changed { id: "t2".into() },
            TaskSignal::Update {
                id: "t3".into(),
                responses,
            },
        ] {
            let text = encode_signal(&signal).unwrap();
            assert_eq!(decode_signal(text.as_bytes()), Some(signal));
        }
        assert_eq!(decode_signal(b"nonsense"), None);
        assert_eq!(decode_signal(b"update\nt4\n{not json"), None);
        assert_eq!(decode_signal(&[0xff, b'\n', b'x']), None);
    }

    #[test]
    fn malformed_records_are_errors_not_panics() {
        assert!(matches!(decode_loaded("x", Value::Nil), Ok(None)));
        for bad in [
            Value::Int(3),
            Value::Array(vec![Value::Nil; 7]),
            Value::Array(vec![
                Value::BulkString(b"{}".to_vec()),
                Value::BulkString(Vec::new()),
                Value::Int(0),
                Value::Int(0),
                Value::BulkString(Vec::new()),
                Value::Int(0),
                Value::BulkString(b"0".to_vec()),
            ]),
        ] {
            assert!(decode_loaded("x", bad).is_err());
        }
    }
}
