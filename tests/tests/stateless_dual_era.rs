//! One server value serves a 2025-11-25 client (an `initialize`d session, where asking for
//! input is a real request to the client) and a 2026-07-28 client (stateless, where the same
//! handler's ask becomes `input_required`) at the same time: over HTTP, and interleaved on one
//! stdio connection. The handlers are the same code in both eras.

use crate::stateless_support;

use http::StatusCode;
use serde_json::{Value, json};
use stateless_support::{Http, Stdio, all_capabilities, server, with_meta};

fn init(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}, "sampling": {}, "roots": {}},
        "clientInfo": {"name": "legacy-client", "version": "1"}}})
}

/// The 2025-11-25 client over HTTP: initialize, then a `tools/call` of `tool` whose elicitation
/// request arrives on the call's SSE stream and is answered with a POST; returns the result.
async fn legacy_http_call(http: &Http, tool: &str, args: Value, content: Value) -> Value {
    let v = |s: &str| ("mcp-protocol-version", s.to_owned());
    let mut answer = http.post_raw(&init(1), &[v("2025-11-25")]).await;
    assert_eq!(answer.status, StatusCode::OK);
    let session = answer.session.clone().expect("a session");
    let init = answer.next_message().await.unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    let headers = [v("2025-11-25"), ("mcp-session-id", session.clone())];
    let ack = http
        .post_raw(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            &headers,
        )
        .await;
    assert_eq!(ack.status, StatusCode::ACCEPTED);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": tool, "arguments": args}});
    let mut stream = http.post_raw(&call, &headers).await;
    loop {
        let m = stream
            .next_message()
            .await
            .expect("the call's stream goes on");
        if m.get("method") == Some(&json!("elicitation/create")) {
            assert!(m.get("id").is_some(), "a real request in the 2025 era");
            let reply = json!({"jsonrpc": "2.0", "id": m["id"],
                               "result": {"action": "accept", "content": content}});
            let posted = http.post_raw(&reply, &headers).await;
            assert_eq!(posted.status, StatusCode::ACCEPTED);
            continue;
        }
        if m["id"] == 2 {
            assert!(
                m["result"].get("resultType").is_none(),
                "no 2026 fields in 2025"
            );
            return m["result"].clone();
        }
    }
}

