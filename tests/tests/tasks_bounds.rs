//! The bounds of the task store: tasks expire after their time to live (running ones are
//! cancelled), the store holds a bounded number of tasks, and over authenticated Streamable
//! HTTP a task belongs to the caller that created it (another caller cannot see, answer or
//! cancel it, and the per-caller limit counts each caller apart). The sealed `requestState` is
//! bound to the caller the same way.

use crate::stateless_support;
use crate::tasks_support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http::request::Parts;
use http::{Response, StatusCode};
use mcp_server::{Server, ServerOptions, TaskOptions};
use mcp_transport_http::server::{
    AuthFuture, Authenticator, HttpServerConfig, StreamableHttpService,
};
use serde_json::{Value, json};
use stateless_support::{Client, Http, Stdio, meta};
use tasks_support::{
    Observed, builder_with, http_request, start, task_caps, task_method, wait_for,
};
use tokio::net::TcpListener;

fn with_tasks(options: TaskOptions, observed: &Arc<Observed>) -> Server {
    let mut o = ServerOptions::default();
    o.tasks = options;
    builder_with(Arc::clone(observed))
        .options(o)
        .build()
        .unwrap()
}

/// One client per transport, each with a server of its own.
async fn each_client(make: impl Fn() -> Server) -> Vec<Client> {
    vec![
        Client::Stdio(Stdio::start(make())),
        Client::Http(Http::start(make()).await),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_expire_after_their_time_to_live() {
    let observed = Arc::new(Observed::default());
    let options = TaskOptions::default().ttl(Duration::from_millis(400));
    for mut c in each_client(|| with_tasks(options, &observed)).await {
        let name = c.name();
        observed.cancelled.store(false, Ordering::SeqCst);
        // A finished task is kept for its ttl, then forgotten.
        let o = c.call("hold", json!({"ms": 0}), task_caps()).await;
        assert_eq!(o.result()["ttlMs"], 400, "{name}");
        let id = o.result()["taskId"].as_str().unwrap().to_owned();
        wait_for(&mut c, &id, &["completed"]).await;
        // A running task is cancelled when its ttl runs out.
        let running = start(&mut c, "watch_cancel", json!({})).await;
        tokio::time::sleep(Duration::from_millis(700)).await;
        for task in [&id, &running] {
            let o = task_method(&mut c, "tasks/get", task, Value::Null, task_caps()).await;
            assert_eq!(o.error_code(), -32602, "{name}: {task} expired");
        }
        assert!(observed.cancelled.load(Ordering::SeqCst), "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_holds_a_bounded_number_of_tasks() {
    let observed = Arc::new(Observed::default());
    let options = TaskOptions::default()
        .max_tasks(2)
        .ttl(Duration::from_millis(500));
    for mut c in each_client(|| with_tasks(options, &observed)).await {
        let name = c.name();
        let first = start(&mut c, "watch_cancel", json!({})).await;
        start(&mut c, "hold", json!({"ms": 0})).await;
        // Full (finished tasks count until they expire): refused with -32603.
        let o = c.call("hold", json!({"ms": 0}), task_caps()).await;
        assert_eq!(o.error_code(), -32603, "{name}");
        assert!(
            o.error_message().contains("most tasks"),
            "{name}: {}",
            o.response
        );
        // Calls that need no task still run.
        let o = c
            .call("echo", json!({"text": "still here"}), task_caps())
            .await;
        assert_eq!(o.text(), "still here");
        // Cancelling does not free the slot before the ttl; expiry does.
        task_method(&mut c, "tasks/cancel", &first, Value::Null, task_caps())
            .await
            .result();
        tokio::time::sleep(Duration::from_millis(700)).await;
        start(&mut c, "hold", json!({"ms": 0})).await;
        start(&mut c, "hold", json!({"ms": 0})).await;
    }
}

#[test]
fn unusable_task_options_are_refused() {
    for options in [
        TaskOptions::default().max_tasks(0),
        TaskOptions::default().max_tasks_per_caller(0),
        TaskOptions::default().ttl(Duration::ZERO),
        TaskOptions::default().poll_interval(Duration::ZERO),
    ] {
        let mut o = ServerOptions::default();
        o.tasks = options;
        let r = tasks_support::builder().options(o).build();
        assert!(r.is_err(), "{options:?}");
    }
}

/// Who called, from the `x-api-key` header.
#[derive(Clone, Debug)]
struct Caller(String);

struct ApiKeys;

impl Authenticator for ApiKeys {
    type Principal = Caller;

    fn authenticate<'a>(
        &'a self,
        parts: &'a Parts,
    ) -> AuthFuture<'a, Result<Caller, Response<Bytes>>> {
        let key = parts
            .headers
            .get("x-api-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        Box::pin(async move {
            key.map(Caller).ok_or_else(|| {
                let mut r = Response::new(Bytes::from_static(b"no API key"));
                *r.status_mut() = StatusCode::UNAUTHORIZED;
                r
            })
        })
    }

    fn identity(&self, caller: &Caller) -> String {
        caller.0.clone()
    }
}

/// A request of `who`, with its `Mcp-Name` (tool name or task id).
async fn as_caller(h: &Http, who: &str, method: &str, params: Value) -> stateless_support::Outcome {
    let name = params
        .get("taskId")
        .or_else(|| params.get("name"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    http_request(
        h,
        method,
        params,
        name.as_deref(),
        &[("x-api-key", who.to_owned())],
    )
    .await
}

fn call(tool: &str, arguments: Value) -> Value {
    json!({"name": tool, "arguments": arguments, "_meta": meta(task_caps())})
}

fn task(id: &str, extra: Value) -> Value {
    let mut p = extra;
    p["taskId"] = json!(id);
    p["_meta"] = meta(task_caps());
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_belong_to_their_caller() {
    let mut options = ServerOptions::default();
    options.tasks = TaskOptions::default().max_tasks_per_caller(1);
    let server = tasks_support::builder()
        .options(options)
        .subject(|c: &Caller| c.0.clone())
        .build()
        .unwrap();
    let service = StreamableHttpService::builder(server.connection_handler())
        .config(HttpServerConfig::default().path("/mcp"))
        .auth(ApiKeys)
        .build();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(service.serve_with_listener(listener, std::future::pending()));
    let h = Http::connect(addr);

    let o = as_caller(&h, "alice", "tools/call", call("two_questions", json!({}))).await;
    assert_eq!(o.result()["resultType"], "task", "{}", o.response);
    let id = o.result()["taskId"].as_str().unwrap().to_owned();
    // Bob cannot see, answer or cancel it: exactly as if it did not exist.
    let answer =
        json!({"inputResponses": {"first": {"action": "accept", "content": {"v": "bob"}}}});
    for (method, extra) in [
        ("tasks/get", json!({})),
        ("tasks/update", answer.clone()),
        ("tasks/cancel", json!({})),
    ] {
        let o = as_caller(&h, "bob", method, task(&id, extra)).await;
        assert_eq!(o.error_code(), -32602, "bob {method}");
        let message = o.error_message();
        assert!(
            message.ends_with(&format!("unknown task: {id}")),
            "{message}"
        );
    }
    // The task runs on its own: poll until it has asked (a loaded machine may take a while).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let o = loop {
        let o = as_caller(&h, "alice", "tasks/get", task(&id, json!({}))).await;
        if o.result()["status"] != "working" || tokio::time::Instant::now() >= deadline {
            break o;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(o.result()["status"], "input_required", "{}", o.response);
    assert!(
        o.result()["inputRequests"]
            .as_object()
            .is_some_and(|r| r.len() == 2)
    );
    // One task per caller: Alice is full, Bob is not.
    let o = as_caller(&h, "alice", "tools/call", call("hold", json!({"ms": 0}))).await;
    assert_eq!(o.error_code(), -32603, "{}", o.response);
    let o = as_caller(&h, "bob", "tools/call", call("hold", json!({"ms": 0}))).await;
    assert_eq!(o.result()["resultType"], "task", "{}", o.response);
    // Alice can cancel hers.
    let o = as_caller(&h, "alice", "tasks/cancel", task(&id, json!({}))).await;
    assert_eq!(o.result()["resultType"], "complete");
    let o = as_caller(&h, "alice", "tasks/get", task(&id, json!({}))).await;
    assert_eq!(o.result()["status"], "cancelled");

    // The requestState of a multi round-trip request is bound to the caller too.
    let o = as_caller(&h, "carol", "tools/call", call("intro", json!({}))).await;
    let state = o.result()["requestState"].as_str().unwrap().to_owned();
    let mut retry = call("intro", json!({}));
    retry["inputResponses"] = json!({"name": {"action": "accept", "content": {"name": "Eve"}}});
    retry["requestState"] = json!(state);
    let o = as_caller(&h, "dave", "tools/call", retry.clone()).await;
    assert_eq!(o.error_code(), -32602, "{}", o.response);
    let o = as_caller(&h, "carol", "tools/call", retry).await;
    assert_eq!(o.result()["resultType"], "task", "{}", o.response);
    let id = o.result()["taskId"].as_str().unwrap().to_owned();
    let deadline = tokio::time::Instant::now() + stateless_support::WAIT;
    loop {
        let o = as_caller(&h, "carol", "tasks/get", task(&id, json!({}))).await;
        if o.result()["status"] == "completed" {
            let text = &o.result()["result"]["content"][0]["text"];
            assert!(
                text.as_str().is_some_and(|t| t.starts_with("Hello, Eve!")),
                "{text}"
            );
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{}", o.response);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
