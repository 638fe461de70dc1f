//! The inline reader (`mcp_transport_stdio::inline`) over real pipes: an engine on a runtime
//! thread, the reader on a thread of its own, and a client writing and reading lines.
#![cfg(unix)]

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as std_mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use mcp_jsonrpc::{Engine, ErrorObject, Handler, RawJson, Request, RequestContext};
use mcp_transport_stdio::StdioOptions;
use mcp_transport_stdio::inline::{InlineReader, fds_inline};
use serde_json::{Value, json};
use tokio::sync::Notify;

const READER: &str = "inline-reader";
const RUNTIME: &str = "inline-runtime";

/// The methods under test, served alike by the reader and by the engine.
#[derive(Clone, Default)]
struct Methods {
    release: Arc<Notify>,
    /// Set by a `watch` handler once its cancellation fired.
    saw_cancellation: Arc<AtomicBool>,
    /// Set while a `nap` handler sleeps.
    napping: Arc<AtomicBool>,
}

impl Methods {
    async fn serve(self, request: Request, cx: RequestContext) -> Result<RawJson, ErrorObject> {
        let thread = std::thread::current().name().unwrap_or("").to_owned();
        match request.method.as_str() {
            // Where the handler was first run.
            "where" | "initialize" => Ok(raw(&json!({ "thread": thread }))),
            "notify_then_answer" => {
                let params = raw(&json!({ "level": "info", "data": "first" }));
                let _ = cx
                    .peer()
                    .notify("notifications/message", Some(params.into_raw_value()))
                    .await;
                Ok(raw(&json!("second")))
            }
            "wait" => {
                self.release.notified().await;
                Ok(raw(&json!("released")))
            }
            "watch" => {
                // What blocking work does with the token: keep a clone and stop once it fires
                // (the handler's own future is dropped then, and polled no more).
                let token = cx.cancellation().clone();
                let saw = Arc::clone(&self.saw_cancellation);
                tokio::spawn(async move {
                    token.cancelled().await;
                    saw.store(true, Ordering::SeqCst);
                });
                std::future::pending::<()>().await;
                Ok(raw(&json!("never")))
            }
            "saw" => Ok(raw(&json!(self.saw_cancellation.load(Ordering::SeqCst)))),
            "nap" => {
                self.napping.store(true, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(100)).await;
                self.napping.store(false, Ordering::SeqCst);
                Ok(raw(&json!("rested")))
            }
            "napping" => Ok(raw(&json!(self.napping.load(Ordering::SeqCst)))),
            "release" => {
                self.release.notify_one();
                Ok(raw(&json!("ok")))
            }
            "panic" => panic!("the handler failed"),
            "big" => Ok(raw(&json!("x".repeat(1 << 20)))),
            // Answered by the engine (the handler waits), larger than the pipe.
            "big_later" => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                Ok(raw(&json!("y".repeat(1 << 20))))
            }
            _ => Err(ErrorObject::method_not_found(&request.method)),
        }
    }
}

impl Handler for Methods {
    fn handle_request(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> impl Future<Output = Result<RawJson, ErrorObject>> + Send {
        self.clone().serve(request, cx)
    }
}

fn raw(value: &Value) -> RawJson {
    RawJson::serialize(value).expect("serializable")
}

struct Harness {
    to_server: Option<std::fs::File>,
    lines: std_mpsc::Receiver<Value>,
    engine: JoinHandle<Result<(), mcp_jsonrpc::TransportError>>,
    reader: JoinHandle<std::io::Result<()>>,
}

/// A server on pipes, not running yet: its engine started (its inlet bound to the reader) on
/// a runtime nobody drives, its reader not reading.
struct Unstarted {
    runtime: tokio::runtime::Runtime,
    driver: mcp_jsonrpc::Driver,
    reader: InlineReader,
    to_server: File,
    from_server: File,
}

fn unstarted(nonblocking_input: bool) -> Unstarted {
    unstarted_with(nonblocking_input, 64)
}

/// [`unstarted`] with an engine that runs at most `places` requests at once.
fn unstarted_with(nonblocking_input: bool, places: usize) -> Unstarted {
    let (server_in, to_server) = rustix::pipe::pipe().expect("pipe");
    if nonblocking_input {
        let flags = rustix::fs::fcntl_getfl(&server_in).expect("flags");
        rustix::fs::fcntl_setfl(&server_in, flags | rustix::fs::OFlags::NONBLOCK).expect("set");
    }
    let (from_server, server_out) = rustix::pipe::pipe().expect("pipe");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let entered = runtime.enter();
    let (connection, reader) =
        fds_inline(server_in, server_out, StdioOptions::auto()).expect("a pipe is served inline");
    let methods = Methods::default();
    let (_peer, driver) = Engine::builder()
        .max_in_flight(places)
        .start(connection, methods);
    drop(entered);
    Unstarted {
        runtime,
        driver,
        reader,
        to_server: File::from(to_server),
        from_server: File::from(from_server),
    }
}

impl Harness {
    fn start() -> Harness {
        Harness::start_with(false)
    }

