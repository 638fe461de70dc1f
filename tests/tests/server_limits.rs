//! The example server at its concurrency limit (64 requests at once), over real stdio pipes
//! (`Server::run_stdio`, the reader thread) and over an in-memory connection (the engine alone):
//! a request beyond the limit waits for a permit, and everything that is not a new request is
//! still read meanwhile, so
//! - 65 tool calls that each ask the client for input all finish once the client answers;
//! - a `ping` is answered and a `notifications/cancelled` frees its request's permit;
//! - the end of input ends the server.
//!
//! Every wait is bounded (a hang fails the test instead of blocking it).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use mcp_jsonrpc::{Inbound, Message, Outbound, OutboundSink, memory_pair};
use serde_json::{Value, json};

/// The server's default `max_concurrent_requests`.
const LIMIT: i64 = 64;
/// The server's default `max_pending_client_requests`: the calls beyond it wait (holding their
/// permits) for an earlier ask to be answered before they ask.
const ASKS: usize = 32;
/// How long any one expected message may take (a hang guard, not a measure).
const WAIT: Duration = Duration::from_secs(20);

/// A client's view of a running server: raw JSON messages in and out.
trait Transport {
    fn send(&mut self, message: Value);
    /// The next message, or `None` after [`WAIT`] without one.
    fn next(&mut self) -> Option<Value>;
    /// The next message that is not a notification (a cancelled call's server cancels what it
    /// asked the client).
    fn recv(&mut self) -> Option<Value> {
        loop {
            let m = self.next()?;
            if m.get("id").is_some() {
                return Some(m);
            }
        }
    }
    /// Ends the server's input.
    fn close_input(&mut self);
    /// Whether the server stopped within [`WAIT`].
    fn stopped(&mut self) -> bool;
}

/// `everything-stdio` (`Server::run_stdio`) on pipes.
struct Pipes {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    /// What the server wrote to stderr, once it closed it.
    stderr: Receiver<String>,
}

impl Pipes {
    fn start() -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_everything-stdio"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the example server");
        let mut err = child.stderr.take().expect("stderr");
        let (tx, stderr) = channel();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut err, &mut text);
            eprint!("{text}");
            let _ = tx.send(text);
        });
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line).expect("a JSON line");
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Pipes {
            child,
            stdin,
            lines,
            stderr,
        }
    }
}

impl Transport for Pipes {
    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
    }

    fn next(&mut self) -> Option<Value> {
        self.lines.recv_timeout(WAIT).ok()
    }

    fn close_input(&mut self) {
        self.stdin = None;
    }

    fn stopped(&mut self) -> bool {
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                let stderr = self.stderr.recv_timeout(WAIT).unwrap_or_default();
                assert!(
                    !stderr.contains("panicked"),
                    "the server panicked: {stderr}"
                );
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for Pipes {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The example server on one end of an in-memory pair (its engine alone, no reader thread).
struct Memory {
    runtime: tokio::runtime::Runtime,
    out: Option<OutboundSink>,
    messages: Receiver<Value>,
    served: Receiver<()>,
}

impl Memory {
    fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let (client, server_side) = memory_pair(64);
        let (mut inbound, out) = client.into_parts();
        let server = mcp_example::server().expect("the example server builds");
        let (done, served) = channel();
        runtime.spawn(async move {
            let _ = server.serve(server_side).await;
            let _ = done.send(());
        });
        let (tx, messages) = channel();
        runtime.spawn(async move {
            while let Some(Ok(incoming)) = inbound.next().await {
                let Ok(Inbound::Single(message)) = incoming.frame else {
                    panic!("not a single message: {:?}", incoming.frame);
                };
                let value = serde_json::to_value(&message).expect("encodable");
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Memory {
            runtime,
            out: Some(out),
            messages,
            served,
        }
    }
}

impl Transport for Memory {
    fn send(&mut self, message: Value) {
        let bytes = serde_json::to_vec(&message).expect("encodable");
        let message = Message::from_slice(&bytes).expect("a message");
        let out = self.out.as_mut().expect("input open");
        self.runtime
            .block_on(out.send(Outbound::from(message)))
            .expect("sent");
    }

    fn next(&mut self) -> Option<Value> {
        self.messages.recv_timeout(WAIT).ok()
    }

    fn close_input(&mut self) {
        if let Some(mut out) = self.out.take() {
            let _ = self.runtime.block_on(out.close());
        }
    }

    fn stopped(&mut self) -> bool {
        self.served.recv_timeout(WAIT).is_ok()
    }
}

/// Opens a 2025-06-18 session whose client can answer elicitations.
fn initialize(t: &mut impl Transport) {
    t.send(json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "limits", "version": "1"}
        }
    }));
    let answer = t.recv().expect("the initialize answer");
    assert_eq!(answer["id"], 0, "{answer}");
    assert!(answer["result"]["protocolVersion"].is_string(), "{answer}");
    t.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
}

fn call_greet(t: &mut impl Transport, id: i64) {
    t.send(json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "greet", "arguments": {}}
    }));
}

