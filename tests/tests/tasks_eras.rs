//! The same task-supporting tools in every era: 2026-07-28 requests that did not declare the
//! extension (an ordinary call, `-32021` where a task is required or a tasks method is called),
//! 2025-11-25 sessions (tasks in that revision's form: `task` in the `tools/call` params,
//! `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`), older sessions (an ordinary call,
//! server-to-client requests for input, no tasks in the capabilities), and this project's
//! client running tasks in both forms with one API. Also what `server/discover` declares and
//! the status notifications on `subscriptions/listen`.

use crate::stateless_support;
use crate::tasks_support;

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

/// A session on a byte stream: `initialize` and `notifications/initialized`.
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
    for version in ["2025-06-18"] {
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
        // The tasks methods are not in this revision, and a `task` member changes nothing.
        for method in ["tasks/get", "tasks/result", "tasks/list", "tasks/cancel"] {
            let o = s.request(method, json!({"taskId": "x"})).await;
            assert_eq!(o.error_code(), -32601, "{version} {method}");
        }
        let o = s
            .request(
                "tools/call",
                json!({"name": "hold", "arguments": {"ms": 1}, "task": {"ttl": 1000}}),
            )
            .await;
        assert_eq!(o.text(), "held 1 ms", "{version}");
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

/// The `_meta` that ties a message to a task in 2025-11-25.
const RELATED: &str = "io.modelcontextprotocol/related-task";

/// A 2025-11-25 `tools/call` with `task`: the `CreateTaskResult`'s task.
async fn create(s: &mut Stdio, tool: &str, arguments: Value) -> Value {
    let o = s
        .request(
            "tools/call",
            json!({"name": tool, "arguments": arguments, "task": {"ttl": 60_000}}),
        )
        .await;
    let task = o.result()["task"].clone();
    assert_eq!(task["status"], "working", "{tool}: {}", o.result());
    assert!(o.result().get("resultType").is_none() && o.result().get("content").is_none());
    task
}

/// Polls `tasks/get` of a 2025-11-25 session until the task's status is `status`.
async fn poll(s: &mut Stdio, id: &str, status: &str) -> Value {
    let deadline = tokio::time::Instant::now() + stateless_support::WAIT;
    loop {
        let task = s
            .request("tasks/get", json!({"taskId": id}))
            .await
            .result()
            .clone();
        if task["status"] == status {
            return task;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{id} never {status}: {task}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_2025_11_25_runs_tools_as_tasks_of_its_revision() {
    let (mut s, init) = session("2025-11-25").await;
    let caps = &init["capabilities"];
    assert_eq!(
        caps["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
    );
    assert!(caps.get("extensions").is_none(), "{caps}");
    let list = s.request("tools/list", json!({})).await;
    let support = |name: &str| {
        list.result()["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["execution"]["taskSupport"].clone())
            .unwrap()
    };
    assert_eq!(support("hold"), "optional");
    assert_eq!(support("must_task"), "required");
    assert_eq!(support("echo"), Value::Null);

    // Create, poll, read the result, list.
    let task = create(&mut s, "hold", json!({"ms": 50})).await;
    let id = task["taskId"].as_str().unwrap().to_owned();
    assert!(
        task["ttl"].as_u64().is_some_and(|ttl| ttl <= 60_000),
        "{task}"
    );
    assert!(task["pollInterval"].as_u64().is_some(), "{task}");
    assert!(task["createdAt"].is_string() && task["lastUpdatedAt"].is_string());
    let o = s.request("tasks/result", json!({"taskId": id})).await;
    assert_eq!(o.text(), "held 50 ms");
    assert_eq!(o.result()["_meta"][RELATED], json!({"taskId": id}));
    let done = s.request("tasks/get", json!({"taskId": id})).await;
    assert_eq!(done.result()["status"], "completed");
    assert!(done.result().get("result").is_none());
    let listed = s.request("tasks/list", json!({})).await;
    let tasks = listed.result()["tasks"].as_array().unwrap().clone();
    assert!(
        tasks.iter().any(|t| t["taskId"] == id.as_str()),
        "{tasks:?}"
    );
    assert!(listed.result().get("nextCursor").is_none());
    // Cancelling a task that ended is refused.
    let o = s.request("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(o.error_code(), -32602);

    // The same tool without `task` is an ordinary call; a required one refuses it, and one
    // that never runs as a task refuses `task` (-32601, as the revision says).
    let o = s
        .request(
            "tools/call",
            json!({"name": "hold", "arguments": {"ms": 1}}),
        )
        .await;
    assert_eq!(o.text(), "held 1 ms");
    let o = s
        .request("tools/call", json!({"name": "must_task", "arguments": {}}))
        .await;
    assert_eq!(o.error_code(), -32601);
    let o = s
        .request(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}, "task": {}}),
        )
        .await;
    assert_eq!(o.error_code(), -32601);
    let task = create(&mut s, "must_task", json!({})).await;
    let o = s
        .request("tasks/result", json!({"taskId": task["taskId"]}))
        .await;
    assert_eq!(o.text(), "ran");

    // Unknown tasks and malformed params.
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let o = s.request(method, json!({"taskId": "no-such-task"})).await;
        assert_eq!(o.error_code(), -32602, "{method}");
        let o = s.request(method, json!({})).await;
        assert_eq!(o.error_code(), -32602, "{method}");
    }
    let o = s
        .request("tasks/list", json!({"cursor": "not a cursor"}))
        .await;
    assert_eq!(o.error_code(), -32602);

    // A tool error fails the task; `tasks/result` gives the tool's result. A JSON-RPC error
    // fails it too, and `tasks/result` gives that error.
    let task = create(&mut s, "tool_error", json!({})).await;
    let id = task["taskId"].as_str().unwrap().to_owned();
    let o = s.request("tasks/result", json!({"taskId": id})).await;
    assert_eq!(o.result()["isError"], true);
    let failed = poll(&mut s, &id, "failed").await;
    assert!(failed["statusMessage"].is_string(), "{failed}");
    let task = create(&mut s, "protocol_error", json!({})).await;
    let o = s
        .request("tasks/result", json!({"taskId": task["taskId"]}))
        .await;
    assert_eq!(o.error_code(), -32602);
    assert!(o.error_message().contains("refused on purpose"));

    // Cancelled: the task says so at once, and has no result.
    let task = create(&mut s, "watch_cancel", json!({})).await;
    let id = task["taskId"].as_str().unwrap().to_owned();
    let o = s.request("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(o.result()["status"], "cancelled");
    assert_eq!(o.result()["taskId"], id.as_str());
    let o = s.request("tasks/result", json!({"taskId": id})).await;
    assert_eq!(o.error_code(), -32602);
    let o = s.request("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(o.error_code(), -32602);

    // Input: requests on the session tied to the task, which is input_required meanwhile.
    let task = create(&mut s, "two_questions", json!({})).await;
    let id = task["taskId"].as_str().unwrap().to_owned();
    let mut asks = Vec::new();
    while asks.len() < 2 {
        let m = s.recv().await;
        if m["method"] == "elicitation/create" {
            assert_eq!(m["params"]["_meta"][RELATED], json!({"taskId": id}), "{m}");
            asks.push(m);
        }
    }
    poll(&mut s, &id, "input_required").await;
    for ask in &asks {
        s.send(&json!({"jsonrpc": "2.0", "id": ask["id"],
                        "result": {"action": "accept", "content": {"v": "T"}}}))
            .await;
    }
    let o = s.request("tasks/result", json!({"taskId": id})).await;
    assert_eq!(o.text(), "first=T second=T");
    // Its end was announced on the session.
    let mut announced = o.notifications.clone();
    while !announced.iter().any(|m| {
        m["method"] == "notifications/tasks/status" && m["params"]["taskId"] == id.as_str()
    }) {
        announced.push(s.recv().await);
    }

    // Another session does not see these tasks.
    let (mut other, _) = session("2025-11-25").await;
    let o = other.request("tasks/get", json!({"taskId": id})).await;
    assert_eq!(o.error_code(), -32602);
    let o = other.request("tasks/list", json!({})).await;
    assert_eq!(o.result()["tasks"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_list_pages_with_an_opaque_cursor() {
    let mut options = mcp_server::ServerOptions::default();
    options.page_size = 2;
    let server = tasks_support::builder().options(options).build().unwrap();
    let mut s = Stdio::start(server);
    s.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "pager", "version": "1"}}),
    )
    .await;
    let mut created = Vec::new();
    for _ in 0..5 {
        let task = create(&mut s, "hold", json!({"ms": 1})).await;
        created.push(task["taskId"].as_str().unwrap().to_owned());
    }
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let params = if cursor.is_null() {
            json!({})
        } else {
            json!({"cursor": cursor})
        };
        let page = s.request("tasks/list", params).await.result().clone();
        let tasks = page["tasks"].as_array().unwrap();
        assert!(tasks.len() <= 2);
        seen.extend(
            tasks
                .iter()
                .map(|t| t["taskId"].as_str().unwrap().to_owned()),
        );
        cursor = page.get("nextCursor").cloned().unwrap_or(Value::Null);
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(seen, created, "every task once, oldest first");
}

mod client_side {
    //! This project's client against the same server: one API for both forms of tasks.

    use std::time::Duration;

    use mcp_client::{
        CallError, Client, ClientSession, ElicitationAnswer, ElicitationRequest, TaskStart,
        TaskStatus,
    };
    use mcp_tests::http::Served;
    use mcp_transport_http::client::{ClientMode, StreamableHttpClient};
    use mcp_types::{Implementation, ProtocolVersion};
    use serde_json::json;

    use super::tasks_support;

    fn server() -> mcp_server::Server {
        let mut options = mcp_server::ServerOptions::default();
        options.tasks = mcp_server::TaskOptions::default().poll_interval(Duration::from_millis(20));
        tasks_support::builder().options(options).build().unwrap()
    }

    fn client(version: ProtocolVersion) -> Client {
        Client::builder(Implementation::new("tasks-client", "1.0.0"))
            .protocol_version(version)
            .on_elicit(|_request: ElicitationRequest| async move {
                Ok(ElicitationAnswer::Accept(
                    json!({"v": "C"}).as_object().unwrap().clone(),
                ))
            })
            .build()
    }

    async fn in_memory(server: &mcp_server::Server, version: ProtocolVersion) -> ClientSession {
        let (client_side, server_side) = mcp_jsonrpc::memory_pair(64);
        let server = server.clone();
        tokio::spawn(async move { server.serve(server_side).await });
        client(version).connect(client_side).await.unwrap()
    }

    async fn over_http(served: &Served, version: ProtocolVersion) -> ClientSession {
        let transport = StreamableHttpClient::builder(served.url("/mcp"))
            .mode(ClientMode::Auto)
            .build()
            .unwrap();
        let (connection, _handle) = transport.connect().await.unwrap();
        client(version).connect(connection).await.unwrap()
    }

    fn task_of(start: TaskStart) -> mcp_client::Task {
        match start {
            TaskStart::Task(task) => task,
            other => panic!("not a task: {other:?}"),
        }
    }

    async fn exercise(session: &ClientSession, label: &str) {
        let version = session.protocol_version();
        assert!(session.offers_tasks(), "{label}");
        // Create, poll, read the result.
        let task = task_of(
            session
                .call_tool_as_task("hold", json!({"ms": 50}), Some(Duration::from_secs(60)))
                .await
                .unwrap(),
        );
        assert_eq!(task.status, TaskStatus::Working, "{label}");
        let polled = session.get_task(&task.task_id).await.unwrap();
        assert_eq!(polled.task_id, task.task_id, "{label}");
        let result = session.task_result(&task.task_id).await.unwrap();
        assert_eq!(
            mcp_tests::content::text_of(&result.content),
            "held 50 ms",
            "{label}"
        );
        assert_eq!(
            session.get_task(&task.task_id).await.unwrap().status,
            TaskStatus::Completed,
            "{label}"
        );
        // List: 2025-11-25 only.
        match version {
            ProtocolVersion::V2025_11_25 => {
                let page = session.list_tasks(None).await.unwrap();
                assert!(
                    page.tasks.iter().any(|t| t.task_id == task.task_id),
                    "{label}: {page:?}"
                );
            }
            _ => assert!(
                matches!(
                    session.list_tasks(None).await,
                    Err(CallError::NotInRevision { .. })
                ),
                "{label}"
            ),
        }
        // Input: answered by the client's handler in both forms.
        let task = task_of(
            session
                .call_tool_as_task("two_questions", json!({}), None)
                .await
                .unwrap(),
        );
        let result = session.task_result(&task.task_id).await.unwrap();
        assert_eq!(
            mcp_tests::content::text_of(&result.content),
            "first=C second=C",
            "{label}"
        );
        // A JSON-RPC error of the call.
        let task = task_of(
            session
                .call_tool_as_task("protocol_error", json!({}), None)
                .await
                .unwrap(),
        );
        match session.task_result(&task.task_id).await {
            Err(CallError::Rpc(e)) => assert!(e.message.contains("refused on purpose"), "{label}"),
            other => panic!("{label}: {other:?}"),
        }
        // Cancel.
        let task = task_of(
            session
                .call_tool_as_task("watch_cancel", json!({}), None)
                .await
                .unwrap(),
        );
        session.cancel_task(&task.task_id).await.unwrap();
        assert_eq!(
            session.get_task(&task.task_id).await.unwrap().status,
            TaskStatus::Cancelled,
            "{label}"
        );
        assert!(
            matches!(
                session.task_result(&task.task_id).await,
                Err(CallError::TaskCancelled(_))
            ),
            "{label}"
        );
        // Without a task, the same tool is an ordinary call.
        let plain = session.call_tool("hold", json!({"ms": 1})).await.unwrap();
        assert_eq!(
            mcp_tests::content::text_of(&plain.content),
            "held 1 ms",
            "{label}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_client_api_runs_tasks_in_both_forms_on_both_transports() {
        let server = server();
        for version in [ProtocolVersion::V2025_11_25, ProtocolVersion::V2026_07_28] {
            let session = in_memory(&server, version).await;
            assert_eq!(session.protocol_version(), version);
            exercise(&session, &format!("{version} in memory")).await;
        }
        let served = Served::start(
            mcp_transport_http::server::StreamableHttpService::builder(server.connection_handler())
                .config(mcp_transport_http::server::HttpServerConfig::default().path("/mcp"))
                .build(),
        )
        .await;
        for version in [ProtocolVersion::V2025_11_25, ProtocolVersion::V2026_07_28] {
            let session = over_http(&served, version).await;
            assert_eq!(session.protocol_version(), version);
            exercise(&session, &format!("{version} over HTTP")).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn older_revisions_have_no_tasks() {
        let session = in_memory(&server(), ProtocolVersion::V2025_06_18).await;
        assert!(!session.offers_tasks());
        assert!(matches!(
            session
                .call_tool_as_task("hold", json!({"ms": 1}), None)
                .await,
            Err(CallError::MissingCapability { .. })
        ));
        assert!(matches!(
            session.get_task("x").await,
            Err(CallError::NotInRevision { .. })
        ));
    }
}