    fn start_with(nonblocking_input: bool) -> Harness {
        Harness::start_from(unstarted(nonblocking_input))
    }

    /// A harness whose engine lets at most `places` requests run at once, with request 1
    /// napping and request 2 asking whether it naps already sent.
    fn napping_with_places(places: usize) -> Harness {
        let mut h = Harness::start_from(unstarted_with(false, places));
        h.call(1, "nap");
        h.call(2, "napping");
        h
    }

    fn start_from(unstarted: Unstarted) -> Harness {
        let Unstarted {
            runtime,
            driver,
            reader,
            to_server,
            from_server,
        } = unstarted;
        let handle = runtime.handle().clone();
        let engine = std::thread::Builder::new()
            .name(RUNTIME.into())
            .spawn(move || runtime.block_on(driver))
            .expect("thread");
        let reader = std::thread::Builder::new()
            .name(READER.into())
            .spawn(move || reader.run(&handle))
            .expect("thread");
        let (tx, lines) = std_mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(from_server).lines() {
                let Ok(line) = line else { break };
                let value = serde_json::from_str(&line).expect("a JSON line");
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let mut harness = Harness {
            to_server: Some(to_server),
            lines,
            engine,
            reader,
        };
        harness.send(json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize" }));
        let answer = harness.next();
        assert_eq!(answer["result"]["thread"], READER, "{answer}");
        harness
    }

    fn send(&mut self, message: Value) {
        self.send_raw(&format!("{message}\n"));
    }

    fn send_raw(&mut self, text: &str) {
        let to_server = self.to_server.as_mut().expect("open");
        to_server.write_all(text.as_bytes()).expect("write");
    }

    fn call(&mut self, id: u64, method: &str) {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method }));
    }

    fn next(&self) -> Value {
        self.lines
            .recv_timeout(Duration::from_secs(10))
            .expect("a message within 10 s")
    }

    /// Ends the input and waits for both threads.
    fn finish(self) {
        self.finish_with_rest();
    }

    /// Sends the client's `notifications/cancelled` for request `id`.
    fn cancel(&mut self, id: u64) {
        self.send(json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": { "requestId": id }
        }));
    }

    /// [`finish`](Self::finish), checking the server wrote nothing more (a cancelled request
    /// gets no answer).
    fn finish_without_more(self) {
        let rest = self.finish_with_rest();
        assert!(
            rest.is_empty(),
            "no answer to the cancelled request: {rest:?}"
        );
    }

    /// [`finish`](Self::finish), and what the server wrote that was not read yet.
    fn finish_with_rest(mut self) -> Vec<Value> {
        drop(self.to_server.take());
        let reader = self.reader.join().expect("the reader thread");
        assert!(reader.is_ok(), "{reader:?}");
        let engine = self.engine.join().expect("the engine thread");
        assert!(engine.is_ok(), "{engine:?}");
        let mut rest = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
            rest.push(line);
        }
        rest
    }
}

#[test]
fn requests_answered_at_once_are_served_on_the_reader_thread() {
    let mut h = Harness::start();
    for id in 1..=3 {
        h.call(id, "where");
        let answer = h.next();
        assert_eq!(answer["id"], id);
        assert_eq!(answer["result"]["thread"], READER, "{answer}");
    }
    h.finish();
}

#[test]
fn what_a_handler_sends_before_answering_comes_first() {
    let mut h = Harness::start();
    h.call(1, "notify_then_answer");
    let first = h.next();
    assert_eq!(first["method"], "notifications/message", "{first}");
    assert_eq!(first["params"]["data"], "first");
    let second = h.next();
    assert_eq!(second["id"], 1, "{second}");
    assert_eq!(second["result"], "second");
    h.finish();
}

