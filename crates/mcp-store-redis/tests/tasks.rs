//! Tasks of the extension shared in one real redis-server by replicas that each run in a
//! runtime of their own (shutting one down is a replica dying: nothing it holds is written
//! after): a task created through one is polled, answered, cancelled and read through another,
//! and a task whose replica died ends `failed` once its lease runs out.

use crate::{http, support};

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http::{send, serve};
use mcp_server::{Elicitation, RequestContext, Server, TaskSupport, Tool};
use mcp_store_redis::{RedisConfig, RedisStore};
use mcp_transport_http::server::HttpServerConfig;
use serde_json::{Value, json};
use support::RedisServer;
use tokio::runtime::Runtime;

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// One replica: a server with two task tools on the Redis stores, in a runtime of its own.
struct Replica {
    addr: SocketAddr,
    runtime: Option<Runtime>,
    /// Handlers of this replica that were stopped before they finished.
    stopped: Arc<AtomicUsize>,
    /// Handlers of this replica that ran to their end.
    finished: Arc<AtomicUsize>,
}

impl Replica {
    /// Kills the replica: its runtime stops at once, with every task on it.
    fn kill(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Counts a handler stopped before its end (dropped by cancellation).
struct StopGuard(Arc<AtomicUsize>, bool);

impl Drop for StopGuard {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn server(stopped: Arc<AtomicUsize>, finished: Arc<AtomicUsize>, store: Arc<RedisStore>) -> Server {
    Server::builder(mcp_server::model::Implementation::new("tasks-test", "1"))
        .tool_raw(
            Tool::new("sleep")
                .description("Sleeps for `ms` milliseconds")
                .task_support(TaskSupport::Optional)
                .input_schema(json!({
                    "type": "object",
                    "properties": {"ms": {"type": "integer"}},
                    "required": ["ms"]
                })),
            move |_cx: RequestContext, args: Value| {
                let (stopped, finished) = (Arc::clone(&stopped), Arc::clone(&finished));
                async move {
                    let mut guard = StopGuard(stopped, false);
                    let ms = args["ms"].as_u64().unwrap_or(0);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    guard.1 = true;
                    finished.fetch_add(1, Ordering::SeqCst);
                    format!("slept {ms} ms")
                }
            },
        )
        .tool_raw(
            Tool::new("ask")
                .description("Asks for a name")
                .task_support(TaskSupport::Optional)
                .input_schema(json!({"type": "object", "properties": {}})),
            |cx: RequestContext, _args: Value| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"]
                });
                match cx.elicit_with_schema("name", "Your name?", schema).await {
                    Ok(Elicitation::Accepted(content)) => {
                        format!("Hello, {}!", content["name"].as_str().unwrap_or("?"))
                    }
                    Ok(_) => "No name".to_owned(),
                    Err(e) => format!("ask failed: {e}"),
                }
            },
        )
        .task_backend(store.clone())
        .change_bus(store)
        .build()
        .unwrap()
}

