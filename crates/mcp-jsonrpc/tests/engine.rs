//! The request engine over in-memory and byte-stream connections.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use mcp_jsonrpc::codec::{CodecConfig, Framing};
use mcp_jsonrpc::{
    CallError, Connection, Engine, ErrorObject, Frame, Id, Inbound, InboundStream, Message,
    Notification, NotificationContext, Outbound, OutboundSink, Peer, RawJson, Request,
    RequestContext, RequestOptions, Response, TransportError, codes, memory_pair, to_raw,
};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

#[derive(Default)]
struct State {
    notifications: Mutex<Vec<Value>>,
    running: AtomicUsize,
    max_running: AtomicUsize,
    cancelled: Mutex<Vec<Id>>,
}

#[derive(Clone, Default)]
struct TestHandler {
    state: Arc<State>,
}

fn raw(v: Value) -> Box<RawValue> {
    to_raw(&v).unwrap()
}

fn reply(v: Value) -> RawJson {
    RawJson::serialize(&v).unwrap()
}

impl mcp_jsonrpc::Handler for TestHandler {
    async fn handle_request(
        &self,
        req: Request,
        cx: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let params: Value = req.params_as()?;
        match req.method.as_str() {
            "echo" => Ok(reply(params)),
            "sleep" => {
                let ms = params["ms"].as_u64().unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(reply(json!({"slept": ms})))
            }
            "wait_cancel" => {
                let guard = CancelProbe {
                    state: self.state.clone(),
                    id: cx.id().clone(),
                };
                std::future::pending::<()>().await;
                drop(guard);
                Err(ErrorObject::internal_error("unreachable"))
            }
            "progress" => {
                let token = params["_meta"]["progressToken"].clone();
                let steps = params["steps"].as_u64().unwrap_or(0);
                for i in 1..=steps {
                    tokio::time::sleep(Duration::from_millis(800)).await;
                    cx.peer()
                        .notify_with(
                            "notifications/progress",
                            &json!({"progressToken": token, "progress": i, "total": steps}),
                        )
                        .await
                        .map_err(ErrorObject::internal_error)?;
                }
                Ok(reply(json!({"done": steps})))
            }
            "count" => {
                let now = self.state.running.fetch_add(1, Ordering::SeqCst) + 1;
                self.state.max_running.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
                self.state.running.fetch_sub(1, Ordering::SeqCst);
                Ok(reply(json!(now)))
            }
            "ask_back" => {
                assert_eq!(cx.peer().related(), Some(cx.id()));
                let answer: Value = cx
                    .peer()
                    .call("echo", &json!({"from": "server"}), RequestOptions::new())
                    .await
                    .map_err(ErrorObject::internal_error)?;
                Ok(reply(json!({"client said": answer})))
            }
            "note_then_answer" => {
                cx.peer()
                    .notify_with("notifications/message", &json!({"data": "before"}))
                    .await
                    .map_err(ErrorObject::internal_error)?;
                Ok(reply(json!({"answered": true})))
            }
            "panic" => panic!("handler bug"),
            other => Err(ErrorObject::method_not_found(other)),
        }
    }

    async fn handle_notification(&self, n: Notification, _cx: NotificationContext) {
        // Yield so that a wrong implementation could reorder.
        tokio::task::yield_now().await;
        if n.method == "panic" {
            panic!("notification handler bug");
        }
        let params: Value = n.params_as().unwrap_or(Value::Null);
        self.state
            .notifications
            .lock()
            .unwrap()
            .push(json!({"method": n.method, "params": params}));
    }
}

/// Records that a handler's future was dropped (the engine cancelled it).
struct CancelProbe {
    state: Arc<State>,
    id: Id,
}

impl Drop for CancelProbe {
    fn drop(&mut self) {
        self.state.cancelled.lock().unwrap().push(self.id.clone());
    }
}

/// A client engine and a server engine over an in-memory pair.
fn pair(server: TestHandler, client: TestHandler) -> (Peer, Peer) {
    let (a, b) = memory_pair(16);
    let (server_peer, _) = Engine::builder().spawn(b, server);
    let (client_peer, _) = Engine::builder().spawn(a, client);
    (client_peer, server_peer)
}

