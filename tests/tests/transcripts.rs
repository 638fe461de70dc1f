//! Golden transcripts: `tests/transcripts/<revision>/<scenario>.jsonl` (format in
//! `tests/transcripts/README.md`) replayed against the example server (`mcp_example::server()`)
//!
//! 1. over an in-memory connection: every client line is decoded from its text by the same
//!    decoder the byte transports use, and every frame the server writes is encoded to bytes and
//!    read back, so the whole transcript, in order, is compared line by line;
//! 2. over Streamable HTTP on a loopback port: each client line is one POST (in an
//!    `Mcp-Session-Id` session for the revisions that have sessions, plain POSTs with the
//!    `Mcp-Method`/`Mcp-Name` headers for 2026-07-28), and each expected server line is read
//!    from the stream of the POST it belongs to (a response from the POST of its request, any
//!    other message from the latest open event stream);
//! 3. and every expected server line is decoded with the generated types of its revision
//!    (`mcp_types::v2024_11_05` .. `v2026_07_28`), checking that no field is one the revision
//!    does not define.
//!
//! `UPDATE_GOLDEN=1 cargo test -p mcp-tests --test all transcripts::` rewrites the server lines from
//! what the server wrote in memory; client lines and notes are kept byte for byte.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::BytesMut;
use mcp_jsonrpc::codec::CodecConfig;
use mcp_jsonrpc::{Connection, Inbound, Incoming, Outbound, TransportError};
use mcp_tests::http::{Answer, Served, post, post_text};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::mpsc;

/// The revisions, one folder of transcripts each.
const REVISIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// The stateless revision: no `initialize`, no session.
const STATELESS: &str = "2026-07-28";

/// Hang guard only: how long to wait for the server's next message before giving up. Nothing is
/// asserted about time; a healthy run answers in milliseconds.
const HANG_GUARD: Duration = Duration::from_secs(20);

/// What stands in the transcripts for a sealed `requestState` (random nonce, expiry): server
/// lines carry it instead of the sealed value, and client lines that send it back get the value
/// the server last sealed in its place.
const REQUEST_STATE: &str = "<requestState>";

/// Scenarios that cannot be replayed over Streamable HTTP, and why. Every other transcript is.
const HTTP_SKIPS: &[(&str, &str, &str)] = &[
    ("2024-11-05", "initialize", NO_SESSION_YET),
    ("2025-03-26", "initialize", NO_SESSION_YET),
    ("2025-06-18", "initialize", NO_SESSION_YET),
    ("2025-11-25", "initialize", NO_SESSION_YET),
];

/// Why the `initialize` scenarios of the session revisions are not replayed over HTTP.
const NO_SESSION_YET: &str = "it sends requests before `initialize`, and over Streamable HTTP \
    there is no session before `initialize`: the transport refuses a request without \
    `Mcp-Session-Id` (400) before the server sees it, so the ping and the refusal the transcript \
    records happen only on a connection";

// ---------------------------------------------------------------------------------------------
// Transcript files
// ---------------------------------------------------------------------------------------------

/// One line of a transcript.
#[derive(Debug, Clone, PartialEq)]
enum Line {
    /// `{"c": message}`: the client sends this message.
    Client(Value),
    /// `{"c_raw": "text"}`: the client sends this text as one frame, verbatim.
    ClientRaw(String),
    /// `{"s": message}`: the server writes this message.
    Server(Value),
    /// `{"note": "..."}`: for the reader; ignored.
    Note,
}

/// A transcript file: its lines with their text and 1-based line numbers.
#[derive(Debug, Clone)]
struct Transcript {
    path: PathBuf,
    revision: String,
    lines: Vec<(usize, String, Line)>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("transcripts")
}