/// The 2026-07-28 client over HTTP: the same tool, answered through `input_required`.
async fn modern_http_call(http: &mut Http, tool: &str, args: Value, content: Value) -> Value {
    let mut params = with_meta(json!({"name": tool, "arguments": args}), all_capabilities());
    loop {
        let o = http.request("tools/call", params.clone()).await;
        let r = o.result().clone();
        if r["resultType"] != "input_required" {
            return r;
        }
        let key = r["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        params["inputResponses"] = json!({ key: {"action": "accept", "content": content} });
        params["requestState"] = r["requestState"].clone();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_server_serves_both_eras_over_http_at_once() {
    let server = server();
    let legacy_http = Http::start(server.clone()).await;
    let mut modern_http = Http::connect(legacy_http.addr);
    let (legacy, modern) = tokio::join!(
        legacy_http_call(&legacy_http, "greet", json!({}), json!({"name": "Bob"})),
        modern_http_call(
            &mut modern_http,
            "greet",
            json!({}),
            json!({"name": "Alice"})
        ),
    );
    assert_eq!(legacy["content"][0]["text"], "Hello, Bob!");
    assert_eq!(modern["content"][0]["text"], "Hello, Alice!");
    assert_eq!(modern["resultType"], "complete");
    // The explicit way of asking works in both eras too: a session gets a real request and the
    // handler runs again with the answer.
    let (legacy, modern) = tokio::join!(
        legacy_http_call(
            &legacy_http,
            "deploy",
            json!({"text": "blue"}),
            json!({"ok": true})
        ),
        modern_http_call(
            &mut modern_http,
            "deploy",
            json!({"text": "green"}),
            json!({"ok": true})
        ),
    );
    assert_eq!(
        legacy["content"][0]["text"],
        r#"blue accept (state {"target":"blue"})"#
    );
    assert_eq!(
        modern["content"][0]["text"],
        r#"green accept (state {"target":"green"})"#
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_eras_interleave_on_one_stdio_connection() {
    let mut c = Stdio::start(server());
    // A stateless request before any initialize is served.
    let o = c
        .request(
            "tools/call",
            with_meta(
                json!({"name": "echo", "arguments": {"text": "early"}}),
                json!({}),
            ),
        )
        .await;
    assert_eq!(o.text(), "early");
    assert_eq!(o.result()["resultType"], "complete");
    // Session traffic needs initialize.
    let o = c.request("tools/list", json!({})).await;
    assert_eq!(o.error_code(), -32002, "not initialized");
    c.send(&init(100)).await;
    let r = c.response_to(&json!(100)).await;
    assert_eq!(r.result()["protocolVersion"], "2025-11-25");
    c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;

    // A session call whose elicitation is a real request, and while it waits, a stateless call
    // of the same tool on the same connection.
    c.send(&json!({"jsonrpc": "2.0", "id": 200, "method": "tools/call",
                   "params": {"name": "greet", "arguments": {}}}))
        .await;
    let ask = loop {
        let m = c.recv().await;
        if m["method"] == "elicitation/create" {
            break m;
        }
    };
    let modern = c
        .request(
            "tools/call",
            with_meta(
                json!({"name": "greet", "arguments": {}}),
                all_capabilities(),
            ),
        )
        .await;
    let r = modern.result();
    assert_eq!(r["resultType"], "input_required");
    let state = r["requestState"].clone();
    c.send(&json!({"jsonrpc": "2.0", "id": ask["id"],
                   "result": {"action": "accept", "content": {"name": "Bob"}}}))
        .await;
    let legacy = c.response_to(&json!(200)).await;
    assert_eq!(legacy.text(), "Hello, Bob!");
    assert!(legacy.result().get("resultType").is_none());
    let modern = c
        .request(
            "tools/call",
            with_meta(
                json!({"name": "greet", "arguments": {},
                       "inputResponses": {"name": {"action": "accept", "content": {"name": "Alice"}}},
                       "requestState": state}),
                all_capabilities(),
            ),
        )
        .await;
    assert_eq!(modern.text(), "Hello, Alice!");
    // The session still speaks 2025-11-25: ping works there, not statelessly.
    let o = c.request("ping", json!({})).await;
    assert_eq!(o.result(), &json!({}));
    let o = c
        .request("ping", json!({"_meta": stateless_support::meta(json!({}))}))
        .await;
    assert_eq!(o.error_code(), -32601);
}

/// A session client on stdio that answers every elicitation with `{name, city}` and returns
/// the call's text and how many elicitation requests it answered.
async fn session_trip(server: mcp_server::Server) -> (String, usize) {
    let mut c = Stdio::start(server);
    c.send(&init(1)).await;
    c.response_to(&json!(1)).await;
    c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    c.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "counted_trip", "arguments": {}}}))
        .await;
    let mut asked = 0;
    loop {
        let m = c.recv().await;
        if m["method"] == "elicitation/create" {
            asked += 1;
            c.send(
                &json!({"jsonrpc": "2.0", "id": m["id"], "result": {"action": "accept",
                           "content": {"name": "Bob", "city": "Rome"}}}),
            )
            .await;
        } else if m["id"] == 2 {
            return (
                m["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                asked,
            );
        }
    }
}

/// A server with one tool, `counted_trip`, that asks for a name and a city and counts its runs.
/// With `plain`, its output is a plain `String` (unanswered asks end as empty strings), which
/// cannot ask for input; otherwise a `Result` whose `ToolError` carries the asks.
fn counted_trip_server(
    replay: bool,
    plain: bool,
    runs: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> mcp_server::Server {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use mcp_server::prelude::*;
    use stateless_support::{City, Name};

    /// One run: counted, then the two asks; an ask without an answer ends the run with its
    /// error when `stop` (the `?` way), or reads as an empty string.
    async fn trip(cx: ToolContext, runs: &AtomicUsize, stop: bool) -> Result<String, ToolError> {
        runs.fetch_add(1, Ordering::SeqCst);
        let name = match cx.elicit::<Name>("name", "Name?").await {
            Ok(Elicitation::Accepted(n)) => n.name,
            Err(e) if stop => return Err(e.into()),
            _ => String::new(),
        };
        let city = match cx.elicit::<City>("city", "City?").await {
            Ok(Elicitation::Accepted(c)) => c.city,
            Err(e) if stop => return Err(e.into()),
            _ => String::new(),
        };
        Ok(format!("{name} in {city}"))
    }

    let mut options = mcp_server::ServerOptions::default();
    options.force_input_replay = replay;
    let builder = Server::builder(Implementation::new("replay", "1")).options(options);
    let tool = Tool::new("counted_trip");
    let builder = if plain {
        builder.tool(tool, move |cx: ToolContext, _args: NoArgs| {
            let runs = std::sync::Arc::clone(&runs);
            async move { trip(cx, &runs, false).await.unwrap_or_default() }
        })
    } else {
        builder.tool(tool, move |cx: ToolContext, _args: NoArgs| {
            let runs = std::sync::Arc::clone(&runs);
            async move { trip(cx, &runs, true).await }
        })
    };
    builder.build().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_mode_runs_session_handlers_the_stateless_way() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let direct = Arc::new(AtomicUsize::new(0));
    let (text, asked) = session_trip(counted_trip_server(false, false, Arc::clone(&direct))).await;
    assert_eq!((text.as_str(), asked), ("Bob in Rome", 2));
    assert_eq!(direct.load(Ordering::SeqCst), 1, "direct requests: one run");
    let replayed = Arc::new(AtomicUsize::new(0));
    let (text, asked) = session_trip(counted_trip_server(true, false, Arc::clone(&replayed))).await;
    assert_eq!((text.as_str(), asked), ("Bob in Rome", 2));
    assert_eq!(
        replayed.load(Ordering::SeqCst),
        3,
        "replay: one run per round, as under 2026-07-28"
    );
}

/// A tool whose output type cannot ask (a plain `String`) still runs again in replay mode:
/// there its asks are recorded during the run rather than returned, so the server must keep
/// what a replay needs even though the output type alone says one run is enough.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_mode_replays_tools_whose_output_cannot_ask() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let direct = Arc::new(AtomicUsize::new(0));
    let (text, asked) = session_trip(counted_trip_server(false, true, Arc::clone(&direct))).await;
    assert_eq!((text.as_str(), asked), ("Bob in Rome", 2));
    assert_eq!(direct.load(Ordering::SeqCst), 1, "direct requests: one run");
    let replayed = Arc::new(AtomicUsize::new(0));
    let (text, asked) = session_trip(counted_trip_server(true, true, Arc::clone(&replayed))).await;
    assert_eq!((text.as_str(), asked), ("Bob in Rome", 2));
    assert!(
        replayed.load(Ordering::SeqCst) >= 2,
        "replay: the recorded asks are answered and the handler runs again"
    );
}