impl Replica {
    /// Waits (at most 5 s) until one of this replica's handlers was stopped before its end.
    async fn handler_stopped(&self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.stopped.load(Ordering::SeqCst) == 0 {
            assert!(Instant::now() < deadline, "the handler was not stopped");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn replica(url: &str, lease: Duration) -> Replica {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let stopped = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(AtomicUsize::new(0));
    let (url, s, f) = (url.to_owned(), Arc::clone(&stopped), Arc::clone(&finished));
    let addr = runtime
        .spawn(async move {
            let config = RedisConfig {
                timeout: Duration::from_secs(1),
                task_lease: lease,
                ..RedisConfig::default()
            };
            let store = Arc::new(RedisStore::connect(&url, config).await.unwrap());
            let server = server(s, f, Arc::clone(&store));
            serve(&server, store, HttpServerConfig::default()).await
        })
        .await
        .unwrap();
    Replica {
        addr,
        runtime: Some(runtime),
        stopped,
        finished,
    }
}

/// A redis-server and two replicas on it, with tasks leased for `lease`; `None` when
/// redis-server is not installed.
async fn two_replicas(lease: Duration) -> Option<(RedisServer, Replica, Replica)> {
    let redis = RedisServer::start()?;
    let a = replica(&redis.url(), lease).await;
    let b = replica(&redis.url(), lease).await;
    Some((redis, a, b))
}

/// A stateless request declaring the tasks extension and elicitation; the JSON-RPC answer.
async fn rpc(addr: SocketAddr, method: &str, name: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {"form": {}},
            "extensions": {TASKS: {}}
        },
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let answer = send(
        addr,
        "POST",
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
            ("Mcp-Name", name),
        ],
        Some(&body.to_string()),
    )
    .await;
    assert_eq!(answer.status, 200, "{method}: {}", answer.body);
    response(method, &answer.body)
}

/// The JSON-RPC response in a JSON or SSE body (the last message with a result or an error).
fn response(method: &str, body: &str) -> Value {
    let text = body.trim();
    let messages: Vec<Value> = if text.starts_with('{') {
        vec![serde_json::from_str(text).unwrap()]
    } else {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    };
    messages
        .into_iter()
        .rfind(|m: &Value| m.get("result").is_some() || m.get("error").is_some())
        .unwrap_or_else(|| panic!("{method}: no response in {text}"))
}

/// `sleep` called through `addr`: the JSON-RPC answer.
async fn call_sleep(addr: SocketAddr, ms: u64) -> Value {
    let params = json!({"name": "sleep", "arguments": {"ms": ms}});
    rpc(addr, "tools/call", "sleep", params).await
}

/// Starts `tool` as a task through `addr`: its id.
async fn start(addr: SocketAddr, tool: &str, arguments: Value) -> String {
    let created = rpc(
        addr,
        "tools/call",
        tool,
        json!({"name": tool, "arguments": arguments}),
    )
    .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    created["result"]["taskId"].as_str().unwrap().to_owned()
}

async fn get(addr: SocketAddr, id: &str) -> Value {
    let got = rpc(addr, "tasks/get", id, json!({"taskId": id})).await;
    assert!(got.get("result").is_some(), "{got}");
    got["result"].clone()
}

/// Polls through the replicas in turn until the task has `status` (at most `within`).
async fn until(replicas: &[SocketAddr], id: &str, status: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    for turn in 0.. {
        let got = get(replicas[turn % replicas.len()], id).await;
        if got["status"] == status {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "{id} not {status} within {within:?}: {got}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    unreachable!()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_created_on_one_replica_is_followed_and_finished_through_another() {
    let Some((_redis, a, b)) = two_replicas(Duration::from_secs(2)).await else {
        return;
    };

    // Created on A, read at once on B.
    let id = start(a.addr, "sleep", json!({"ms": 400})).await;
    let seen = get(b.addr, &id).await;
    assert_eq!(seen["status"], "working", "{seen}");
    assert_eq!(seen["taskId"], id.as_str());
    let done = until(&[b.addr], &id, "completed", Duration::from_secs(5)).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "slept 400 ms",
        "{done}"
    );
    assert_eq!(a.finished.load(Ordering::SeqCst), 1);
    assert_eq!(b.finished.load(Ordering::SeqCst), 0, "B ran nothing");

    // Unknown ids and a malformed answer through B: -32602, nothing changes.
    let unknown = rpc(b.addr, "tasks/get", "nope", json!({"taskId": "nope"})).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    // Input asked on A, answered through B.
    let id = start(a.addr, "ask", json!({})).await;
    let waiting = until(
        &[b.addr, a.addr],
        &id,
        "input_required",
        Duration::from_secs(5),
    )
    .await;
    let key = waiting["inputRequests"]
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .unwrap_or_else(|| panic!("no input requests: {waiting}"));
    let bad = rpc(
        b.addr,
        "tasks/update",
        &id,
        json!({"taskId": id, "inputResponses": {key.clone(): 5}}),
    )
    .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let answered = rpc(
        b.addr,
        "tasks/update",
        &id,
        json!({"taskId": id, "inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}}}),
    )
    .await;
    assert!(answered.get("result").is_some(), "{answered}");
    let done = until(&[b.addr, a.addr], &id, "completed", Duration::from_secs(5)).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "Hello, Ada!",
        "{done}"
    );

    // Cancelled through B: the handler on A stops, every replica reads `cancelled`.
    let id = start(a.addr, "sleep", json!({"ms": 60_000})).await;
    let cancelled = rpc(b.addr, "tasks/cancel", &id, json!({"taskId": id})).await;
    assert!(cancelled.get("result").is_some(), "{cancelled}");
    assert_eq!(get(a.addr, &id).await["status"], "cancelled");
    assert_eq!(get(b.addr, &id).await["status"], "cancelled");
    a.handler_stopped().await;
    // Cancelling again is acknowledged and changes nothing.
    let again = rpc(a.addr, "tasks/cancel", &id, json!({"taskId": id})).await;
    assert!(again.get("result").is_some(), "{again}");
    assert_eq!(get(b.addr, &id).await["status"], "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_task_of_a_dead_replica_ends_failed_and_finished_results_survive_it() {
    let Some((_redis, mut a, b)) = two_replicas(Duration::from_millis(600)).await else {
        return;
    };
    let lease = Duration::from_millis(600);

    let finished = start(a.addr, "sleep", json!({"ms": 10})).await;
    until(&[a.addr], &finished, "completed", Duration::from_secs(5)).await;
    let running = start(a.addr, "sleep", json!({"ms": 60_000})).await;
    // Renewed while A lives: still working well past one lease.
    tokio::time::sleep(lease * 3).await;
    assert_eq!(get(b.addr, &running).await["status"], "working");

    a.kill();
    let killed = Instant::now();
    let failed = until(&[b.addr], &running, "failed", lease * 4).await;
    assert!(
        killed.elapsed() >= lease / 2,
        "failed before the lease could run out"
    );
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("stopped before the task finished"),
        "{failed}"
    );
    assert_eq!(failed["statusMessage"], message);
    // Read again: the same end, not a second one.
    assert_eq!(get(b.addr, &running).await, failed);

    let kept = get(b.addr, &finished).await;
    assert_eq!(kept["status"], "completed", "{kept}");
    assert_eq!(kept["result"]["content"][0]["text"], "slept 10 ms");
    assert_eq!(b.finished.load(Ordering::SeqCst), 0, "no handler ran again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_fails_the_tasks_methods_within_the_timeout_then_they_recover() {
    let Some(mut redis) = RedisServer::start() else {
        return;
    };
    let a = replica(&redis.url(), Duration::from_secs(2)).await;
    let id = start(a.addr, "sleep", json!({"ms": 60_000})).await;
    redis.kill();
    let started = Instant::now();
    let refused = rpc(a.addr, "tasks/get", &id, json!({"taskId": id})).await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("task store is unavailable"), "{refused}");
    let call = call_sleep(a.addr, 1).await;
    assert_eq!(call["error"]["code"], -32603, "{call}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );

    // Back: tasks are created and read again (the restarted Redis lost the old one).
    redis.restart();
    let back = Instant::now();
    let id = loop {
        let call = call_sleep(a.addr, 1).await;
        if call["result"]["resultType"] == "task" {
            break call["result"]["taskId"].as_str().unwrap().to_owned();
        }
        assert!(back.elapsed() < Duration::from_secs(2), "{call}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    until(&[a.addr], &id, "completed", Duration::from_secs(5)).await;
}

/// A 2025-11-25 session opened on `addr`: its id.
async fn open_session(addr: SocketAddr) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let init = send(addr, "POST", &[], Some(&body.to_string())).await;
    assert_eq!(init.status, 200, "{}", init.body);
    let sid = init.header("mcp-session-id").unwrap().to_owned();
    let done = send(
        addr,
        "POST",
        &[
            ("Mcp-Session-Id", &sid),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        Some(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
    )
    .await;
    assert_eq!(done.status, 202, "{}", done.body);
    sid
}

/// A request on session `sid` through `addr`: the JSON-RPC answer.
async fn on_session(addr: SocketAddr, sid: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params});
    let answer = send(
        addr,
        "POST",
        &[
            ("Mcp-Session-Id", sid),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        Some(&body.to_string()),
    )
    .await;
    assert_eq!(answer.status, 200, "{method}: {}", answer.body);
    response(method, &answer.body)
}

/// `sleep` as a task of session `sid` through `addr`: the task id.
async fn session_task(addr: SocketAddr, sid: &str, ms: u64) -> String {
    let params = json!({"name": "sleep", "arguments": {"ms": ms}, "task": {"ttl": 60_000}});
    let created = on_session(addr, sid, "tools/call", params).await;
    created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {created}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_task_is_read_listed_cancelled_and_its_result_waited_for_on_another_replica() {
    let Some((_redis, mut a, b)) = two_replicas(Duration::from_millis(600)).await else {
        return;
    };
    let lease = Duration::from_millis(600);
    let sid = open_session(a.addr).await;

    let quick = session_task(a.addr, &sid, 300).await;
    let got = on_session(b.addr, &sid, "tasks/get", json!({"taskId": quick})).await;
    assert_eq!(got["result"]["status"], "working", "{got}");
    // tasks/result on B waits for the end written by A.
    let result = on_session(b.addr, &sid, "tasks/result", json!({"taskId": quick})).await;
    assert_eq!(
        result["result"]["content"][0]["text"], "slept 300 ms",
        "{result}"
    );
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        quick.as_str()
    );

    let long = session_task(a.addr, &sid, 60_000).await;
    let listed = on_session(b.addr, &sid, "tasks/list", json!({})).await;
    let ids: Vec<&str> = listed["result"]["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .filter_map(|t| t["taskId"].as_str())
        .collect();
    assert_eq!(ids, [quick.as_str(), long.as_str()], "oldest first");
    // Another session sees none of them.
    let other = open_session(b.addr).await;
    let theirs = on_session(a.addr, &other, "tasks/list", json!({})).await;
    assert_eq!(theirs["result"]["tasks"], json!([]), "{theirs}");
    let hidden = on_session(b.addr, &other, "tasks/get", json!({"taskId": quick})).await;
    assert_eq!(hidden["error"]["code"], -32602, "{hidden}");

    let cancelled = on_session(b.addr, &sid, "tasks/cancel", json!({"taskId": long})).await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    let again = on_session(a.addr, &sid, "tasks/cancel", json!({"taskId": long})).await;
    assert_eq!(again["error"]["code"], -32602, "{again}");
    a.handler_stopped().await;

    // The replica running a task dies: tasks/result on B ends with the reason.
    let orphan = session_task(a.addr, &sid, 60_000).await;
    a.kill();
    let started = Instant::now();
    let ended = on_session(b.addr, &sid, "tasks/result", json!({"taskId": orphan})).await;
    assert_eq!(ended["error"]["code"], -32603, "{ended}");
    assert!(
        ended["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("stopped before the task finished")),
        "{ended}"
    );
    assert!(started.elapsed() < lease * 4, "{:?}", started.elapsed());
    let got = on_session(b.addr, &sid, "tasks/get", json!({"taskId": orphan})).await;
    assert_eq!(got["result"]["status"], "failed", "{got}");
}