/// The path as a reader finds it: relative to the workspace.
fn shown(path: &Path) -> String {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate is in the workspace");
    path.strip_prefix(workspace)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn parse_line(text: &str) -> Result<Line, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(map) = value else {
        return Err("not a JSON object".to_owned());
    };
    let mut entries = map.into_iter();
    let (Some((key, value)), None) = (entries.next(), entries.next()) else {
        return Err("a line has exactly one key: c, c_raw, s or note".to_owned());
    };
    match (key.as_str(), value) {
        ("c", v) => Ok(Line::Client(v)),
        ("c_raw", Value::String(s)) => Ok(Line::ClientRaw(s)),
        ("s", v) => Ok(Line::Server(v)),
        ("note", _) => Ok(Line::Note),
        (other, _) => Err(format!("unknown key {other:?} (c, c_raw: string, s, note)")),
    }
}

fn load(path: &Path) -> Transcript {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", shown(path)));
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed = parse_line(line).unwrap_or_else(|e| panic!("{}:{}: {e}", shown(path), i + 1));
        lines.push((i + 1, line.to_owned(), parsed));
    }
    let revision = path
        .parent()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .expect("a transcript sits in its revision's folder")
        .to_owned();
    assert!(
        REVISIONS.contains(&revision.as_str()),
        "{}: unknown revision folder {revision}",
        shown(path)
    );
    Transcript {
        path: path.to_owned(),
        revision,
        lines,
    }
}

/// Every transcript, by revision then name.
fn transcripts() -> Vec<Transcript> {
    let mut all = Vec::new();
    for revision in REVISIONS {
        let dir = root().join(revision);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("read {}: {e}", shown(&dir)))
            .map(|e| e.expect("a directory entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no transcripts in {}", shown(&dir));
        all.extend(files.iter().map(|p| load(p)));
    }
    all
}

/// The text of a transcript whose server lines are `actual`'s; every other line keeps its text.
fn render(actual: &[Line], original: &Transcript) -> String {
    let mut kept = original
        .lines
        .iter()
        .filter(|(_, _, l)| !matches!(l, Line::Server(_)))
        .map(|(_, text, _)| text.as_str());
    let mut out = String::new();
    for line in actual {
        match line {
            Line::Server(v) => {
                let s = serde_json::to_string(&serde_json::json!({ "s": v })).expect("JSON");
                out.push_str(&s);
            }
            _ => out.push_str(kept.next().expect("the same client lines")),
        }
        out.push('\n');
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------

fn is_request(m: &Value) -> bool {
    m.get("method").is_some() && m.get("id").is_some()
}

fn is_response(m: &Value) -> bool {
    m.get("method").is_none() && m.get("id").is_some()
}

/// Replaces every `requestState` the server sealed with [`REQUEST_STATE`], remembering the value.
fn normalise(m: &mut Value, state: &mut Option<String>) {
    match m {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if key == "requestState"
                    && let Value::String(s) = value
                {
                    *state = Some(std::mem::replace(s, REQUEST_STATE.to_owned()));
                } else {
                    normalise(value, state);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| normalise(v, state)),
        _ => {}
    }
}

/// Puts the last sealed `requestState` where a client line says [`REQUEST_STATE`].
fn substitute(m: &Value, state: &Option<String>) -> Value {
    match m {
        Value::String(s) if s == REQUEST_STATE => match state {
            Some(real) => Value::String(real.clone()),
            None => m.clone(),
        },
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute(v, state)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, state)).collect()),
        _ => m.clone(),
    }
}

/// The differences between two values, one `path: expected != actual` a line.
fn differences(expected: &Value, actual: &Value, path: &str, out: &mut Vec<String>) {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, ev) in e {
                let p = format!("{path}/{k}");
                match a.get(k) {
                    Some(av) => differences(ev, av, &p, out),
                    None => out.push(format!("{p}: missing (expected {ev})")),
                }
            }
            for (k, av) in a {
                if !e.contains_key(k) {
                    out.push(format!("{path}/{k}: unexpected {av}"));
                }
            }
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                differences(ev, av, &format!("{path}/{i}"), out);
            }
        }
        _ if expected == actual => {}
        _ => out.push(format!(
            "{}: expected {expected}, got {actual}",
            path_or_root(path)
        )),
    }
}