/// An engine over one side of a pair; the test drives the other side by hand.
fn raw_peer(
    builder: mcp_jsonrpc::EngineBuilder,
    handler: TestHandler,
) -> (Peer, InboundStream, OutboundSink) {
    let (a, b) = memory_pair(64);
    let (peer, _) = builder.spawn(b, handler);
    let (rx, tx) = a.into_parts();
    (peer, rx, tx)
}

async fn next_frame(rx: &mut InboundStream) -> Inbound {
    tokio::time::timeout(Duration::from_secs(5), rx.next())
        .await
        .expect("no frame in time")
        .expect("stream ended")
        .expect("transport error")
        .frame
        .expect("bad frame")
}

async fn next_message(rx: &mut InboundStream) -> Message {
    match next_frame(rx).await {
        Inbound::Single(m) => m,
        other => panic!("expected a single message, got {other:?}"),
    }
}

fn request(id: i64, method: &str, params: Value) -> Outbound {
    Outbound::new(Message::Request(Request::new(
        id,
        method,
        Some(raw(params)),
    )))
}

#[tokio::test]
async fn requests_both_ways_and_errors() {
    let (client, _server) = pair(TestHandler::default(), TestHandler::default());
    let v: Value = client
        .call("echo", &json!({"a": 1}), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(v, json!({"a": 1}));

    // A handler that calls back into the client while handling a request.
    let v: Value = client
        .call("ask_back", &json!({}), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(v, json!({"client said": {"from": "server"}}));

    let e = client
        .call::<_, Value>("nope", &json!({}), RequestOptions::new())
        .await
        .unwrap_err();
    assert!(
        matches!(e, CallError::Rpc(ref o) if o.code == codes::METHOD_NOT_FOUND),
        "{e}"
    );

    let e = client
        .call::<_, Value>("panic", &json!({}), RequestOptions::new())
        .await
        .unwrap_err();
    assert!(
        matches!(e, CallError::Rpc(ref o) if o.code == codes::INTERNAL_ERROR),
        "{e}"
    );

    // Typed decoding failures are reported as such.
    let e = client
        .call::<_, Vec<u8>>("echo", &json!({"a": 1}), RequestOptions::new())
        .await
        .unwrap_err();
    assert!(matches!(e, CallError::Decode(_)));

    // The connection is still usable after all of that.
    let v: Value = client
        .call("echo", &json!({"b": 2}), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(v, json!({"b": 2}));
}

#[tokio::test(start_paused = true)]
async fn timeout_sends_cancellation_and_the_handler_is_cancelled() {
    let server = TestHandler::default();
    let state = server.state.clone();
    let (client, _server) = pair(server, TestHandler::default());
    let started = tokio::time::Instant::now();
    let e = client
        .call::<_, Value>(
            "wait_cancel",
            &json!({}),
            RequestOptions::new().timeout(Some(Duration::from_secs(2))),
        )
        .await
        .unwrap_err();
    assert!(matches!(e, CallError::Timeout));
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    // The server saw notifications/cancelled and dropped the handler.
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(state.cancelled.lock().unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn timeout_wire_format_and_no_late_response() {
    let (peer, mut rx, _tx) = raw_peer(Engine::builder(), TestHandler::default());
    let call = tokio::spawn({
        let peer = peer.clone();
        async move {
            peer.request(
                "slow",
                None,
                RequestOptions::new().timeout(Some(Duration::from_secs(1))),
            )
            .await
        }
    });
    let Message::Request(req) = next_message(&mut rx).await else {
        panic!()
    };
    assert_eq!(req.method, "slow");
    assert!(matches!(call.await.unwrap(), Err(CallError::Timeout)));
    let Message::Notification(n) = next_message(&mut rx).await else {
        panic!()
    };
    assert_eq!(n.method, "notifications/cancelled");
    let p: Value = n.params_as().unwrap();
    assert_eq!(p["requestId"], serde_json::to_value(&req.id).unwrap());
    assert_eq!(p["reason"], "request timed out");
}

#[tokio::test]
async fn on_id_sees_the_id_the_request_is_sent_with() {
    let (peer, mut rx, _tx) = raw_peer(Engine::builder(), TestHandler::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let call = tokio::spawn({
        let peer = peer.clone();
        let seen = Arc::clone(&seen);
        async move {
            let options = RequestOptions::new()
                .timeout(Some(Duration::from_secs(5)))
                .on_id(move |id| seen.lock().unwrap().push(id.clone()));
            peer.request("slow", None, options).await
        }
    });
    let Message::Request(req) = next_message(&mut rx).await else {
        panic!()
    };
    assert_eq!(
        *seen.lock().unwrap(),
        vec![req.id.clone()],
        "once, before it is sent"
    );
    call.abort();
}

#[tokio::test(start_paused = true)]
async fn progress_resets_the_timeout_up_to_the_cap() {
    let (client, _server) = pair(TestHandler::default(), TestHandler::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let options = {
        let seen = seen.clone();
        RequestOptions::new()
            .timeout(Some(Duration::from_secs(1)))
            .on_progress(move |p| seen.lock().unwrap().push((p.progress, p.total)))
    };
    // Four steps of 800 ms each: 3.2 s in total, but never 1 s without progress.
    let v: Value = client
        .call("progress", &json!({"steps": 4}), options)
        .await
        .unwrap();
    assert_eq!(v, json!({"done": 4}));
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (1.0, Some(4.0)),
            (2.0, Some(4.0)),
            (3.0, Some(4.0)),
            (4.0, Some(4.0))
        ]
    );

    // Without progress the same call times out after 1 s.
    let e = client
        .call::<_, Value>(
            "progress",
            &json!({"steps": 4}),
            RequestOptions::new().timeout(Some(Duration::from_secs(1))),
        )
        .await
        .unwrap_err();
    assert!(matches!(e, CallError::Timeout));

    // Progress does not extend past the maximum.
    let started = tokio::time::Instant::now();
    let options = RequestOptions::new()
        .timeout(Some(Duration::from_secs(1)))
        .max_timeout(Some(Duration::from_secs(2)))
        .on_progress(|_| {});
    let e = client
        .call::<_, Value>("progress", &json!({"steps": 4}), options)
        .await
        .unwrap_err();
    assert!(matches!(e, CallError::Timeout));
    assert_eq!(started.elapsed(), Duration::from_secs(2));
}

#[tokio::test]
async fn dropping_a_call_sends_cancellation() {
    let (peer, mut rx, _tx) = raw_peer(Engine::builder(), TestHandler::default());
    let call = peer.request("x", Some(raw(json!({}))), RequestOptions::new());
    let task = tokio::spawn(call);
    let Message::Request(req) = next_message(&mut rx).await else {
        panic!()
    };
    task.abort();
    let Message::Notification(n) = next_message(&mut rx).await else {
        panic!()
    };
    assert_eq!(n.method, "notifications/cancelled");
    let p: Value = n.params_as().unwrap();
    assert_eq!(p["requestId"], serde_json::to_value(&req.id).unwrap());

    // `no_cancel` suppresses it (initialize must not be cancelled).
    let task = tokio::spawn(peer.request("initialize", None, RequestOptions::new().no_cancel()));
    let Message::Request(_) = next_message(&mut rx).await else {
        panic!()
    };
    task.abort();
    let _ = task.await;
    peer.notify("marker", None).await.unwrap();
    let Message::Notification(n) = next_message(&mut rx).await else {
        panic!()
    };
    assert_eq!(n.method, "marker");
}

#[tokio::test]
async fn peer_cancellation_stops_the_handler_without_a_response() {
    let handler = TestHandler::default();
    let state = handler.state.clone();
    let (_peer, mut rx, mut tx) = raw_peer(Engine::builder(), handler);
    tx.send(request(7, "wait_cancel", json!({}))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let cancel = Notification::with_params(
        "notifications/cancelled",
        &json!({"requestId": 7, "reason": "x"}),
    )
    .unwrap();
    tx.send(Outbound::new(Message::Notification(cancel)))
        .await
        .unwrap();
    tx.send(request(8, "echo", json!({"after": true})))
        .await
        .unwrap();
    // The only answer is the one for request 8.
    let Message::Response(r) = next_message(&mut rx).await else {
        panic!()
    };
    assert_eq!(r.id, Some(Id::Number(8)));
    assert_eq!(*state.cancelled.lock().unwrap(), [Id::Number(7)]);
    // Cancelling an unknown or finished request is harmless and reaches the handler.
    let cancel =
        Notification::with_params("notifications/cancelled", &json!({"requestId": 99})).unwrap();
    tx.send(Outbound::new(Message::Notification(cancel)))
        .await
        .unwrap();
    tx.send(request(9, "echo", json!({}))).await.unwrap();
    let Message::Response(r) = next_message(&mut rx).await else {
        panic!()
    };
    assert_eq!(r.id, Some(Id::Number(9)));
}

#[tokio::test]
async fn notifications_are_handled_in_wire_order() {
    let server = TestHandler::default();
    let state = server.state.clone();
    let (client, _server) = pair(server, TestHandler::default());
    for i in 0..200 {
        client.notify_with("n", &json!({"i": i})).await.unwrap();
    }
    // A request after them is answered after they were handled (same connection, in order).
    let _: Value = client
        .call("echo", &json!({}), RequestOptions::new())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let seen: Vec<i64> = state
        .notifications
        .lock()
        .unwrap()
        .iter()
        .map(|n| n["params"]["i"].as_i64().unwrap())
        .collect();
    assert_eq!(seen, (0..200).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_is_bounded_by_max_in_flight() {
    let server = TestHandler::default();
    let state = server.state.clone();
    let (a, b) = memory_pair(4);
    let (_s, _) = Engine::builder().max_in_flight(3).spawn(b, server);
    let (client, _) = Engine::builder().spawn(a, TestHandler::default());
    let params = json!({});
    let calls: Vec<_> = (0..100)
        .map(|_| client.call::<_, Value>("count", &params, RequestOptions::new()))
        .collect();
    let results = futures_util::future::join_all(calls).await;
    assert!(results.iter().all(Result::is_ok));
    let max = state.max_running.load(Ordering::SeqCst);
    assert_eq!(max, 3, "max concurrency {max}");
}

#[tokio::test]
async fn unknown_response_ids_are_ignored() {
    let (peer, mut rx, mut tx) = raw_peer(Engine::builder(), TestHandler::default());
    tx.send(Outbound::new(Message::Response(Response::success(
        Id::Number(999),
        raw(json!(1)),
    ))))
    .await
    .unwrap();
    tx.send(Outbound::new(Message::Response(Response::error(
        None,
        ErrorObject::parse_error("x"),
    ))))
    .await
    .unwrap();
    let call = tokio::spawn({
        let peer = peer.clone();
        async move { peer.request("q", None, RequestOptions::new()).await }
    });
    let Message::Request(req) = next_message(&mut rx).await else {
        panic!()
    };
    tx.send(Outbound::new(Message::Response(Response::success(
        req.id,
        raw(json!("ok")),
    ))))
    .await
    .unwrap();
    assert_eq!(call.await.unwrap().unwrap().get(), "\"ok\"");
}

#[tokio::test]
async fn malformed_response_fails_the_call() {
    let (a, b) = tokio::io::duplex(4096);
    let (read, write) = tokio::io::split(b);
    let conn = Connection::framed(read, write, Framing::Line, CodecConfig::default());
    let (peer, _) = Engine::builder().spawn(conn, TestHandler::default());
    let (raw_read, mut raw_write) = tokio::io::split(a);
    let mut lines = BufReader::new(raw_read).lines();
    let call = tokio::spawn({
        let peer = peer.clone();
        async move { peer.request("q", None, RequestOptions::new()).await }
    });
    let line = lines.next_line().await.unwrap().unwrap();
    let req: Value = serde_json::from_str(&line).unwrap();
    let bad = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{},\"error\":{{\"code\":\"bad\"}}}}\n",
        req["id"]
    );
    raw_write.write_all(bad.as_bytes()).await.unwrap();
    assert!(matches!(
        call.await.unwrap(),
        Err(CallError::InvalidResponse(_))
    ));
}

#[tokio::test]
async fn bad_frames_are_answered_and_the_connection_survives() {
    let (a, b) = tokio::io::duplex(4096);
    let (read, write) = tokio::io::split(b);
    let config = CodecConfig::default().max_frame_size(256);
    let conn = Connection::framed(read, write, Framing::Line, config);
    let (_peer, _) = Engine::builder().spawn(conn, TestHandler::default());
    let (raw_read, mut raw_write) = tokio::io::split(a);
    let mut lines = BufReader::new(raw_read).lines();

    let mut input = Vec::new();
    input.extend_from_slice(b"{not json\n");
    input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":5}\n");
    input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"echo\"}\n");
    input.extend_from_slice(b"\xff\xff\n");
    input.extend(std::iter::repeat_n(b'x', 1000));
    input.extend_from_slice(b"\n[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\"}]\n");
    input.extend_from_slice(
        b"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"echo\",\"params\":{\"ok\":1}}\n",
    );
    raw_write.write_all(&input).await.unwrap();

    let mut answers = Vec::new();
    for _ in 0..7 {
        let line = lines.next_line().await.unwrap().unwrap();
        answers.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    let codes: Vec<_> = answers.iter().map(|a| a["error"]["code"].clone()).collect();
    assert_eq!(
        codes,
        [
            json!(-32700),
            json!(-32600),
            json!(-32600),
            json!(-32700),
            json!(-32600),
            json!(-32600),
            Value::Null
        ]
    );
    let ids: Vec<_> = answers.iter().map(|a| a["id"].clone()).collect();
    assert_eq!(
        ids,
        [
            Value::Null,
            json!(5),
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            json!(6)
        ]
    );
    assert_eq!(answers[6]["result"], json!({"ok": 1}));
}

#[tokio::test]
async fn batches_follow_the_revision_policy() {
    let (peer, mut rx, mut tx) = raw_peer(Engine::builder(), TestHandler::default());
    let batch = Frame::Batch(vec![
        Message::Request(Request::new(1, "echo", Some(raw(json!({"n": 1}))))),
        Message::Notification(Notification::new("note", None)),
        Message::Request(Request::new(2, "nope", None)),
    ]);
    // Refused by default (2025-06-18 and later have no batches).
    tx.send(Outbound::new(batch.clone())).await.unwrap();
    let Message::Response(r) = next_message(&mut rx).await else {
        panic!()
    };
    assert_eq!(r.id, None);
    assert_eq!(r.result.unwrap_err().code, codes::INVALID_REQUEST);

    peer.set_batches_allowed(true);
    tx.send(Outbound::new(batch)).await.unwrap();
    let Inbound::Batch(answers) = next_frame(&mut rx).await else {
        panic!()
    };
    let mut answers: Vec<Response> = answers
        .into_iter()
        .map(|a| match a.unwrap() {
            Message::Response(r) => r,
            other => panic!("{other:?}"),
        })
        .collect();
    answers.sort_by_key(|r| r.id.clone());
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[0].id, Some(Id::Number(1)));
    assert_eq!(answers[0].result.as_ref().unwrap().get(), r#"{"n":1}"#);
    assert_eq!(
        answers[1].result.as_ref().unwrap_err().code,
        codes::METHOD_NOT_FOUND
    );

    // A batch of notifications gets no answer at all; the next request is answered alone.
    tx.send(Outbound::new(Frame::Batch(vec![
        Message::Notification(Notification::new("a", None)),
        Message::Notification(Notification::new("b", None)),
    ])))
    .await
    .unwrap();
    tx.send(request(3, "echo", json!({}))).await.unwrap();
    let Message::Response(r) = next_message(&mut rx).await else {
        panic!()
    };
    assert_eq!(r.id, Some(Id::Number(3)));

    // An empty batch is an invalid request.
    tx.send(Outbound::new(Frame::Batch(vec![]))).await.unwrap();
    let Message::Response(r) = next_message(&mut rx).await else {
        panic!()
    };
    assert_eq!(
        (r.id, r.result.unwrap_err().code),
        (None, codes::INVALID_REQUEST)
    );
}

/// Sends `batch` as one line to an engine that allows batches and returns its one-line answer.
async fn batch_answer(batch: &str) -> Value {
    let (a, b) = tokio::io::duplex(4096);
    let (read, write) = tokio::io::split(b);
    let conn = Connection::framed(read, write, Framing::Line, CodecConfig::default());
    let (_peer, _) = Engine::builder()
        .batches_allowed(true)
        .spawn(conn, TestHandler::default());
    let (raw_read, mut raw_write) = tokio::io::split(a);
    let mut lines = BufReader::new(raw_read).lines();
    raw_write
        .write_all(format!("{batch}\n").as_bytes())
        .await
        .unwrap();
    let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
        .await
        .expect("the batch is answered")
        .unwrap()
        .unwrap();
    serde_json::from_str(&line).unwrap()
}

#[tokio::test]
async fn batch_with_bad_elements_answers_each() {
    let answer = batch_answer(
        r#"[{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}, 1, {"foo":"boo"}, {"jsonrpc":"2.0","method":"n"}]"#,
    )
    .await;
    let answers = answer.as_array().unwrap();
    assert_eq!(answers.len(), 3, "{answer}");
    let errors = answers
        .iter()
        .filter(|a| a["error"]["code"] == json!(-32600))
        .count();
    assert_eq!(errors, 2);
    assert!(
        answers
            .iter()
            .any(|a| a["id"] == json!(1) && a["result"] == json!({}))
    );
}

#[tokio::test]
async fn a_batch_answers_each_request_when_one_handler_panics() {
    let answer = batch_answer(
        r#"[{"jsonrpc":"2.0","id":1,"method":"sleep","params":{"ms":30}}, {"jsonrpc":"2.0","id":2,"method":"panic","params":{}}, {"jsonrpc":"2.0","id":3,"method":"echo","params":{}}]"#,
    )
    .await;
    let by_id = |id: i64| {
        answer
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["id"] == json!(id))
            .cloned()
            .unwrap_or_else(|| panic!("no answer for {id} in {answer}"))
    };
    assert_eq!(by_id(1)["result"], json!({"slept": 30}));
    assert_eq!(by_id(2)["error"]["code"], json!(codes::INTERNAL_ERROR));
    assert_eq!(by_id(3)["result"], json!({}));
}

#[tokio::test]
async fn a_panicking_notification_handler_leaves_the_connection_serving() {
    let handler = TestHandler::default();
    let state = handler.state.clone();
    let (_peer, mut rx, mut tx) = raw_peer(Engine::builder(), handler);
    for method in ["panic", "after"] {
        let n = Notification::with_params(method, &json!({})).unwrap();
        tx.send(Outbound::new(Message::Notification(n)))
            .await
            .unwrap();
    }
    tx.send(request(1, "echo", json!({"still": "serving"})))
        .await
        .unwrap();
    let Message::Response(r) = next_message(&mut rx).await else {
        panic!()
    };
    assert_eq!(r.result.unwrap().get(), r#"{"still":"serving"}"#);
    // Notifications are handled in order, apart from requests: the next one is too.
    for _ in 0..100 {
        if !state.notifications.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let seen = state.notifications.lock().unwrap().clone();
    assert_eq!(seen, vec![json!({"method": "after", "params": {}})]);
}

#[tokio::test]
async fn duplicate_request_ids_are_refused() {
    let (_peer, mut rx, mut tx) = raw_peer(Engine::builder(), TestHandler::default());
    tx.send(request(1, "sleep", json!({"ms": 100})))
        .await
        .unwrap();
    tx.send(request(1, "echo", json!({}))).await.unwrap();
    let Message::Response(r) = next_message(&mut rx).await else {
        panic!()
    };
    assert_eq!(r.id, Some(Id::Number(1)));
    assert_eq!(r.result.unwrap_err().code, codes::INVALID_REQUEST);
    let Message::Response(r) = next_message(&mut rx).await else {
        panic!()
    };
    assert_eq!(r.result.unwrap().get(), r#"{"slept":100}"#);
}

#[tokio::test]
async fn transport_end_fails_pending_calls_with_the_reason() {
    let (tx_frames, rx_frames) = mpsc::channel::<Result<mcp_jsonrpc::Incoming, TransportError>>(4);
    let reader = futures_util::stream::unfold(rx_frames, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    let (sink_tx, mut sink_rx) = mpsc::channel::<Outbound>(16);
    let writer = futures_util::sink::unfold(sink_tx, |tx, item: Outbound| async move {
        tx.send(item)
            .await
            .map_err(|_| TransportError::Closed("gone".into()))?;
        Ok::<_, TransportError>(tx)
    });
    let conn = Connection::new(Box::pin(reader), Box::pin(writer));
    let handler = TestHandler::default();
    let state = handler.state.clone();
    let (peer, driver) = Engine::builder().spawn(conn, handler);

    let call = tokio::spawn({
        let peer = peer.clone();
        async move { peer.request("q", None, RequestOptions::new()).await }
    });
    // A running handler that must see cancellation.
    tx_frames
        .send(Ok(Outbound::new(Message::Request(Request::new(
            1,
            "wait_cancel",
            None,
        )))
        .frame
        .into()))
        .await
        .unwrap();
    assert!(matches!(
        sink_rx.recv().await.unwrap().frame,
        Frame::Single(Message::Request(_))
    ));
    tokio::time::sleep(Duration::from_millis(20)).await;
    tx_frames
        .send(Err(TransportError::Closed(
            "child exited with status 3".into(),
        )))
        .await
        .unwrap();
    let e = call.await.unwrap().unwrap_err();
    assert!(
        matches!(&e, CallError::Closed(r) if r.contains("status 3")),
        "{e}"
    );
    assert!(driver.await.unwrap().is_err());
    peer.closed().await;
    assert!(peer.is_closed());
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(*state.cancelled.lock().unwrap(), [Id::Number(1)]);
    // New calls fail at once.
    let e = peer
        .request("q", None, RequestOptions::new())
        .await
        .unwrap_err();
    assert!(matches!(e, CallError::Closed(_)));
}

#[tokio::test]
async fn local_close_completes_both_sides() {
    let (client, server) = pair(TestHandler::default(), TestHandler::default());
    let _: Value = client
        .call("echo", &json!({}), RequestOptions::new())
        .await
        .unwrap();
    client.close();
    client.closed().await;
    tokio::time::timeout(Duration::from_secs(5), server.closed())
        .await
        .unwrap();
    assert_eq!(
        server.close_reason().as_deref(),
        Some("the peer closed the connection")
    );
    assert_eq!(client.close_reason().as_deref(), Some("closed locally"));
}

/// Serves `lines` through a pipe of `pipe` bytes (the engine's writer is blocked most of the
/// time, so answers queue up wherever they can) and returns one answer per line.
async fn through_a_tiny_pipe(
    pipe: usize,
    builder: mcp_jsonrpc::EngineBuilder,
    lines: Vec<String>,
) -> Vec<Value> {
    let (a, b) = tokio::io::duplex(pipe);
    let (read, write) = tokio::io::split(b);
    let conn = Connection::framed(read, write, Framing::Line, CodecConfig::default());
    let (_peer, _) = builder.spawn(conn, TestHandler::default());
    let (raw_read, mut raw_write) = tokio::io::split(a);
    let n = lines.len();
    let writer = tokio::spawn(async move {
        for line in lines {
            raw_write.write_all(line.as_bytes()).await.unwrap();
        }
        raw_write
    });
    let mut reader = BufReader::new(raw_read).lines();
    let mut answers = Vec::with_capacity(n);
    for _ in 0..n {
        let line = tokio::time::timeout(Duration::from_secs(20), reader.next_line())
            .await
            .expect("an answer in time")
            .unwrap()
            .unwrap();
        answers.push(serde_json::from_str(&line).unwrap());
    }
    let _raw_write = writer.await.unwrap();
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_reader_backpressure_loses_nothing() {
    // Driver-made error answers and handler responses alike.
    const N: usize = 3000;
    let lines = (0..N)
        .map(|i| {
            if i % 2 == 0 {
                "garbage\n".to_owned()
            } else {
                format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"echo\",\"params\":{{\"i\":{i}}}}}\n"
                )
            }
        })
        .collect();
    let builder = Engine::builder().queue_capacity(8).max_in_flight(4);
    let mut parse_errors = 0;
    let mut ids = Vec::new();
    for v in through_a_tiny_pipe(512, builder, lines).await {
        if v["error"]["code"] == json!(-32700) {
            parse_errors += 1;
        } else {
            assert_eq!(v["result"]["i"], v["id"]);
            ids.push(v["id"].as_u64().unwrap());
        }
    }
    ids.sort_unstable();
    assert_eq!(parse_errors, N / 2);
    assert_eq!(
        ids,
        (0..N as u64).filter(|i| i % 2 == 1).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn a_handler_answering_at_once_never_overtakes_what_it_sent() {
    let (_peer, mut rx, mut tx) = raw_peer(Engine::builder(), TestHandler::default());
    for id in 1..=20 {
        tx.send(request(id, "note_then_answer", json!({})))
            .await
            .unwrap();
    }
    for id in 1..=20 {
        let Message::Notification(n) = next_message(&mut rx).await else {
            panic!("the notification must come first")
        };
        assert_eq!(n.method, "notifications/message");
        let Message::Response(r) = next_message(&mut rx).await else {
            panic!("then the response")
        };
        assert_eq!(r.id, Some(Id::Number(id)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_driver_stops_the_engine_on_a_multi_thread_runtime() {
    let (a, b) = memory_pair(16);
    let (peer, driver) = Engine::builder().start(b, TestHandler::default());
    let (mut rx, mut tx) = a.into_parts();
    // Poll the driver (which moves the engine onto a task of its own), then drop it.
    let polled = tokio::time::timeout(Duration::from_millis(20), driver).await;
    assert!(polled.is_err(), "the driver must still be running");
    let failed = peer
        .call::<_, Value>("echo", &json!({}), RequestOptions::new())
        .await;
    assert!(matches!(failed, Err(CallError::Closed(_))), "{failed:?}");
    let _ = tx.send(request(1, "echo", json!({}))).await;
    let end = tokio::time::timeout(Duration::from_secs(5), rx.next())
        .await
        .expect("the engine's end of the connection must close");
    assert!(end.is_none(), "no answer once the driver is gone: {end:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spawned_driver_reports_the_close() {
    let (a, b) = memory_pair(16);
    let (peer, driver) = Engine::builder().start(b, TestHandler::default());
    let running = tokio::spawn(driver);
    let (client, _client_task) = Engine::builder().spawn(a, TestHandler::default());
    let echoed: Value = client
        .call("echo", &json!({"x": 1}), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(echoed, json!({"x": 1}));
    peer.close();
    let result = tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .expect("the driver must finish")
        .expect("no panic");
    assert!(result.is_ok(), "{result:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_flood_through_a_tiny_pipe_loses_nothing() {
    // Only driver-made answers: the driver's own queue fills while the writer is blocked, and
    // reading must resume once writing made room.
    let lines = vec!["{oops\n".to_owned(); 2000];
    let answers = through_a_tiny_pipe(256, Engine::builder().queue_capacity(2), lines).await;
    assert!(answers.iter().all(|v| v["error"]["code"] == json!(-32700)));
}

/// Records notifications synchronously; `seen` answers how many it has handled.
#[derive(Clone, Default)]
struct Recorder {
    seen: Arc<AtomicUsize>,
}

impl mcp_jsonrpc::Handler for Recorder {
    async fn handle_request(
        &self,
        _req: Request,
        _cx: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        Ok(reply(json!(self.seen.load(Ordering::SeqCst))))
    }

    async fn handle_notification(&self, _n: Notification, _cx: NotificationContext) {
        self.seen.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_notification_is_handled_before_the_request_after_it() {
    let (a, b) = memory_pair(16);
    let (_server, _) = Engine::builder().spawn(b, Recorder::default());
    let (mut rx, mut tx) = a.into_parts();
    for round in 1..=50 {
        let n = Notification::with_params("notifications/initialized", &json!({})).unwrap();
        tx.send(Outbound::new(Message::Notification(n)))
            .await
            .unwrap();
        tx.send(request(round, "seen", json!({}))).await.unwrap();
        let Message::Response(r) = next_message(&mut rx).await else {
            panic!("expected the answer")
        };
        let seen: u64 = serde_json::from_str(r.result.unwrap().get()).unwrap();
        assert_eq!(seen, u64::try_from(round).unwrap(), "round {round}");
    }
}
