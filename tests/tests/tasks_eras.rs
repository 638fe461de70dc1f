//! The same task-supporting tools for clients that cannot have tasks: 2026-07-28 requests that
//! did not declare the extension (an ordinary call, `-32021` where a task is required or a
//! tasks method is called) and 2025-era sessions (an ordinary call, server-to-client requests
//! for input, no extension in the capabilities). Also what `server/discover` declares and the
//! status notifications on `subscriptions/listen`.

mod stateless_support;
mod tasks_support;

use http::StatusCode;
use serde_json::{Value, json};
use stateless_support::{Stdio, clients, meta, with_meta};
use tasks_support::{TASKS, get, plain_caps, server, start, task_caps, task_method};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_without_the_extension_get_no_task() {
    for mut c in clients(&server()).await {
        let name = c.name();
        // Optional: an ordinary call.
        let o = c.call("hold", json!({"ms": 10}), plain_caps()).await;
        let r = o.result();
        assert_eq!(r["resultType"], "complete", "{name}: {r}");
        assert!(r.get("taskId").is_none());
        assert_eq!(o.text(), "held 10 ms");
        // Required: -32021 naming the extension (HTTP 400), before the handler runs.
        for tool in ["must_task", "intro"] {
            let o = c.call(tool, json!({}), plain_caps()).await;
            assert_eq!(o.error_code(), -32021, "{name} {tool}");
            o.assert_status(StatusCode::BAD_REQUEST);
            assert_eq!(
                o.response["error"]["data"],
                json!({"requiredCapabilities": {"extensions": {TASKS: {}}}}),
                "{name}"
            );
        }
        // A legacy `task` param promotes nothing.
        let o = c
            .request(
                "tools/call",
                with_meta(
                    json!({"name": "echo", "arguments": {"text": "x"}, "task": {"ttl": 1000}}),
                    task_caps(),
                ),
            )
            .await;
        assert_eq!(o.result()["resultType"], "complete", "{name}");
        // The tasks methods need the extension: -32021, whether the task exists or not.
        let id = start(&mut c, "hold", json!({"ms": 5000})).await;
        for (method, extra) in [
            ("tasks/get", Value::Null),
            ("tasks/update", json!({"inputResponses": {}})),
            ("tasks/cancel", Value::Null),
        ] {
            for task in [id.as_str(), "gate-test"] {
                let o = task_method(&mut c, method, task, extra.clone(), plain_caps()).await;
                assert_eq!(o.error_code(), -32021, "{name} {method} {task}");
                o.assert_status(StatusCode::BAD_REQUEST);
            }
        }
        // Nothing happened to the task.
        assert_eq!(get(&mut c, &id).await["status"], "working");
        task_method(&mut c, "tasks/cancel", &id, Value::Null, task_caps())
            .await
            .result();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discover_declares_the_extension_when_tools_support_tasks() {
    for mut c in clients(&server()).await {
        let o = c
            .request("server/discover", json!({"_meta": meta(json!({}))}))
            .await;
        let caps = &o.result()["capabilities"];
        assert_eq!(caps["extensions"], json!({TASKS: {}}), "{}", c.name());
        assert!(caps.get("tasks").is_none());
    }
    // A server without task-supporting tools neither declares nor serves it.
    for mut c in clients(&stateless_support::server()).await {
        let name = c.name();
        let o = c
            .request("server/discover", json!({"_meta": meta(json!({}))}))
            .await;
        assert!(
            o.result()["capabilities"].get("extensions").is_none(),
            "{name}"
        );
        let o = task_method(&mut c, "tasks/get", "any", Value::Null, task_caps()).await;
        assert_eq!(o.error_code(), -32601, "{name}");
        o.assert_status(StatusCode::NOT_FOUND);
    }
    // A server that will add such tools later declares and serves it up front.
    let late = stateless_support::builder().enable_tasks().build().unwrap();
    for mut c in clients(&late).await {
        let name = c.name();
        let o = c
            .request("server/discover", json!({"_meta": meta(json!({}))}))
            .await;
        assert_eq!(o.result()["capabilities"]["extensions"], json!({TASKS: {}}));
        let o = task_method(&mut c, "tasks/get", "any", Value::Null, task_caps()).await;
        assert_eq!(o.error_code(), -32602, "{name}");
    }
}

/// A 2025-11-25 session on a byte stream: `initialize` and `notifications/initialized`.
async fn session(version: &str) -> (Stdio, Value) {
    let mut s = Stdio::start(server());
    let o = s
        .request(
            "initialize",
            json!({
                "protocolVersion": version,
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "session-client", "version": "1.0.0"},
            }),
        )
        .await;
    let init = o.result().clone();
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    (s, init)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_clients_run_the_same_tools_to_completion() {
    for version in ["2025-11-25", "2025-06-18"] {
        let (mut s, init) = session(version).await;
        assert_eq!(init["protocolVersion"], version);
        let caps = &init["capabilities"];
        assert!(caps.get("extensions").is_none(), "{version}: {caps}");
        assert!(caps.get("tasks").is_none(), "{version}: {caps}");
        let list = s.request("tools/list", json!({})).await;
        for tool in list.result()["tools"].as_array().unwrap() {
            assert!(tool.get("execution").is_none(), "{version}: {tool}");
        }
        // Optional and required task support alike: the call runs to completion.
        let o = s
            .request(
                "tools/call",
                json!({"name": "hold", "arguments": {"ms": 10}}),
            )
            .await;
        assert_eq!(o.text(), "held 10 ms", "{version}");
        assert!(o.result().get("resultType").is_none() && o.result().get("taskId").is_none());
        let o = s
            .request("tools/call", json!({"name": "must_task", "arguments": {}}))
            .await;
        assert_eq!(o.text(), "ran", "{version}");
        // The handler that starts its task itself: input is a real request, no task starts.
        let id = json!(s.fresh_id());
        s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                        "params": {"name": "intro", "arguments": {}}}))
            .await;
        let ask = s.recv().await;
        assert_eq!(ask["method"], "elicitation/create", "{version}: {ask}");
        s.send(&json!({"jsonrpc": "2.0", "id": ask["id"],
                        "result": {"action": "accept", "content": {"name": "Ada"}}}))
            .await;
        let o = s.response_to(&id).await;
        assert_eq!(
            o.text(),
            "Hello, Ada! (task before: false, became: false, task now: false)",
            "{version}"
        );
        // Inside a session, asks of a task-supporting tool are requests as usual.
        let id = json!(s.fresh_id());
        s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                        "params": {"name": "two_questions", "arguments": {}}}))
            .await;
        for _ in 0..2 {
            let ask = s.recv().await;
            assert_eq!(ask["method"], "elicitation/create", "{version}: {ask}");
            s.send(&json!({"jsonrpc": "2.0", "id": ask["id"],
                            "result": {"action": "accept", "content": {"v": "S"}}}))
                .await;
        }
        assert_eq!(s.response_to(&id).await.text(), "first=S second=S");
        // The tasks methods are not there for a session.
        let o = s.request("tasks/get", json!({"taskId": "x"})).await;
        assert_eq!(o.error_code(), -32601, "{version}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_notifications_on_subscriptions_listen() {
    let mut s = Stdio::start(server());
    let id = {
        let o = s
            .request(
                "tools/call",
                with_meta(
                    json!({"name": "two_questions", "arguments": {}}),
                    task_caps(),
                ),
            )
            .await;
        o.result()["taskId"].as_str().unwrap().to_owned()
    };
    // Without the extension, asking for task ids is refused.
    let o = s
        .request(
            "subscriptions/listen",
            json!({"notifications": {"taskIds": [id]}, "_meta": meta(json!({}))}),
        )
        .await;
    assert_eq!(o.error_code(), -32021);
    // With it: the acknowledgement names the tasks honoured (not unknown ones), and the current
    // state follows at once.
    let listen = json!("listen-1");
    s.send(
        &json!({"jsonrpc": "2.0", "id": listen, "method": "subscriptions/listen",
                    "params": {"notifications": {"taskIds": [id, "no-such-task"]},
                               "_meta": meta(task_caps())}}),
    )
    .await;
    let ack = s.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([id]));
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        listen
    );
    let mut statuses = Vec::new();
    let mut last = Value::Null;
    // Answer both questions (the responses come back between the notifications).
    let mut answered = false;
    while last["status"] != "completed" {
        let m = s.recv().await;
        if m["method"] != "notifications/tasks" {
            continue;
        }
        assert_eq!(
            m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            listen
        );
        assert_eq!(m["params"]["taskId"], id.as_str());
        last = m["params"].clone();
        statuses.push(last["status"].as_str().unwrap_or_default().to_owned());
        if last["status"] == "input_required"
            && last["inputRequests"]
                .as_object()
                .is_some_and(|r| r.len() == 2)
            && !answered
        {
            answered = true;
            let o = s
                .request(
                    "tasks/update",
                    json!({"taskId": id, "_meta": meta(task_caps()), "inputResponses": {
                        "first": {"action": "accept", "content": {"v": "1"}},
                        "second": {"action": "accept", "content": {"v": "2"}},
                    }}),
                )
                .await;
            assert_eq!(o.result()["resultType"], "complete");
        }
    }
    assert!(
        statuses.contains(&"input_required".to_owned()),
        "{statuses:?}"
    );
    assert_eq!(last["result"]["content"][0]["text"], "first=1 second=2");
    // Closing the subscription (stdio: cancel it) ends it without an answer.
    s.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": listen}}),
    )
    .await;
}