fn path_or_root(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

/// A mismatch report naming the file and line, both values and where they differ.
fn mismatch(
    t: &Transcript,
    line: Option<usize>,
    how: &str,
    expected: &Value,
    actual: &Value,
) -> String {
    let mut diff = Vec::new();
    differences(expected, actual, "", &mut diff);
    let at = line.map_or_else(|| "end".to_owned(), |n| n.to_string());
    let mut s = format!(
        "{}:{at}: {how}\n  expected: {expected}\n  actual:   {actual}\n  differences:",
        shown(&t.path)
    );
    for d in diff {
        let _ = write!(s, "\n    {d}");
    }
    s
}

// ---------------------------------------------------------------------------------------------
// In-memory replay
// ---------------------------------------------------------------------------------------------

/// The client's end of an in-memory connection to a served server.
struct Memory {
    to_server: Option<mpsc::Sender<Result<Incoming, TransportError>>>,
    from_server: mpsc::Receiver<Outbound>,
    max_batch: usize,
}

impl Memory {
    /// Serves a fresh example server on an in-memory connection: the `memory_pair` shape, two
    /// bounded channels, with the client's side decoding text so malformed frames can be sent.
    fn start() -> Memory {
        let (to_server, inbound) = mpsc::channel::<Result<Incoming, TransportError>>(64);
        let (outbound, from_server) = mpsc::channel::<Outbound>(64);
        let reader = futures_util::stream::unfold(inbound, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        });
        let writer = futures_util::sink::unfold(outbound, |tx, out: Outbound| async move {
            tx.send(out)
                .await
                .map_err(|_| TransportError::Closed("the transcript reader is gone".into()))?;
            Ok::<_, TransportError>(tx)
        });
        let connection = Connection::new(reader, writer);
        let server = mcp_example::server().expect("the example server builds");
        tokio::spawn(async move {
            let _ = server.serve(connection).await;
        });
        Memory {
            to_server: Some(to_server),
            from_server,
            max_batch: CodecConfig::default().batch_len_limit(),
        }
    }

    /// Sends one frame's text, decoded as a byte transport decodes it.
    async fn send(&self, text: &str) {
        let frame = Inbound::from_slice(text.as_bytes(), self.max_batch);
        self.to_server
            .as_ref()
            .expect("still open")
            .send(Ok(Incoming::from(frame)))
            .await
            .expect("the server is reading");
    }

    /// The next frame the server wrote, as JSON read back from its bytes; `None` once the server
    /// has closed.
    async fn recv(&mut self) -> Result<Option<Value>, String> {
        let out = tokio::time::timeout(HANG_GUARD, self.from_server.recv())
            .await
            .map_err(|_| format!("the server wrote nothing for {HANG_GUARD:?}"))?;
        Ok(out.map(|out| {
            let mut bytes = BytesMut::new();
            out.frame.encode_into(&mut bytes).expect("a frame encodes");
            serde_json::from_slice(&bytes).expect("the server writes JSON")
        }))
    }

    fn close(&mut self) {
        self.to_server = None;
    }
}

/// Ids of requests a later `notifications/cancelled` line cancels: no response is awaited.
fn cancelled_ids(t: &Transcript) -> HashSet<String> {
    t.lines
        .iter()
        .filter_map(|(_, _, l)| match l {
            Line::Client(m) if m["method"] == "notifications/cancelled" => {
                Some(m["params"]["requestId"].to_string())
            }
            _ => None,
        })
        .collect()
}