fn is_elicitation(m: &Value) -> bool {
    m["method"] == "elicitation/create" && m.get("id").is_some()
}

/// Calls `greet` with ids `1..=n` and waits for the first [`ASKS`] elicitations, unanswered:
/// with `n >= LIMIT`, every permit is then taken.
fn fill(t: &mut impl Transport, n: i64) -> Vec<Value> {
    initialize(t);
    for id in 1..=n {
        call_greet(t, id);
    }
    let mut asks = Vec::new();
    while asks.len() < ASKS {
        let m = t
            .recv()
            .unwrap_or_else(|| panic!("only {} elicitations arrived", asks.len()));
        assert!(is_elicitation(&m), "unexpected message: {m}");
        asks.push(m);
    }
    asks
}

fn accept(t: &mut impl Transport, ask: &Value, name: &str) {
    t.send(json!({
        "jsonrpc": "2.0", "id": ask["id"],
        "result": {"action": "accept", "content": {"name": name}}
    }));
}

/// 65 calls that each wait for the client's answer: every one finishes.
fn calls_beyond_the_limit_that_ask_the_client_all_finish(t: &mut impl Transport) {
    let n = LIMIT + 1;
    initialize(t);
    for id in 1..=n {
        call_greet(t, id);
    }
    let mut answered = std::collections::BTreeSet::new();
    while answered.len() < n as usize {
        let m = t
            .recv()
            .unwrap_or_else(|| panic!("{} of {n} calls answered; the rest hang", answered.len()));
        if is_elicitation(&m) {
            accept(t, &m, "Ada");
            continue;
        }
        assert_eq!(m["result"]["content"][0]["text"], "Hello, Ada!", "{m}");
        answered.insert(m["id"].as_i64().expect("an id"));
    }
    assert_eq!(answered, (1..=n).collect());
}

/// With every permit held by a call waiting for the client: a ping is answered, a call beyond
/// the limit waits, and cancelling one call lets it start.
fn at_the_limit_pings_and_cancellations_are_read(t: &mut impl Transport) {
    let asks = fill(t, LIMIT);
    t.send(json!({"jsonrpc": "2.0", "id": "ping", "method": "ping"}));
    let pong = t.recv().expect("the ping is answered at the limit");
    assert_eq!(pong["id"], "ping", "{pong}");
    assert_eq!(pong["result"], json!({}), "{pong}");
    let echo = LIMIT + 1;
    t.send(json!({
        "jsonrpc": "2.0", "id": echo, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "after"}}
    }));
    t.send(json!({
        "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "enough"}
    }));
    // The cancelled call frees its permit: the call that waited for one runs. (The ask the
    // cancelled call's slot frees may come first.)
    let mut asks = asks;
    loop {
        let m = t.recv().expect("the call beyond the limit is answered");
        if is_elicitation(&m) {
            asks.push(m);
            continue;
        }
        assert_eq!(m["id"], echo, "{m}");
        assert_eq!(m["result"]["content"][0]["text"], "after", "{m}");
        break;
    }
    // Answer everything: the cancelled call (1) gets no answer, every other one does.
    for ask in &asks {
        accept(t, ask, "Bo");
    }
    let mut answered = std::collections::BTreeSet::new();
    while answered.len() < (LIMIT - 1) as usize {
        let m = t.recv().expect("the remaining calls are answered");
        if is_elicitation(&m) {
            accept(t, &m, "Bo");
            continue;
        }
        assert_ne!(m["id"], 1, "the cancelled call was answered: {m}");
        answered.insert(m["id"].as_i64().expect("an id"));
    }
    assert_eq!(answered, (2..=LIMIT).collect());
}

/// With every permit held by a call waiting for the client, the end of input ends the server.
fn at_the_limit_the_end_of_input_ends_the_server(t: &mut impl Transport) {
    fill(t, LIMIT + 1);
    t.close_input();
    assert!(t.stopped(), "the server went on after the end of its input");
}

#[test]
fn stdio_calls_beyond_the_limit_that_ask_the_client_all_finish() {
    calls_beyond_the_limit_that_ask_the_client_all_finish(&mut Pipes::start());
}

#[test]
fn memory_calls_beyond_the_limit_that_ask_the_client_all_finish() {
    calls_beyond_the_limit_that_ask_the_client_all_finish(&mut Memory::start());
}

#[test]
fn stdio_at_the_limit_pings_and_cancellations_are_read() {
    at_the_limit_pings_and_cancellations_are_read(&mut Pipes::start());
}

#[test]
fn memory_at_the_limit_pings_and_cancellations_are_read() {
    at_the_limit_pings_and_cancellations_are_read(&mut Memory::start());
}

#[test]
fn stdio_at_the_limit_the_end_of_input_ends_the_server() {
    at_the_limit_the_end_of_input_ends_the_server(&mut Pipes::start());
}

#[test]
fn memory_at_the_limit_the_end_of_input_ends_the_server() {
    at_the_limit_the_end_of_input_ends_the_server(&mut Memory::start());
}
