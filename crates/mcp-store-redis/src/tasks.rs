//! The tasks of the extension shared by the replicas (`mcp_server::TaskBackend`, feature
//! `server`).
//!
//! * a task is one hash, `<prefix>:task:<id>`: `status`, `data` (what `tasks/get` answers, as
//!   JSON), `owner` (the caller, when requests name one) and `lease` (milliseconds of the Redis
//!   clock until which the running replica vouches for it); it expires with the task's time to
//!   live, counted from its creation;
//! * `<prefix>:tasks` and `<prefix>:tasks:owner:<caller>` are sorted sets of live task ids
//!   (scored by expiry) that bound the tasks of the deployment
//!   ([`RedisConfig::max_tasks`](crate::RedisConfig::max_tasks)) and of one caller;
//! * signals travel on the pub/sub channel `<prefix>:tasks`: `cancel\n<id>`, `changed\n<id>` and
//!   `update\n<id>\n<answers as JSON>`.
//!
//! Every write that ends a task, or changes one, is a Lua script that leaves a task that has
//! ended as it is: the first end wins. Leases are compared with the Redis clock (`TIME`), so
//! the replicas' clocks do not matter.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

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
";

/// KEYS: task, deployment index, [caller index]. ARGV: ttl ms, lease ms, status, data, owner
/// (`=` and the caller, or empty), most tasks, most per caller, id.
/// Answers 1, or -1 (the deployment is full), -2 (the caller is), -3 (the id is taken).
const CREATE: &str = r"
local ttl = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[6]) then return -1 end
if KEYS[3] then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[7]) then return -2 end
end
if redis.call('EXISTS', KEYS[1]) == 1 then return -3 end
redis.call('HSET', KEYS[1], 'status', ARGV[3], 'data', ARGV[4], 'lease', now + tonumber(ARGV[2]))
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'owner', string.sub(ARGV[5], 2)) end
redis.call('PEXPIRE', KEYS[1], ttl)
for i = 2, #KEYS do
  redis.call('ZADD', KEYS[i], now + ttl, ARGV[8])
  if redis.call('PTTL', KEYS[i]) < ttl then redis.call('PEXPIRE', KEYS[i], ttl) end
end
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

/// KEYS: task. Answers nil, or [data, owner, has owner, orphaned].
const LOAD: &str = r"
local v = redis.call('HMGET', KEYS[1], 'status', 'data', 'owner', 'lease')
if not v[1] or not v[2] then return false end
local orphaned = 0
if not ended(v[1]) and tonumber(v[4] or '0') < now then orphaned = 1 end
local has_owner = 0
if v[3] then has_owner = 1 end
return {v[2], v[3] or '', has_owner, orphaned}
";

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

/// The answer of [`LOAD`] for task `id`.
fn decode_loaded(id: &str, value: Value) -> Result<Option<LoadedTask>, TaskBackendError> {
    let malformed = |what: &str| TaskBackendError::Unavailable(format!("task {id}: {what}"));
    let parts = match value {
        Value::Nil => return Ok(None),
        Value::Array(parts) if parts.len() == 4 => parts,
        other => return Err(malformed(&format!("the store answered {other:?}"))),
    };
    let data = bulk(&parts[0]).ok_or_else(|| malformed("no data"))?;
    let detailed: DetailedTask =
        serde_json::from_slice(data).map_err(|e| malformed(&e.to_string()))?;
    let owner = match int(&parts[2]) {
        Some(1) => Some(
            std::str::from_utf8(bulk(&parts[1]).unwrap_or_default())
                .map_err(|e| malformed(&e.to_string()))?
                .to_owned(),
        ),
        _ => None,
    };
    let orphaned = int(&parts[3]) == Some(1);
    Ok(Some(LoadedTask::new(
        SharedTask::new(owner, detailed),
        orphaned,
    )))
}

impl RedisStore {
    fn task_key(&self, id: &str) -> String {
        format!("{}:task:{id}", self.config.prefix)
    }

    fn task_channel(&self) -> String {
        format!("{}:tasks", self.config.prefix)
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
        let (written,): (i64,) = self
            .run("task write", |p| {
                p.cmd("EVAL")
                    .arg(script(WRITE))
                    .arg(1)
                    .arg(&key)
                    .arg(task.status().as_str())
                    .arg(data)
                    .arg(lease)
                    .arg(mode)
                    .arg(&channel)
                    .arg(&message);
            })
            .await
            .map_err(unavailable)?;
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
            let mut keys = vec![
                self.task_key(task.id()),
                format!("{}:tasks", self.config.prefix),
            ];
            if let Some(owner) = &task.owner {
                keys.push(format!("{}:tasks:owner:{owner}", self.config.prefix));
            }
            let data = encode(task)?;
            let owner = task
                .owner
                .as_ref()
                .map_or_else(String::new, |o| format!("={o}"));
            let (created,): (i64,) = self
                .run("task create", |p| {
                    p.cmd("EVAL")
                        .arg(script(CREATE))
                        .arg(keys.len())
                        .arg(&keys)
                        .arg(millis(ttl))
                        .arg(millis(self.config.task_lease))
                        .arg(task.status().as_str())
                        .arg(data)
                        .arg(owner)
                        .arg(self.config.max_tasks)
                        .arg(max_per_caller)
                        .arg(task.id());
                })
                .await
                .map_err(unavailable)?;
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
            let (value,): (Value,) = self
                .run("task read", |p| {
                    p.cmd("EVAL").arg(script(LOAD)).arg(1).arg(&key);
                })
                .await
                .map_err(unavailable)?;
            decode_loaded(id, value)
        })
    }

    fn renew<'a>(&'a self, ids: &'a [Arc<str>]) -> TaskFuture<'a, Result<(), TaskBackendError>> {
        Box::pin(async move {
            let lease = millis(self.config.task_lease);
            for batch in ids.chunks(RENEW_BATCH) {
                let keys: Vec<String> = batch.iter().map(|id| self.task_key(id)).collect();
                self.run::<()>("task lease", |p| {
                    p.cmd("EVAL")
                        .arg(script(RENEW))
                        .arg(keys.len())
                        .arg(&keys)
                        .arg(lease)
                        .ignore();
                })
                .await
                .map_err(unavailable)?;
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
            Value::Array(vec![Value::Nil; 4]),
            Value::Array(vec![
                Value::BulkString(b"{}".to_vec()),
                Value::BulkString(Vec::new()),
                Value::Int(0),
                Value::Int(0),
            ]),
        ] {
            assert!(decode_loaded("x", bad).is_err());
        }
    }
}