/// Plays the client lines of `t` against a fresh server in memory and returns the transcript
/// as it happened: after each client line, the server's messages up to the point where it has
/// answered every request sent (bar cancelled ones) or waits for the client to answer a request
/// of its own; after the last, everything until the server closes.
async fn run_memory(t: &Transcript) -> Result<Vec<Line>, String> {
    let cancelled = cancelled_ids(t);
    let mut memory = Memory::start();
    let mut actual = Vec::new();
    let mut awaited: Vec<Value> = Vec::new();
    let mut asked: Vec<Value> = Vec::new();
    let mut state: Option<String> = None;
    for (number, _, line) in &t.lines {
        match line {
            Line::Server(_) => continue,
            Line::Note => {
                actual.push(Line::Note);
                continue;
            }
            Line::Client(m) => {
                let sent = substitute(m, &state);
                if is_request(&sent) {
                    if !cancelled.contains(&sent["id"].to_string()) {
                        awaited.push(sent["id"].clone());
                    }
                } else if let Some(id) = is_response(&sent).then(|| &sent["id"]) {
                    asked.retain(|a| a != id);
                }
                memory.send(&sent.to_string()).await;
                actual.push(line.clone());
            }
            Line::ClientRaw(text) => {
                // Answered with the id when one can be read, else with `id: null`.
                let id = serde_json::from_str::<Value>(text)
                    .ok()
                    .and_then(|v| v.get("id").cloned())
                    .unwrap_or(Value::Null);
                awaited.push(id);
                memory.send(text).await;
                actual.push(line.clone());
            }
        }
        while !awaited.is_empty() && asked.is_empty() {
            let waiting = awaited.iter().map(Value::to_string).collect::<Vec<_>>();
            let mut m = memory
                .recv()
                .await
                .map_err(|e| {
                    format!(
                        "{}:{number}: {e}, awaiting responses to {}",
                        shown(&t.path),
                        waiting.join(", ")
                    )
                })?
                .ok_or_else(|| format!("{}:{number}: the server closed", shown(&t.path)))?;
            if is_response(&m) {
                let id = &m["id"];
                if let Some(i) = awaited.iter().position(|a| a == id) {
                    awaited.remove(i);
                }
            } else if is_request(&m) {
                asked.push(m["id"].clone());
            }
            normalise(&mut m, &mut state);
            actual.push(Line::Server(m));
        }
    }
    // What the server still writes before it closes belongs to the transcript too.
    memory.close();
    while let Some(mut m) = memory
        .recv()
        .await
        .map_err(|e| format!("{}: {e} after the last line", shown(&t.path)))?
    {
        normalise(&mut m, &mut state);
        actual.push(Line::Server(m));
    }
    Ok(actual)
}

/// Compares what happened with the file, line by line.
fn compare(t: &Transcript, actual: &[Line], how: &str) -> Result<(), String> {
    let expected: Vec<(usize, &Line)> = t.lines.iter().map(|(n, _, l)| (*n, l)).collect();
    for (i, got) in actual.iter().enumerate() {
        let Some((number, want)) = expected.get(i) else {
            let value = match got {
                Line::Server(v) => v.clone(),
                other => Value::String(format!("{other:?}")),
            };
            return Err(mismatch(
                t,
                None,
                &format!("{how}: an unexpected extra server line"),
                &Value::Null,
                &value,
            ));
        };
        if want == &got {
            continue;
        }
        return Err(match (want, got) {
            (Line::Server(e), Line::Server(a)) => mismatch(
                t,
                Some(*number),
                &format!("{how}: the server wrote otherwise"),
                e,
                a,
            ),
            (Line::Server(e), other) => mismatch(
                t,
                Some(*number),
                &format!(
                    "{how}: expected this server line, but the server had written everything up to the next client line"
                ),
                e,
                &Value::String(format!("{other:?}")),
            ),
            (want, Line::Server(a)) => mismatch(
                t,
                Some(*number),
                &format!(
                    "{how}: the server wrote a line the transcript does not have before {want:?}"
                ),
                &Value::Null,
                a,
            ),
            (want, got) => format!(
                "{}:{number}: {how}: expected {want:?}, got {got:?}",
                shown(&t.path)
            ),
        });
    }
    if let Some((number, want)) = expected.get(actual.len()) {
        return Err(format!(
            "{}:{number}: {how}: the server closed before this line: {want:?}",
            shown(&t.path)
        ));
    }
    Ok(())
}

