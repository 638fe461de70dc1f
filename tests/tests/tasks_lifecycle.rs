//! The tasks extension (SEP-2663) on stdio framing and on Streamable HTTP: a call that becomes a
//! task, `tasks/get` while it works and once it ended (result, tool error, protocol error),
//! input asked inside a task and answered with `tasks/update` (partial and complete, both ways
//! of asking), `tasks/cancel`, input gathered by a multi round-trip request before the task
//! starts, and the errors of the tasks methods.

use crate::stateless_support;
use crate::tasks_support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use http::StatusCode;
use serde_json::{Value, json};
use stateless_support::{Client, WAIT, clients, meta, with_meta};
use tasks_support::{
    Observed, builder_with, get, http_request, plain_caps, server, start, task_caps, task_method,
    wait_for, wait_until,
};

fn is_timestamp(v: &Value) -> bool {
    v.as_str().is_some_and(|s| {
        let b = s.as_bytes();
        s.len() >= 20
            && b[4] == b'-'
            && b[7] == b'-'
            && b[10] == b'T'
            && b[13] == b':'
            && b[16] == b':'
            && s.ends_with('Z')
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_becomes_a_task_and_completes() {
    for mut c in clients(&server()).await {
        let name = c.name();
        let o = c.call("hold", json!({"ms": 300}), task_caps()).await;
        o.assert_status(StatusCode::OK);
        let created = o.result().clone();
        // A flat CreateTaskResult.
        assert_eq!(created["resultType"], "task", "{name}");
        let id = created["taskId"].as_str().unwrap().to_owned();
        assert_eq!(id.len(), 32, "{name}: 128 random bits in hex");
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{name}");
        assert_eq!(created["status"], "working", "{name}");
        assert!(is_timestamp(&created["createdAt"]), "{created}");
        assert!(is_timestamp(&created["lastUpdatedAt"]), "{created}");
        assert_eq!(created["ttlMs"], 3_600_000, "{name}");
        assert_eq!(created["pollIntervalMs"], 1000, "{name}");
        for absent in [
            "task",
            "result",
            "error",
            "inputRequests",
            "requestState",
            "ttl",
            "pollInterval",
            "content",
        ] {
            assert!(
                created.get(absent).is_none(),
                "{name}: {absent} in {created}"
            );
        }
        assert_eq!(
            created["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "tasks-test-server"
        );
        // Durable at once.
        let now = get(&mut c, &id).await;
        assert_eq!(now["resultType"], "complete", "{name}");
        assert_eq!(now["taskId"], id.as_str());
        assert!(
            now["status"] == "working" || now["status"] == "completed",
            "{now}"
        );
        assert!(now.get("result").is_none() || now["status"] == "completed");
        let done = wait_for(&mut c, &id, &["completed", "failed", "cancelled"]).await;
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(done["createdAt"], created["createdAt"]);
        // The progress message became the status message.
        assert_eq!(done["statusMessage"], "holding", "{name}");
        let result = &done["result"];
        assert_eq!(result["content"][0]["text"], "held 300 ms", "{name}");
        assert_eq!(result["resultType"], "complete");
        assert!(
            result["_meta"]
                .get("io.modelcontextprotocol/related-task")
                .is_none()
        );
        assert!(done.get("error").is_none() && done.get("inputRequests").is_none());
        // A tool without task support answers as always, extension or not.
        let o = c.call("echo", json!({"text": "hi"}), task_caps()).await;
        assert_eq!(o.result()["resultType"], "complete", "{name}");
        assert_eq!(o.text(), "hi");
        assert!(o.result().get("taskId").is_none());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_errors_complete_and_protocol_errors_fail() {
    for mut c in clients(&server()).await {
        let name = c.name();
        let id = start(&mut c, "tool_error", json!({})).await;
        let done = wait_for(&mut c, &id, &["completed", "failed"]).await;
        assert_eq!(done["status"], "completed", "{name}: {done}");
        assert_eq!(done["result"]["isError"], true);
        assert_eq!(done["result"]["content"][0]["text"], "broken on purpose");
        assert!(done.get("error").is_none());

        let id = start(&mut c, "protocol_error", json!({})).await;
        let done = wait_for(&mut c, &id, &["completed", "failed"]).await;
        assert_eq!(done["status"], "failed", "{name}: {done}");
        assert_eq!(done["error"]["code"], -32602);
        assert!(
            done["error"]["message"]
                .as_str()
                .is_some_and(|m| m.ends_with("refused on purpose")),
            "{done}"
        );
        assert!(done.get("result").is_none(), "{done}");

        // A handler that panics fails its task with an internal error; the server goes on.
        let id = start(&mut c, "panics", json!({})).await;
        let done = wait_for(&mut c, &id, &["completed", "failed"]).await;
        assert_eq!(done["status"], "failed", "{name}: {done}");
        assert_eq!(done["error"]["code"], -32603);
        let o = c.call("panics", json!({}), plain_caps()).await;
        assert_eq!(o.error_code(), -32603, "{name}: without a task");
        assert_eq!(
            c.call("echo", json!({"text": "up"}), plain_caps())
                .await
                .text(),
            "up"
        );
    }
}

fn accept(v: &str) -> Value {
    json!({"action": "accept", "content": {"v": v}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_inside_a_task_partially_then_completely() {
    for mut c in clients(&server()).await {
        let name = c.name();
        let id = start(&mut c, "two_questions", json!({})).await;
        // The two asks are registered one after the other: wait until both are there.
        let parked = wait_until(&mut c, &id, "two asks", |task| {
            task["status"] == "input_required"
                && task["inputRequests"]
                    .as_object()
                    .is_some_and(|r| r.len() == 2)
        })
        .await;
        let asks = parked["inputRequests"].as_object().unwrap().clone();
        assert_eq!(
            asks.keys().collect::<Vec<_>>(),
            ["first", "second"],
            "{name}"
        );
        for ask in asks.values() {
            assert_eq!(ask["method"], "elicitation/create");
            assert!(ask["params"]["message"].is_string());
        }
        // An answer of the wrong shape refuses the whole update.
        let o = task_method(
            &mut c,
            "tasks/update",
            &id,
            json!({"inputResponses": {"first": accept("A"), "second": 5}}),
            task_caps(),
        )
        .await;
        assert_eq!(o.error_code(), -32602, "{name}");
        assert_eq!(
            get(&mut c, &id).await["inputRequests"]
                .as_object()
                .unwrap()
                .len(),
            2
        );
        // A partial update: acked, the task stays input_required with only the other key.
        let o = task_method(
            &mut c,
            "tasks/update",
            &id,
            json!({"inputResponses": {"first": accept("A"), "never-asked": {"x": 1}}}),
            task_caps(),
        )
        .await;
        let ack = o.result();
        assert_eq!(ack["resultType"], "complete", "{name}");
        for absent in ["taskId", "status", "result", "error", "inputRequests"] {
            assert!(ack.get(absent).is_none(), "{name}: {ack}");
        }
        let still = get(&mut c, &id).await;
        assert_eq!(still["status"], "input_required", "{still}");
        assert_eq!(
            still["inputRequests"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["second"]
        );
        task_method(
            &mut c,
            "tasks/update",
            &id,
            json!({"inputResponses": {"second": accept("B")}}),
            task_caps(),
        )
        .await
        .result();
        let done = wait_for(&mut c, &id, &["completed", "failed"]).await;
        assert_eq!(
            done["result"]["content"][0]["text"], "first=A second=B",
            "{name}: {done}"
        );
        // Updating an ended task is acked and changes nothing.
        let o = task_method(
            &mut c,
            "tasks/update",
            &id,
            json!({"inputResponses": {"first": accept("C")}}),
            task_caps(),
        )
        .await;
        assert_eq!(o.result()["resultType"], "complete");
        assert_eq!(get(&mut c, &id).await, done);

        // Another kind of input: roots.
        let id = start(&mut c, "count_roots", json!({})).await;
        let parked = wait_for(&mut c, &id, &["input_required"]).await;
        assert_eq!(parked["inputRequests"]["roots"]["method"], "roots/list");
        task_method(
            &mut c,
            "tasks/update",
            &id,
            json!({"inputResponses": {"roots": {"roots": [{"uri": "file:///a"}]}}}),
            task_caps(),
        )
        .await
        .result();
        let done = wait_for(&mut c, &id, &["completed", "failed"]).await;
        assert_eq!(done["result"]["content"][0]["text"], "1 root(s)", "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_explicit_way_of_asking_inside_a_task() {
    for mut c in clients(&server()).await {
        let name = c.name();
        let id = start(&mut c, "explicit", json!({})).await;
        let parked = wait_for(&mut c, &id, &["input_required"]).await;
        assert_eq!(
            parked["inputRequests"]["confirm"]["method"],
            "elicitation/create"
        );
        assert!(parked.get("requestState").is_none(), "{name}");
        task_method(
            &mut c,
            "tasks/update",
            &id,
            json!({"inputResponses": {"confirm": {"action": "accept", "content": {}}}}),
            task_caps(),
        )
        .await
        .result();
        let done = wait_for(&mut c, &id, &["completed", "failed"]).await;
        assert_eq!(
            done["result"]["content"][0]["text"], r#"accept (state {"step":1})"#,
            "{name}: {done}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ends_the_task_and_cancels_the_handler() {
    let observed = Arc::new(Observed::default());
    let server = builder_with(Arc::clone(&observed)).build().unwrap();
    for mut c in clients(&server).await {
        let name = c.name();
        observed.cancelled.store(false, Ordering::SeqCst);
        let id = start(&mut c, "watch_cancel", json!({})).await;
        assert_eq!(get(&mut c, &id).await["status"], "working");
        let o = task_method(&mut c, "tasks/cancel", &id, Value::Null, task_caps()).await;
        let ack = o.result();
        assert_eq!(ack["resultType"], "complete", "{name}");
        for absent in ["taskId", "status", "result", "error", "inputRequests"] {
            assert!(ack.get(absent).is_none(), "{name}: {ack}");
        }
        let now = get(&mut c, &id).await;
        assert_eq!(now["status"], "cancelled", "{name}: {now}");
        assert!(now.get("result").is_none() && now.get("error").is_none());
        // The handler's context saw the cancellation.
        let deadline = tokio::time::Instant::now() + WAIT;
        while !observed.cancelled.load(Ordering::SeqCst) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{name}: not cancelled"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Cancelling again is acked; the status stays.
        let o = task_method(&mut c, "tasks/cancel", &id, Value::Null, task_caps()).await;
        assert_eq!(o.result()["resultType"], "complete", "{name}");
        assert_eq!(get(&mut c, &id).await["status"], "cancelled");
        // A task that completed stays completed.
        let id = start(&mut c, "hold", json!({"ms": 0})).await;
        wait_for(&mut c, &id, &["completed"]).await;
        task_method(&mut c, "tasks/cancel", &id, Value::Null, task_caps())
            .await
            .result();
        assert_eq!(get(&mut c, &id).await["status"], "completed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_gathered_before_the_task_starts() {
    for mut c in clients(&server()).await {
        let name = c.name();
        // Round 1: a multi round-trip request; no task yet.
        let o = c.call("intro", json!({}), task_caps()).await;
        let r1 = o.result().clone();
        assert_eq!(r1["resultType"], "input_required", "{name}: {r1}");
        assert!(r1.get("taskId").is_none());
        assert_eq!(r1["inputRequests"]["name"]["method"], "elicitation/create");
        let state = r1["requestState"].as_str().unwrap().to_owned();
        // Round 2: the answer in hand, the call becomes a task.
        let o = c
            .request(
                "tools/call",
                with_meta(
                    json!({
                        "name": "intro",
                        "arguments": {},
                        "inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}},
                        "requestState": state,
                    }),
                    task_caps(),
                ),
            )
            .await;
        let r2 = o.result().clone();
        assert_eq!(r2["resultType"], "task", "{name}: {r2}");
        assert!(r2.get("requestState").is_none() && r2.get("inputRequests").is_none());
        let id = r2["taskId"].as_str().unwrap().to_owned();
        let done = wait_for(&mut c, &id, &["completed", "failed"]).await;
        assert_eq!(
            done["result"]["content"][0]["text"],
            "Hello, Ada! (task before: false, became: true, task now: true)",
            "{name}: {done}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_of_the_tasks_methods() {
    for mut c in clients(&server()).await {
        let name = c.name();
        // Unknown task: -32602, for every method.
        for method in ["tasks/get", "tasks/cancel"] {
            let o = task_method(&mut c, method, "no-such-task", Value::Null, task_caps()).await;
            assert_eq!(o.error_code(), -32602, "{name} {method}");
        }
        let o = task_method(
            &mut c,
            "tasks/update",
            "no-such-task",
            json!({"inputResponses": {}}),
            task_caps(),
        )
        .await;
        assert_eq!(o.error_code(), -32602, "{name}");
        // Malformed params: -32602.
        let id = start(&mut c, "hold", json!({"ms": 5000})).await;
        let o = task_method(&mut c, "tasks/update", &id, Value::Null, task_caps()).await;
        assert_eq!(o.error_code(), -32602, "{name}: inputResponses is required");
        // The methods SEP-2663 removed: -32601 (HTTP 404).
        for method in ["tasks/result", "tasks/list"] {
            let o = c
                .request(method, with_meta(json!({"taskId": id}), task_caps()))
                .await;
            assert_eq!(o.error_code(), -32601, "{name} {method}");
            o.assert_status(StatusCode::NOT_FOUND);
        }
        // Over HTTP, Mcp-Name must carry the task id: missing or different is -32020 (400).
        if let Client::Http(h) = &c {
            let params = json!({"taskId": id, "_meta": meta(task_caps())});
            for header in [None, Some("another-task")] {
                let o = http_request(h, "tasks/get", params.clone(), header, &[]).await;
                assert_eq!(o.error_code(), -32020, "Mcp-Name {header:?}");
                o.assert_status(StatusCode::BAD_REQUEST);
            }
        }
        task_method(&mut c, "tasks/cancel", &id, Value::Null, task_caps())
            .await
            .result();
    }
}