#[test]
fn a_waiting_request_does_not_hold_up_the_next_and_keeps_its_id() {
    let mut h = Harness::start();
    h.call(1, "wait");
    h.call(2, "where");
    let answer = h.next();
    assert_eq!(answer["id"], 2, "{answer}");
    // The waiting request's id is in use until it is answered.
    h.call(1, "where");
    let refused = h.next();
    assert_eq!(refused["id"], 1, "{refused}");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    h.call(3, "release");
    let mut ids: Vec<(u64, Value)> = (0..2)
        .map(|_| h.next())
        .map(|m| (m["id"].as_u64().expect("an id"), m["result"].clone()))
        .collect();
    ids.sort_by_key(|(id, _)| *id);
    assert_eq!(ids, [(1, json!("released")), (3, json!("ok"))]);
    h.finish();
}

#[test]
fn with_every_place_taken_by_waiting_requests_the_next_waits_for_one() {
    let mut h = Harness::napping_with_places(1);
    // The napping request holds the only place: the next starts once the nap is over. (Its
    // answer may still be written first: the reader writes its own answers at once, the
    // engine those of requests that waited.)
    let mut answers = [h.next(), h.next()];
    answers.sort_by_key(|m| m["id"].as_u64());
    assert_eq!(answers[0]["result"], "rested", "{answers:?}");
    assert_eq!(answers[1]["id"], 2, "{answers:?}");
    assert_eq!(
        answers[1]["result"], false,
        "started during the nap: {answers:?}"
    );
    // Requests answered at once take no place: many pass while none waits.
    for id in 3..10 {
        h.call(id, "where");
        assert_eq!(h.next()["id"], id);
    }
    h.finish();
}

#[test]
fn with_a_place_free_a_waiting_request_does_not_hold_up_the_next() {
    let h = Harness::napping_with_places(2);
    let first = h.next();
    assert_eq!(first["id"], 2, "{first}");
    assert_eq!(first["result"], true, "served during the nap: {first}");
    assert_eq!(h.next()["id"], 1);
    h.finish();
}

#[test]
fn a_cancelled_waiting_request_gets_no_answer() {
    let mut h = Harness::start();
    h.call(1, "wait");
    h.cancel(1);
    // Releasing it after the cancellation must not produce an answer either; the ping-like
    // request after it shows everything before was handled.
    h.call(2, "release");
    let released = h.next();
    assert_eq!(released["id"], 2, "{released}");
    h.call(3, "where");
    let last = h.next();
    assert_eq!(last["id"], 3, "no answer to the cancelled request: {last}");
    h.finish_without_more();
}