fn updating() -> bool {
    std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| !v.is_empty() && v != "0")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transcripts_replay_in_memory() {
    let mut failures = Vec::new();
    for t in transcripts() {
        let actual = match run_memory(&t).await {
            Ok(actual) => actual,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        if updating() {
            std::fs::write(&t.path, render(&actual, &t))
                .unwrap_or_else(|e| panic!("write {}: {e}", shown(&t.path)));
        } else if let Err(e) = compare(&t, &actual, "in memory") {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---------------------------------------------------------------------------------------------
// Streamable HTTP replay
// ---------------------------------------------------------------------------------------------

/// One POST and the messages of its answer.
struct Exchange {
    /// The id of the request it carried, `Null` for a frame without a readable id.
    request: Option<Value>,
    answer: Answer,
    /// The response of its request has been read.
    answered: bool,
}

/// The POST of a request a later line cancels. The transport sends the head of an answer with
/// its first message, and a cancelled request has none, so its POST is sent from a task of its
/// own that is never awaited (and aborted at the end). Whether the cancellation reaches the
/// server before or after the request itself, the transcript holds: the request is never
/// answered, and the server goes on answering others.
type Unanswered = tokio::task::JoinHandle<Answer>;

/// The `Mcp-Name` header of a stateless request, for the methods that have one.
fn mcp_name(m: &Value) -> Option<String> {
    let field = match m["method"].as_str()? {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return None,
    };
    m["params"][field].as_str().map(str::to_owned)
}

async fn run_http(t: &Transcript) -> Result<(), String> {
    let server = mcp_example::server().expect("the example server builds");
    let served = Served::server(&server).await;
    let addr = served.addr();
    let stateless = t.revision == STATELESS;
    // The version header exists from 2025-06-18 on.
    let version_header = t.revision.as_str() >= "2025-06-18";
    let mut session: Option<String> = None;
    let mut exchanges: Vec<Exchange> = Vec::new();
    let mut unanswered: Vec<Unanswered> = Vec::new();
    let cancelled = cancelled_ids(t);
    let mut state: Option<String> = None;
    for (number, _, line) in &t.lines {
        let at = || format!("{}:{number}: over HTTP", shown(&t.path));
        let mut headers: Vec<(&str, String)> = Vec::new();
        if let Some(s) = &session {
            headers.push(("mcp-session-id", s.clone()));
        }
        if version_header && (stateless || session.is_some()) {
            headers.push(("mcp-protocol-version", t.revision.clone()));
        }
        match line {
            Line::Note => {}
            Line::Client(m) => {
                let sent = substitute(m, &state);
                if stateless && let Some(method) = sent["method"].as_str() {
                    headers.push(("mcp-method", method.to_owned()));
                    if let Some(name) = mcp_name(&sent) {
                        headers.push(("mcp-name", name));
                    }
                }
                if is_request(&sent) && cancelled.contains(&sent["id"].to_string()) {
                    let headers: Vec<(&'static str, String)> = headers.clone();
                    unanswered.push(tokio::spawn(
                        async move { post(addr, &sent, &headers).await },
                    ));
                    continue;
                }
                let answer = post(addr, &sent, &headers).await;
                if sent["method"] == "initialize" {
                    session = answer.session.clone();
                    if session.is_none() {
                        return Err(format!("{}: initialize opened no session", at()));
                    }
                }
                exchanges.push(Exchange {
                    request: is_request(&sent).then(|| sent["id"].clone()),
                    answer,
                    answered: false,
                });
            }
            Line::ClientRaw(text) => {
                let id = serde_json::from_str::<Value>(text)
                    .ok()
                    .and_then(|v| v.get("id").cloned())
                    .unwrap_or(Value::Null);
                if stateless
                    && let Some(method) = serde_json::from_str::<Value>(text)
                        .ok()
                        .and_then(|v| v["method"].as_str().map(str::to_owned))
                {
                    headers.push(("mcp-method", method));
                }
                let answer = post_text(addr, text, &headers).await;
                exchanges.push(Exchange {
                    request: Some(id),
                    answer,
                    answered: false,
                });
            }
            Line::Server(expected) => {
                // A response comes on the POST of its request; anything else on the latest
                // event stream still open.
                let index = if is_response(expected) {
                    exchanges
                        .iter()
                        .rposition(|x| !x.answered && x.request.as_ref() == Some(&expected["id"]))
                } else {
                    exchanges
                        .iter()
                        .rposition(|x| !x.answered && x.request.is_some() && x.answer.is_sse())
                };
                let Some(index) = index else {
                    return Err(format!("{}: no open POST to read {expected} from", at()));
                };
                let exchange = &mut exchanges[index];
                let mut got = tokio::time::timeout(HANG_GUARD, exchange.answer.next_message())
                    .await
                    .map_err(|_| format!("{}: nothing arrived for {HANG_GUARD:?}", at()))?
                    .ok_or_else(|| {
                        format!(
                            "{}: the answer (HTTP {}) ended before {expected}",
                            at(),
                            exchange.answer.status
                        )
                    })?;
                normalise(&mut got, &mut state);
                if is_response(&got) {
                    exchange.answered = true;
                }
                if &got != expected {
                    return Err(mismatch(
                        t,
                        Some(*number),
                        "over HTTP: the server wrote otherwise",
                        expected,
                        &got,
                    ));
                }
            }
        }
    }
    // Nothing more on any stream whose request was answered, nor on the POSTs of notifications
    // and responses (202, no body).
    for exchange in &mut exchanges {
        let extra = tokio::time::timeout(HANG_GUARD, exchange.answer.next_message())
            .await
            .map_err(|_| format!("{}: an answer did not end", shown(&t.path)))?;
        if let Some(extra) = extra {
            return Err(mismatch(
                t,
                None,
                "over HTTP: an unexpected extra server message",
                &Value::Null,
                &extra,
            ));
        }
    }
    drop(exchanges);
    if unanswered.is_empty() {
        served
            .stop()
            .await
            .map_err(|e| format!("{}: the HTTP server failed: {e}", shown(&t.path)))?;
    } else {
        // Stopping waits for open exchanges; the cancelled ones are simply dropped.
        unanswered.iter().for_each(|task| task.abort());
        drop(served);
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transcripts_replay_over_streamable_http() {
    let mut failures = Vec::new();
    for t in transcripts() {
        let name = t
            .path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        if let Some((_, _, why)) = HTTP_SKIPS
            .iter()
            .find(|(rev, scenario, _)| *rev == t.revision && *scenario == name)
        {
            eprintln!("{}: not replayed over HTTP: {why}", shown(&t.path));
            continue;
        }
        // Each on its own task, so a panic in the HTTP helpers names the transcript.
        let path = shown(&t.path);
        match tokio::spawn(async move { run_http(&t).await }).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failures.push(e),
            Err(e) => failures.push(format!("{path}: over HTTP: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---------------------------------------------------------------------------------------------
// Decoding with each revision's types
// ---------------------------------------------------------------------------------------------

/// The fields of `original` that did not survive a decode and re-encode: fields the decoding
/// type does not define (the generated types keep what their schema leaves open, `_meta` and
/// additional properties, and drop the rest). A `null` dropped for an absent optional field is
/// the same value.
fn dropped_fields(original: &Value, reencoded: &Value, path: &str, out: &mut Vec<String>) {
    match (original, reencoded) {
        (Value::Object(o), Value::Object(r)) => {
            for (k, v) in o {
                let p = format!("{path}/{k}");
                if JSON_SCHEMA_DOCUMENTS.contains(&k.as_str()) {
                    // A JSON Schema document: every revision allows any keyword in it (its
                    // schema does not close the object), though the generated types of the
                    // older ones name only `type`, `properties` and `required`.
                    continue;
                }
                match r.get(k) {
                    Some(rv) => dropped_fields(v, rv, &p, out),
                    None if v.is_null() => {}
                    None => out.push(p),
                }
            }
        }
        (Value::Array(o), Value::Array(r)) => {
            for (i, (ov, rv)) in o.iter().zip(r).enumerate() {
                dropped_fields(ov, rv, &format!("{path}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Fields whose value is a whole JSON Schema document: a tool's input and output schemas.
const JSON_SCHEMA_DOCUMENTS: [&str; 2] = ["inputSchema", "outputSchema"];

/// Decodes `value` as `T` and checks that every field of it is one `T` defines.
fn strict<T: DeserializeOwned + Serialize>(value: &Value) -> Result<(), String> {
    let decoded: T = serde_json::from_value(value.clone())
        .map_err(|e| format!("does not decode as {}: {e}", std::any::type_name::<T>()))?;
    let reencoded = serde_json::to_value(&decoded).expect("a decoded value encodes");
    let mut dropped = Vec::new();
    dropped_fields(value, &reencoded, "", &mut dropped);
    if dropped.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "fields {} are not defined by {}",
            dropped.join(", "),
            std::any::type_name::<T>()
        ))
    }
}

/// The message as the revision's `ServerNotification` / `ServerRequest` union has it: with the
/// JSON-RPC envelope (`jsonrpc`, `id`) from 2025-11-25 on, as `{method, params}` before.
fn unwrapped(message: &Value, enveloped: bool) -> Value {
    let mut m = message.clone();
    if !enveloped && let Value::Object(map) = &mut m {
        map.remove("jsonrpc");
        map.remove("id");
    }
    m
}

/// What a server line is, for choosing its type.
enum Kind<'a> {
    /// A result of a request of this method.
    Result(&'a str),
    /// An error response.
    Error,
    Notification,
    Request,
}

/// `fn $name(kind, message)`: the check of one revision's module, each result by the method of
/// its request.
macro_rules! oracle {
    ($name:ident, $rev:ident, error: $error:ident, id_may_be_null: $null_ok:expr,
     enveloped: $enveloped:expr, requests: $requests:expr, results: { $($method:literal => $ty:ident),* $(,)? }) => {
        fn $name(kind: Kind<'_>, message: &Value) -> Result<(), String> {
            use mcp_types::$rev as rev;
            match kind {
                Kind::Result(method) => {
                    strict::<rev::JSONRPCMessage>(message)?;
                    let result = &message["result"];
                    match method {
                        $($method => strict::<rev::$ty>(result),)*
                        other => Err(format!("{other} has no result in {}", stringify!($rev))),
                    }
                }
                Kind::Error => {
                    strict::<rev::RpcError>(&message["error"])?;
                    if message["id"].is_null() && !$null_ok {
                        // Known: this revision's schema types the id of an error as a
                        // RequestId, so the `id: null` JSON-RPC 2.0 prescribes for an error
                        // without a readable id cannot be expressed; only the error is checked.
                        return Ok(());
                    }
                    strict::<rev::$error>(message)
                }
                Kind::Notification => {
                    strict::<rev::JSONRPCMessage>(message)?;
                    strict::<rev::ServerNotification>(&unwrapped(message, $enveloped))
                }
                Kind::Request => {
                    strict::<rev::JSONRPCMessage>(message)?;
                    $requests(&unwrapped(message, $enveloped))
                }
            }
        }
    };
}

/// `fn $name(kind, message)` for a revision with sessions (2024-11-05 to 2025-11-25): the same
/// methods, their results named alike, and the requests a server sends its `ServerRequest`s.
macro_rules! session_oracle {
    ($name:ident, $rev:ident, error: $error:ident, id_may_be_null: $null_ok:expr,
     enveloped: $enveloped:expr) => {
        oracle!($name, $rev, error: $error, id_may_be_null: $null_ok, enveloped: $enveloped,
            requests: strict::<mcp_types::$rev::ServerRequest>, results: {
            "initialize" => InitializeResult,
            "ping" => EmptyResult,
            "logging/setLevel" => EmptyResult,
            "resources/subscribe" => EmptyResult,
            "tools/list" => ListToolsResult,
            "tools/call" => CallToolResult,
            "resources/list" => ListResourcesResult,
            "resources/templates/list" => ListResourceTemplatesResult,
            "resources/read" => ReadResourceResult,
            "prompts/list" => ListPromptsResult,
            "prompts/get" => GetPromptResult,
            "completion/complete" => CompleteResult,
        });
    };
}

session_oracle!(check_2024_11_05, v2024_11_05, error: JSONRPCError, id_may_be_null: false,
    enveloped: false);
session_oracle!(check_2025_03_26, v2025_03_26, error: JSONRPCError, id_may_be_null: false,
    enveloped: false);
session_oracle!(check_2025_06_18, v2025_06_18, error: JSONRPCError, id_may_be_null: false,
    enveloped: false);
session_oracle!(check_2025_11_25, v2025_11_25, error: JSONRPCErrorResponse, id_may_be_null: true,
    enveloped: true);

fn requests_2026_07_28(m: &Value) -> Result<(), String> {
    Err(format!("2026-07-28 servers send no requests: {m}"))
}

oracle!(check_2026_07_28, v2026_07_28, error: JSONRPCErrorResponse, id_may_be_null: true, enveloped: true,
    requests: requests_2026_07_28, results: {
    "server/discover" => DiscoverResult,
    "tools/list" => ListToolsResult,
    "tools/call" => CallToolResultResponseResult,
    "resources/list" => ListResourcesResult,
    "resources/templates/list" => ListResourceTemplatesResult,
    "resources/read" => ReadResourceResultResponseResult,
    "prompts/list" => ListPromptsResult,
    "prompts/get" => GetPromptResultResponseResult,
    "completion/complete" => CompleteResult,
});

#[test]
fn server_lines_decode_with_their_revisions_types() {
    let mut failures = Vec::new();
    for t in transcripts() {
        let check = match t.revision.as_str() {
            "2024-11-05" => check_2024_11_05,
            "2025-03-26" => check_2025_03_26,
            "2025-06-18" => check_2025_06_18,
            "2025-11-25" => check_2025_11_25,
            _ => check_2026_07_28,
        };
        // The method of each request the client sent, by id.
        let mut methods: Vec<(Value, String)> = Vec::new();
        for (number, _, line) in &t.lines {
            match line {
                Line::Client(m) if is_request(m) => {
                    methods.push((
                        m["id"].clone(),
                        m["method"].as_str().unwrap_or_default().to_owned(),
                    ));
                }
                Line::Server(m) => {
                    let kind = if m.get("error").is_some() {
                        Kind::Error
                    } else if is_response(m) {
                        match methods.iter().rev().find(|(id, _)| id == &m["id"]) {
                            Some((_, method)) => Kind::Result(method),
                            None => {
                                failures.push(format!(
                                    "{}:{number}: a result for no request",
                                    shown(&t.path)
                                ));
                                continue;
                            }
                        }
                    } else if is_request(m) {
                        Kind::Request
                    } else {
                        Kind::Notification
                    };
                    if let Err(e) = check(kind, m) {
                        failures.push(format!("{}:{number}: {e}\n  {m}", shown(&t.path)));
                    }
                }
                _ => {}
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---------------------------------------------------------------------------------------------
// The harness fails when it should
// ---------------------------------------------------------------------------------------------

/// A changed expected line is reported with its file, its line and both values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_server_line_is_reported_as_a_mismatch() {
    let mut t = load(&root().join("2025-06-18").join("tools.jsonl"));
    let (number, _, line) = t
        .lines
        .iter_mut()
        .rev()
        .find(|(_, _, l)| matches!(l, Line::Server(m) if m.get("result").is_some()))
        .expect("a result line");
    let Line::Server(m) = line else {
        unreachable!()
    };
    m["result"]["tampered"] = Value::Bool(true);
    let number = *number;
    let actual = run_memory(&t).await.expect("the replay runs");
    let report = compare(&t, &actual, "in memory").expect_err("a mismatch");
    assert!(
        report.starts_with(&format!(
            "tests/transcripts/2025-06-18/tools.jsonl:{number}: "
        )),
        "{report}"
    );
    assert!(report.contains("expected: "), "{report}");
    assert!(report.contains("actual: "), "{report}");
    assert!(
        report.contains("/result/tampered: missing (expected true)"),
        "{report}"
    );

    // A line too many and a line too few are reported as well.
    let mut longer = t.clone();
    longer.lines.retain(|(_, _, l)| !matches!(l, Line::Server(m) if m.get("result").is_some() && m["result"].get("tampered").is_some()));
    let report = compare(&longer, &actual, "in memory").expect_err("a line the file lacks");
    assert!(report.contains("tools.jsonl:"), "{report}");
}
