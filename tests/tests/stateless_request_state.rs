//! The sealed `requestState` of multi round-trip requests: a tampered state, a state replayed
//! after its expiry, a state continued on another replica holding the same key (accepted), on
//! one with a different key (refused), and on one that rotated its key (the previous key still
//! opens recent states). Replicas are separate HTTP services, as behind a load balancer.

use crate::stateless_support;

use std::time::Duration;

use mcp_server::{
    BoxFuture, ErrorObject, Middleware, Next, Request, RequestStateSubject, SealingKey, Server,
    ServerOptions,
};
use serde_json::{Value, json};
use stateless_support::{Http, Stdio, all_capabilities, builder, with_meta};

fn key(byte: u8) -> SealingKey {
    SealingKey::new([byte; 32]).unwrap()
}

fn replica(key_byte: u8, previous: Option<u8>) -> Server {
    let mut b = builder().sealing_key(key(key_byte));
    if let Some(p) = previous {
        b = b.previous_sealing_key(key(p));
    }
    b.build().unwrap()
}

fn greet(responses: Option<Value>, state: Option<&str>) -> Value {
    let mut params = json!({"name": "greet", "arguments": {}});
    if let Some(r) = responses {
        params["inputResponses"] = r;
    }
    if let Some(s) = state {
        params["requestState"] = json!(s);
    }
    with_meta(params, all_capabilities())
}

fn alice() -> Value {
    json!({"name": {"action": "accept", "content": {"name": "Alice"}}})
}

/// Round 1 on `http`: the sealed state.
async fn first_round(http: &mut Http) -> String {
    let o = http.request("tools/call", greet(None, None)).await;
    assert_eq!(o.result()["resultType"], "input_required");
    o.result()["requestState"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampered_state_is_refused() {
    let mut http = Http::start(replica(1, None)).await;
    let state = first_round(&mut http).await;
    let mut bytes = state.clone().into_bytes();
    let middle = bytes.len() / 2;
    bytes[middle] = if bytes[middle] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(bytes).unwrap();
    for bad in [
        flipped,
        format!("{state}-TAMPERED"),
        state[..state.len() - 2].to_owned(),
        "not a sealed state".to_owned(),
    ] {
        let o = http
            .request("tools/call", greet(Some(alice()), Some(&bad)))
            .await;
        assert_eq!(o.error_code(), -32602, "{bad}");
        assert!(o.error_message().contains("requestState"));
    }
    // The untouched state still works.
    let o = http
        .request("tools/call", greet(Some(alice()), Some(&state)))
        .await;
    assert_eq!(o.text(), "Hello, Alice!");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_state_is_refused() {
    let mut options = ServerOptions::default();
    options.request_state_ttl = Duration::from_millis(300);
    let server = builder()
        .sealing_key(key(1))
        .options(options)
        .build()
        .unwrap();
    let mut http = Http::start(server).await;
    let fresh = first_round(&mut http).await;
    let o = http
        .request("tools/call", greet(Some(alice()), Some(&fresh)))
        .await;
    assert_eq!(o.text(), "Hello, Alice!", "valid within its lifetime");
    let stale = first_round(&mut http).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let o = http
        .request("tools/call", greet(Some(alice()), Some(&stale)))
        .await;
    assert_eq!(o.error_code(), -32602);
    assert!(o.error_message().contains("expired"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_with_the_same_key_continue_each_others_requests() {
    let mut a = Http::start(replica(7, None)).await;
    let mut b = Http::start(replica(7, None)).await;
    let state = first_round(&mut a).await;
    let o = b
        .request("tools/call", greet(Some(alice()), Some(&state)))
        .await;
    assert_eq!(o.text(), "Hello, Alice!");
    // Multi-round, alternating replicas.
    let mut params = with_meta(json!({"name": "trip", "arguments": {}}), all_capabilities());
    let o = a.request("tools/call", params.clone()).await;
    params["inputResponses"] = alice();
    params["requestState"] = o.result()["requestState"].clone();
    let o = b.request("tools/call", params.clone()).await;
    assert_eq!(o.result()["resultType"], "input_required");
    params["inputResponses"] = json!({"city": {"action": "accept", "content": {"city": "Oslo"}}});
    params["requestState"] = o.result()["requestState"].clone();
    let o = a.request("tools/call", params).await;
    assert_eq!(o.text(), "Alice travels to Oslo");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_different_key_refuses_and_a_rotated_key_accepts() {
    let mut old = Http::start(replica(1, None)).await;
    let state = first_round(&mut old).await;
    let mut other = Http::start(replica(2, None)).await;
    let o = other
        .request("tools/call", greet(Some(alice()), Some(&state)))
        .await;
    assert_eq!(o.error_code(), -32602);
    assert!(o.error_message().contains("unknown key"));
    let mut rotated = Http::start(replica(2, Some(1))).await;
    let o = rotated
        .request("tools/call", greet(Some(alice()), Some(&state)))
        .await;
    assert_eq!(o.text(), "Hello, Alice!");
    // What the rotated replica seals, the old one cannot open.
    let fresh = first_round(&mut rotated).await;
    let o = old
        .request("tools/call", greet(Some(alice()), Some(&fresh)))
        .await;
    assert_eq!(o.error_code(), -32602);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_is_bound_to_its_call() {
    let mut http = Http::start(replica(1, None)).await;
    // Sealed for `deploy` with one argument: refused with another argument or another tool.
    let o = http
        .call_with(json!({"name": "deploy", "arguments": {"text": "staging"}}))
        .await;
    let state = o.result()["requestState"].as_str().unwrap().to_owned();
    let answer = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    let o = http
        .call_with(
            json!({"name": "deploy", "arguments": {"text": "production"},
                       "inputResponses": answer, "requestState": state}),
        )
        .await;
    assert_eq!(o.error_code(), -32602, "the answer was given for staging");
    let o = http
        .call_with(json!({"name": "deploy", "arguments": {"text": "staging"},
                       "inputResponses": answer, "requestState": state}))
        .await;
    assert_eq!(o.text(), r#"staging accept (state {"target":"staging"})"#);
}

/// Stands in for an authentication layer: the caller's name from a `_meta` key.
struct SubjectFromMeta;

impl Middleware for SubjectFromMeta {
    fn handle<'a>(
        &'a self,
        mut request: Request,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<mcp_jsonrpc::RawJson, ErrorObject>> {
        let user = request
            .params
            .as_deref()
            .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
            .and_then(|p| p["_meta"]["test.example/user"].as_str().map(str::to_owned));
        if let Some(user) = user {
            request.extensions.insert(RequestStateSubject(user));
        }
        Box::pin(next.run(request))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_is_bound_to_its_subject() {
    let server = builder().middleware(SubjectFromMeta).build().unwrap();
    let mut c = Stdio::start(server);
    let as_user = |user: &str, responses: Option<Value>, state: Option<&str>| {
        let mut params = greet(responses, state);
        params["_meta"]["test.example/user"] = json!(user);
        params
    };
    let o = c.request("tools/call", as_user("alice", None, None)).await;
    let state = o.result()["requestState"].as_str().unwrap().to_owned();
    let o = c
        .request("tools/call", as_user("bob", Some(alice()), Some(&state)))
        .await;
    assert_eq!(o.error_code(), -32602);
    assert!(o.error_message().contains("another principal"));
    let o = c
        .request("tools/call", as_user("alice", Some(alice()), Some(&state)))
        .await;
    assert_eq!(o.text(), "Hello, Alice!");
}
