//! Every feature of the stateless revision (2026-07-28), on stdio framing and on Streamable
//! HTTP: the per-request envelope and its errors, `server/discover`, `resultType`, `serverInfo`
//! and caching hints, progress and opt-in logging, the missing-capability error, multi
//! round-trip requests (the `cx.elicit(..).await?` way and the explicit `InputRequired` way) on
//! tools, prompts and resources, and `subscriptions/listen`.

use crate::stateless_support;

use http::StatusCode;
use mcp_server::model::CacheScope;
use mcp_server::{CacheHint, CacheHints};
use serde_json::{Value, json};
use stateless_support::{Client, all_capabilities, clients, meta, server, with_meta};

const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

fn alice() -> Value {
    json!({"action": "accept", "content": {"name": "Alice"}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discover_describes_the_server() {
    for mut c in clients(&server()).await {
        let o = c
            .request("server/discover", json!({"_meta": meta(json!({}))}))
            .await;
        o.assert_status(StatusCode::OK);
        let r = o.result();
        assert_eq!(
            r["supportedVersions"],
            json!(["2026-07-28"]),
            "{}",
            c.name()
        );
        assert_eq!(r["resultType"], "complete");
        assert_eq!(r["ttlMs"], 0);
        assert_eq!(r["cacheScope"], "private");
        assert_eq!(r["_meta"][SERVER_INFO]["name"], "stateless-test-server");
        assert_eq!(r["_meta"][SERVER_INFO]["version"], "1.2.3");
        assert_eq!(r["instructions"], "Test server for the stateless revision");
        let caps = &r["capabilities"];
        assert!(caps["tools"].is_object() && caps["prompts"].is_object());
        assert!(caps["resources"].is_object());
        // clientInfo is optional.
        let mut bare = meta(json!({}));
        bare.as_object_mut()
            .unwrap()
            .remove("io.modelcontextprotocol/clientInfo");
        let o = c.request("server/discover", json!({"_meta": bare})).await;
        assert_eq!(o.result()["resultType"], "complete", "{}", c.name());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn envelope_errors() {
    for mut c in clients(&server()).await {
        let name = c.name();
        // No capabilities: -32602 (HTTP 400).
        let o = c
            .request(
                "tools/list",
                json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
            )
            .await;
        assert_eq!(o.error_code(), -32602, "{name}");
        o.assert_status(StatusCode::BAD_REQUEST);
        // Capabilities that are not an object: -32602.
        let o = c
            .request(
                "tools/list",
                json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientCapabilities": {"sampling": true}}}),
            )
            .await;
        assert_eq!(o.error_code(), -32602, "{name}");
        // An unknown version: -32022 with what is supported (HTTP 400).
        let mut v999 = meta(json!({}));
        v999["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
        let o = c.request("tools/list", json!({"_meta": v999})).await;
        assert_eq!(o.error_code(), -32022, "{name}");
        assert_eq!(
            o.response["error"]["data"],
            json!({"supported": ["2026-07-28"], "requested": "v999.0.0"})
        );
        o.assert_status(StatusCode::BAD_REQUEST);
        // Methods 2026-07-28 removed, and unknown ones: -32601 (HTTP 404).
        for method in [
            "initialize",
            "ping",
            "logging/setLevel",
            "resources/subscribe",
            "resources/unsubscribe",
            "unknown/method",
        ] {
            let o = c
                .request(
                    method,
                    json!({"_meta": meta(json!({})), "uri": "test://doc"}),
                )
                .await;
            assert_eq!(o.error_code(), -32601, "{name} {method}");
            o.assert_status(StatusCode::NOT_FOUND);
        }
        // An unknown resource: -32602 with the URI, never empty contents.
        let o = c
            .request(
                "resources/read",
                with_meta(json!({"uri": "test://missing"}), json!({})),
            )
            .await;
        assert_eq!(o.error_code(), -32602, "{name}");
        assert_eq!(o.response["error"]["data"]["uri"], "test://missing");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_carry_result_type_server_info_and_cache_hints() {
    let server = stateless_support::builder()
        .cache_hints(
            CacheHints::default()
                .tools(CacheHint::new(60_000, CacheScope::Public))
                .resource_reads(CacheHint::new(5_000, CacheScope::Private)),
        )
        .build()
        .unwrap();
    for mut c in clients(&server).await {
        let name = c.name();
        let mut orders = Vec::new();
        for _ in 0..3 {
            let o = c
                .request("tools/list", json!({"_meta": meta(json!({}))}))
                .await;
            let r = o.result();
            assert_eq!(r["resultType"], "complete", "{name}");
            assert_eq!(r["ttlMs"], 60_000, "{name}");
            assert_eq!(r["cacheScope"], "public", "{name}");
            assert_eq!(r["_meta"][SERVER_INFO]["name"], "stateless-test-server");
            let names: Vec<String> = r["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect();
            orders.push(names);
        }
        assert!(
            orders.windows(2).all(|w| w[0] == w[1]),
            "deterministic order"
        );
        assert_eq!(orders[0][0], "echo", "registration order");
        for (method, params) in [
            ("prompts/list", json!({})),
            ("resources/list", json!({})),
            ("resources/templates/list", json!({})),
        ] {
            let o = c.request(method, with_meta(params, json!({}))).await;
            let r = o.result();
            assert_eq!(r["ttlMs"], 0, "{name} {method}");
            assert_eq!(r["cacheScope"], "private", "{name} {method}");
            assert_eq!(r["resultType"], "complete");
        }
        let o = c
            .request(
                "resources/read",
                with_meta(json!({"uri": "test://doc"}), json!({})),
            )
            .await;
        let r = o.result();
        assert_eq!(r["contents"][0]["text"], "the document");
        assert_eq!(
            (r["ttlMs"].clone(), r["cacheScope"].clone()),
            (json!(5000), json!("private"))
        );
        let o = c.call("echo", json!({"text": "hi"}), json!({})).await;
        assert_eq!(o.text(), "hi");
        let r = o.result();
        assert_eq!(r["resultType"], "complete");
        assert!(r.get("ttlMs").is_none(), "tools/call is not cacheable");
        assert_eq!(r["_meta"][SERVER_INFO]["version"], "1.2.3");
        let o = c
            .request(
                "completion/complete",
                with_meta(
                    json!({"ref": {"type": "ref/prompt", "name": "intro"},
                           "argument": {"name": "x", "value": ""}}),
                    json!({}),
                ),
            )
            .await;
        // No completions registered: the method does not exist for this server.
        assert_eq!(o.error_code(), -32601, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_and_logging_only_when_asked() {
    for mut c in clients(&server()).await {
        let name = c.name();
        // Neither a progress token nor a log level: nothing but the result.
        let o = c.call("work", json!({}), json!({})).await;
        assert_eq!(o.text(), "worked");
        assert!(o.notifications.is_empty(), "{name}: {:?}", o.notifications);
        // A token and `info`: three progress notifications with the token, then info and
        // warning but not debug, all before the result.
        let mut m = meta(json!({}));
        m["progressToken"] = json!("tok-1");
        m["io.modelcontextprotocol/logLevel"] = json!("info");
        let o = c
            .request(
                "tools/call",
                json!({"name": "work", "arguments": {}, "_meta": m}),
            )
            .await;
        assert_eq!(o.text(), "worked");
        let progress: Vec<&Value> = o
            .notifications
            .iter()
            .filter(|n| n["method"] == "notifications/progress")
            .collect();
        assert_eq!(progress.len(), 3, "{name}");
        assert!(
            progress
                .iter()
                .all(|p| p["params"]["progressToken"] == "tok-1")
        );
        assert_eq!(progress[2]["params"]["progress"], 3.0);
        let logs: Vec<&str> = o
            .notifications
            .iter()
            .filter(|n| n["method"] == "notifications/message")
            .map(|n| n["params"]["level"].as_str().unwrap())
            .collect();
        assert_eq!(logs, ["info", "warning"], "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_capability_is_an_error() {
    for mut c in clients(&server()).await {
        let o = c
            .call("ask_model", json!({}), json!({"elicitation": {}}))
            .await;
        assert_eq!(o.error_code(), -32021, "{}", c.name());
        assert_eq!(
            o.response["error"]["data"],
            json!({"requiredCapabilities": {"sampling": {}}})
        );
        o.assert_status(StatusCode::BAD_REQUEST);
    }
}

/// Calls `tool` until it completes, answering each input request with `answer(key)`; returns
/// the rounds of `input_required` seen and the final outcome.
async fn until_complete(
    c: &mut Client,
    method: &str,
    mut params: Value,
    answer: impl Fn(&str) -> Value,
) -> (Vec<Value>, stateless_support::Outcome) {
    let mut rounds = Vec::new();
    loop {
        let o = c.request(method, params.clone()).await;
        let result = o.result().clone();
        if result["resultType"] != "input_required" {
            return (rounds, o);
        }
        assert!(rounds.len() < 5, "too many rounds");
        let mut responses = serde_json::Map::new();
        for key in result["inputRequests"].as_object().unwrap().keys() {
            responses.insert(key.clone(), answer(key));
        }
        params["inputResponses"] = Value::Object(responses);
        params["requestState"] = result["requestState"].clone();
        rounds.push(result);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_sampling_and_roots_through_input_required() {
    for mut c in clients(&server()).await {
        let name = c.name();
        // Round 1: the ask, with a sealed state.
        let o = c.call("greet", json!({}), all_capabilities()).await;
        let r = o.result();
        assert_eq!(r["resultType"], "input_required", "{name}");
        assert_eq!(r["inputRequests"]["name"]["method"], "elicitation/create");
        assert_eq!(
            r["inputRequests"]["name"]["params"]["message"],
            "What is your name?"
        );
        assert!(r["requestState"].is_string());
        assert_eq!(r["_meta"][SERVER_INFO]["name"], "stateless-test-server");
        // Round 2 with the answer: complete.
        let (rounds, o) = until_complete(
            &mut c,
            "tools/call",
            with_meta(
                json!({"name": "greet", "arguments": {}}),
                all_capabilities(),
            ),
            |_| alice(),
        )
        .await;
        assert_eq!(rounds.len(), 1);
        assert_eq!(o.text(), "Hello, Alice!", "{name}");
        // Answers without any requestState are taken too.
        let o = c
            .request(
                "tools/call",
                with_meta(
                    json!({"name": "greet", "arguments": {}, "inputResponses": {"name": alice(), "extra": 1}}),
                    all_capabilities(),
                ),
            )
            .await;
        assert_eq!(o.text(), "Hello, Alice!", "{name}");
        // Sampling and roots.
        let (_, o) = until_complete(
            &mut c,
            "tools/call",
            with_meta(json!({"name": "ask_model", "arguments": {}}), all_capabilities()),
            |_| json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}),
        )
        .await;
        assert_eq!(o.text(), "model: Paris", "{name}");
        let (_, o) = until_complete(
            &mut c,
            "tools/call",
            with_meta(
                json!({"name": "count_roots", "arguments": {}}),
                all_capabilities(),
            ),
            |_| json!({"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}),
        )
        .await;
        assert_eq!(o.text(), "2 root(s)", "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_round_and_bad_answers() {
    for mut c in clients(&server()).await {
        let name = c.name();
        let (rounds, o) = until_complete(
            &mut c,
            "tools/call",
            with_meta(json!({"name": "trip", "arguments": {}}), all_capabilities()),
            |key| match key {
                "name" => alice(),
                _ => json!({"action": "accept", "content": {"city": "Lyon"}}),
            },
        )
        .await;
        assert_eq!(rounds.len(), 2, "{name}");
        assert!(rounds[0]["inputRequests"].get("name").is_some());
        assert!(rounds[1]["inputRequests"].get("city").is_some());
        assert!(
            rounds[1]["inputRequests"].get("name").is_none(),
            "name was carried"
        );
        assert_ne!(rounds[0]["requestState"], rounds[1]["requestState"]);
        assert_eq!(o.text(), "Alice travels to Lyon", "{name}");

        // Only an unknown key: asked again, not an error.
        let o = c
            .request(
                "tools/call",
                with_meta(
                    json!({"name": "greet", "arguments": {}, "inputResponses": {"wrong_key": alice()}}),
                    all_capabilities(),
                ),
            )
            .await;
        assert_eq!(o.result()["resultType"], "input_required", "{name}");
        // A number where an ElicitResult belongs, and null inputResponses: -32602.
        for responses in [json!({"name": 12345}), Value::Null] {
            let o = c
                .request(
                    "tools/call",
                    with_meta(
                        json!({"name": "greet", "arguments": {}, "inputResponses": responses}),
                        all_capabilities(),
                    ),
                )
                .await;
            assert_eq!(o.error_code(), -32602, "{name} {responses}");
        }
        // A tampered state: -32602.
        let first = c.call("greet", json!({}), all_capabilities()).await;
        let state = first.result()["requestState"].as_str().unwrap().to_owned();
        let o = c
            .request(
                "tools/call",
                with_meta(
                    json!({"name": "greet", "arguments": {},
                           "inputResponses": {"name": alice()},
                           "requestState": format!("{state}-TAMPERED")}),
                    all_capabilities(),
                ),
            )
            .await;
        assert_eq!(o.error_code(), -32602, "{name}");
        // The state of one tool does not open for another.
        let o = c
            .request(
                "tools/call",
                with_meta(
                    json!({"name": "trip", "arguments": {},
                           "inputResponses": {"name": alice()}, "requestState": state}),
                    all_capabilities(),
                ),
            )
            .await;
        assert_eq!(o.error_code(), -32602, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_declared_kinds_are_asked() {
    for mut c in clients(&server()).await {
        // Elicitation not declared: the tool cannot ask, and fails with -32021.
        let o = c.call("greet", json!({}), json!({"sampling": {}})).await;
        assert_eq!(o.error_code(), -32021, "{}", c.name());
        assert_eq!(
            o.response["error"]["data"]["requiredCapabilities"],
            json!({"elicitation": {}})
        );
        // Requests other than tools/call, prompts/get and resources/read never ask.
        let o = c
            .request("tools/list", json!({"_meta": meta(all_capabilities())}))
            .await;
        assert_eq!(o.result()["resultType"], "complete");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explicit_input_required_with_state() {
    for mut c in clients(&server()).await {
        let name = c.name();
        let (rounds, o) = until_complete(
            &mut c,
            "tools/call",
            with_meta(
                json!({"name": "deploy", "arguments": {"text": "prod"}}),
                all_capabilities(),
            ),
            |_| json!({"action": "accept", "content": {"ok": true}}),
        )
        .await;
        assert_eq!(rounds.len(), 1, "{name}");
        assert_eq!(
            rounds[0]["inputRequests"]["confirm"]["params"]["message"],
            "Deploy prod?"
        );
        assert_eq!(
            o.text(),
            r#"prod accept (state {"target":"prod"})"#,
            "{name}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_and_resources_ask_too() {
    for mut c in clients(&server()).await {
        let name = c.name();
        let (rounds, o) = until_complete(
            &mut c,
            "prompts/get",
            with_meta(json!({"name": "intro"}), all_capabilities()),
            |_| alice(),
        )
        .await;
        assert_eq!(rounds.len(), 1, "{name}");
        let r = o.result();
        assert_eq!(r["resultType"], "complete");
        assert_eq!(r["messages"][0]["content"]["text"], "Introduce Alice");
        let (rounds, o) = until_complete(
            &mut c,
            "resources/read",
            with_meta(json!({"uri": "test://secret"}), all_capabilities()),
            |_| json!({"action": "accept", "content": {"password": "open"}}),
        )
        .await;
        assert_eq!(rounds.len(), 1, "{name}");
        let r = o.result();
        assert_eq!(r["contents"][0]["text"], "the secret", "{name}");
        assert_eq!(r["ttlMs"], 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_listen_on_stdio() {
    let server = server();
    let mut c = stateless_support::Stdio::start(server.clone());
    let listen = json!({"_meta": meta(json!({})), "notifications": {"toolsListChanged": true, "promptsListChanged": true}});
    c.send(&json!({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen", "params": listen}))
        .await;
    let ack = c.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "promptsListChanged": true})
    );
    let o = c
        .request(
            "tools/call",
            with_meta(json!({"name": "change_tools", "arguments": {}}), json!({})),
        )
        .await;
    assert_eq!(o.text(), "changed");
    // Two changes (added, removed), each tagged; nothing of the other kinds.
    for _ in 0..2 {
        let n = c.recv().await;
        assert_eq!(n["method"], "notifications/tools/list_changed");
        assert_eq!(
            n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            "sub-1"
        );
    }
    // Cancelling ends the subscription; the connection goes on.
    c.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "sub-1"}}))
        .await;
    let o = c
        .request("server/discover", json!({"_meta": meta(json!({}))}))
        .await;
    assert_eq!(o.result()["resultType"], "complete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_listen_over_http() {
    let server = server();
    let mut http = stateless_support::Http::start(server.clone()).await;
    // The transport rewrites request ids on its shared stateless connection; the tags carry
    // the id the client chose.
    let listen = json!({"jsonrpc": "2.0", "id": "listen-tools", "method": "subscriptions/listen",
        "params": {"_meta": meta(json!({})), "notifications": {"toolsListChanged": true}}});
    let headers = [
        ("mcp-protocol-version", "2026-07-28".to_owned()),
        ("mcp-method", "subscriptions/listen".to_owned()),
    ];
    let mut tools = http.post_raw(&listen, &headers).await;
    assert!(tools.is_sse(), "the listen answer is a stream");
    let ack = tools.next_message().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    let listen_id = ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].clone();
    assert_eq!(listen_id, "listen-tools");
    let (_, mut prompts) = http
        .post(
            "subscriptions/listen",
            json!({"_meta": meta(json!({})), "notifications": {"promptsListChanged": true}}),
        )
        .await;
    let _ack = prompts.next_message().await.unwrap();
    let o = http
        .request(
            "tools/call",
            with_meta(json!({"name": "change_tools", "arguments": {}}), json!({})),
        )
        .await;
    assert_eq!(o.text(), "changed");
    let n = tools.next_message().await.unwrap();
    assert_eq!(n["method"], "notifications/tools/list_changed");
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        listen_id
    );
    // The prompts-only stream hears nothing of tools.
    let quiet = tokio::time::timeout(
        std::time::Duration::from_millis(300),
        prompts.next_message(),
    )
    .await;
    assert!(
        quiet.is_err(),
        "no tools notification on a prompts subscription: {quiet:?}"
    );
}