#[test]
fn a_waiting_handler_sees_the_peer_cancel_it() {
    let mut h = Harness::start();
    h.call(1, "watch");
    h.cancel(1);
    // The engine handles the cancellation on its own thread: ask until the handler saw it.
    let mut seen = false;
    for id in 2..1000 {
        h.call(id, "saw");
        let answer = h.next();
        assert_eq!(answer["id"], id, "{answer}");
        if answer["result"] == json!(true) {
            seen = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(seen, "the handler's token fired");
    h.finish_without_more();
}

#[test]
fn a_panicking_handler_is_answered_with_an_internal_error() {
    let mut h = Harness::start();
    h.call(1, "panic");
    let answer = h.next();
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    h.call(2, "where");
    assert_eq!(h.next()["id"], 2);
    h.finish();
}

#[test]
fn answers_larger_than_the_pipe_are_written_whole_and_in_order() {
    let mut h = Harness::start();
    h.call(1, "big");
    h.call(2, "notify_then_answer");
    h.call(3, "big");
    let big = h.next();
    assert_eq!(big["id"], 1);
    assert_eq!(big["result"].as_str().map(str::len), Some(1 << 20));
    let mut rest: Vec<Value> = (0..3).map(|_| h.next()).collect();
    // The notification precedes its own request's answer; the third answer is whole.
    let notification = rest
        .iter()
        .position(|m| m["method"] == "notifications/message")
        .expect("the notification");
    let second = rest.iter().position(|m| m["id"] == 2).expect("answer 2");
    assert!(notification < second);
    let third = rest.remove(rest.iter().position(|m| m["id"] == 3).expect("answer 3"));
    assert_eq!(third["result"].as_str().map(str::len), Some(1 << 20));
    h.finish();
}

/// The engine's writes wait for room in a full pipe (on the blocking pool) and lose nothing.
#[test]
fn engine_answers_larger_than_the_pipe_wait_for_room() {
    let mut h = Harness::start();
    h.call(1, "big_later");
    h.call(2, "big_later");
    h.call(3, "where");
    let mut ids: Vec<u64> = (0..3)
        .map(|_| {
            let m = h.next();
            if m["id"] != 3 {
                assert_eq!(
                    m["result"].as_str().map(str::len),
                    Some(1 << 20),
                    "id {}",
                    m["id"]
                );
            }
            m["id"].as_u64().expect("an id")
        })
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, [1, 2, 3]);
    h.finish();
}

#[test]
fn bad_frames_are_answered_by_the_engine_and_serving_goes_on() {
    let mut h = Harness::start();
    h.send_raw("{not json\n");
    let answer = h.next();
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert_eq!(answer["id"], Value::Null);
    h.call(1, "where");
    assert_eq!(h.next()["id"], 1);
    h.finish();
}

#[test]
fn a_last_request_without_a_newline_is_served_at_the_end_of_input() {
    let mut h = Harness::start();
    h.send_raw(r#"{"jsonrpc":"2.0","id":9,"method":"where"}"#);
    drop(h.to_server.take());
    let answer = h.next();
    assert_eq!(answer["id"], 9, "{answer}");
    h.finish();
}

#[test]
fn the_first_read_is_served_before_the_runtime_runs_and_never_waits_for_it() {
    let Unstarted {
        runtime,
        driver,
        mut reader,
        mut to_server,
        from_server,
    } = unstarted(false);
    // One write: a request served at once, more notifications than the channel to the engine
    // holds, and requests behind them (forwarded, since the engine has not dispatched those
    // notifications yet).
    let mut first = String::new();
    first.push_str(&format!(
        "{}\n",
        json!({ "jsonrpc": "2.0", "id": 1, "method": "where" })
    ));
    for _ in 0..100 {
        let note = json!({ "jsonrpc": "2.0", "method": "notifications/unknown" });
        first.push_str(&format!("{note}\n"));
    }
    first.push_str(&format!(
        "{}\n",
        json!({ "jsonrpc": "2.0", "id": 2, "method": "where" })
    ));
    to_server.write_all(first.as_bytes()).expect("write");
    let handle = runtime.handle().clone();
    let (done, first_served) = std_mpsc::channel();
    let serving = std::thread::Builder::new()
        .name("first-read".into())
        .spawn(move || {
            reader.serve_first(&handle);
            let _ = done.send(());
            (reader, handle)
        })
        .expect("thread");
    first_served
        .recv_timeout(Duration::from_secs(10))
        .expect("the first read is served without the runtime running");
    let (reader, handle) = serving.join().expect("the thread");
    let mut lines = BufReader::new(from_server).lines();
    let mut next = move || -> Value {
        let line = lines.next().expect("a line").expect("read");
        serde_json::from_str(&line).expect("JSON")
    };
    let answer = next();
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["result"]["thread"], "first-read", "{answer}");
    // The rest is served once the runtime and the reader run.
    let engine = std::thread::spawn(move || runtime.block_on(driver));
    let reading = std::thread::Builder::new()
        .name(READER.into())
        .spawn(move || reader.run(&handle))
        .expect("thread");
    let answer = next();
    assert_eq!(answer["id"], 2, "{answer}");
    drop(to_server);
    assert!(reading.join().expect("reader").is_ok());
    assert!(engine.join().expect("engine").is_ok());
}

#[test]
fn frames_split_across_reads_are_served_when_complete() {
    let mut h = Harness::start();
    let request = json!({ "jsonrpc": "2.0", "id": 1, "method": "where" }).to_string();
    let (head, tail) = request.split_at(request.len() / 2);
    h.send_raw(head);
    // The reader has read the first half (or will with the second): nothing is answered yet.
    assert!(
        h.lines.recv_timeout(Duration::from_millis(100)).is_err(),
        "no answer to half a frame"
    );
    h.send_raw(&format!(
        "{tail}\n{}\n",
        json!({ "jsonrpc": "2.0", "id": 2, "method": "where" })
    ));
    assert_eq!(h.next()["id"], 1);
    assert_eq!(h.next()["id"], 2);
    h.finish();
}

#[test]
fn a_non_blocking_input_is_waited_for() {
    // The reader never switches its input's mode; one switched by someone else returns
    // `EAGAIN` when empty, and the reader waits for it (epoll).
    let mut h = Harness::start_with(true);
    std::thread::sleep(Duration::from_millis(50));
    h.call(1, "where");
    let answer = h.next();
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["result"]["thread"], READER, "{answer}");
    h.finish();
}
