//! The example server (`mcp-example`) driven through real stdio pipes with raw JSON lines, for each of the
//! four stateful revisions: every feature, the refusals and the bad-input cases, and that the
//! server stays up after each. One session speaks `Content-Length` framing instead.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const REVISIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
const WAIT: Duration = Duration::from_secs(10);

/// Starts the example server with piped stdin and stdout (its stderr is the test's).
fn spawn_server() -> Child {
    Command::new(env!("CARGO_BIN_EXE_everything-stdio"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the example server")
}

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    /// Messages received that were not the awaited response.
    seen: Vec<Value>,
    next_id: i64,
}

impl Server {
    fn start() -> Self {
        let mut child = spawn_server();
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("server wrote invalid JSON {line:?}: {e}"));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            lines,
            seen: Vec::new(),
            next_id: 1,
        }
    }

    fn write_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
    }

    fn send(&mut self, message: Value) {
        self.write_raw(&message.to_string());
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Waits for a message matching `pred`, keeping the others in `seen`.
    fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.seen.iter().position(&pred) {
            return self.seen.remove(i);
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) if pred(&v) => return v,
                Ok(v) => self.seen.push(v),
                Err(RecvTimeoutError::Timeout) => {
                    panic!("timed out waiting for {what}; seen {:?}", self.seen)
                }
                Err(RecvTimeoutError::Disconnected) => panic!("server closed waiting for {what}"),
            }
        }
    }

    fn response(&mut self, id: &Value) -> Value {
        let id = id.clone();
        self.wait_for(&format!("response {id}"), move |v| {
            v.get("id") == Some(&id) && v.get("method").is_none()
        })
    }

    /// Sends a request and returns the whole response message.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response(&id)
    }

    fn ok(&mut self, method: &str, params: Value) -> Value {
        let r = self.call(method, params);
        match r.get("result") {
            Some(result) => result.clone(),
            None => panic!("{method} failed: {r}"),
        }
    }

    fn err(&mut self, method: &str, params: Value) -> Value {
        let r = self.call(method, params);
        match r.get("error") {
            Some(e) => e.clone(),
            None => panic!("{method} should fail: {r}"),
        }
    }

    fn assert_alive(&mut self) {
        assert_eq!(self.ok("ping", json!({})), json!({}));
    }

    fn initialize(&mut self, version: &str, capabilities: Value) -> Value {
        let r = self.ok(
            "initialize",
            json!({"protocolVersion": version, "capabilities": capabilities,
                   "clientInfo": {"name": "raw-test", "version": "1.0.0"}}),
        );
        self.notify("notifications/initialized", json!({}));
        r
    }

    fn take_notifications(&mut self, method: &str) -> Vec<Value> {
        let (matching, rest) = std::mem::take(&mut self.seen)
            .into_iter()
            .partition(|v| v.get("method").and_then(Value::as_str) == Some(method));
        self.seen = rest;
        matching
    }

    /// Closes stdin and checks that the server exits cleanly and promptly.
    fn shutdown(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                assert!(status.success(), "server exited with {status}");
                return;
            }
            assert!(Instant::now() < deadline, "server did not exit after EOF");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

const ALL_CAPS: fn() -> Value =
    || json!({"sampling": {}, "roots": {"listChanged": true}, "elicitation": {}});

#[test]
fn lifecycle_and_refusals_in_every_revision() {
    for version in REVISIONS {
        let mut s = Server::start();
        // Before initialize: ping works, anything else is refused.
        s.assert_alive();
        let e = s.err("tools/list", json!({}));
        assert_eq!(e["code"], -32002, "{version}: {e}");
        let init = s.initialize(version, ALL_CAPS());
        assert_eq!(init["protocolVersion"], version);
        assert_eq!(init["serverInfo"]["name"], mcp_example::NAME);
        let caps = &init["capabilities"];
        for cap in ["tools", "resources", "prompts", "logging"] {
            assert!(caps.get(cap).is_some(), "{version}: capability {cap}");
        }
        assert_eq!(caps.get("completions").is_some(), version != "2024-11-05");
        // A second initialize is refused.
        let e = s.err(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
        );
        assert_eq!(e["code"], -32600);

        // Unknown method, bad params, unknown tool.
        assert_eq!(s.err("tools/frobnicate", json!({}))["code"], -32601);
        assert_eq!(s.err("no/such/method", json!({}))["code"], -32601);
        assert_eq!(
            s.err("tools/call", json!({"arguments": {}}))["code"],
            -32602
        );
        assert_eq!(
            s.err("tools/call", json!({"name": "echo", "arguments": [1]}))["code"],
            -32602
        );
        assert_eq!(
            s.err("tools/list", json!({"cursor": "garbage"}))["code"],
            -32602
        );
        let e = s.err("tools/call", json!({"name": "nope", "arguments": {}}));
        assert_eq!(e["code"], -32602);
        assert_eq!(
            s.err("logging/setLevel", json!({"level": "loud"}))["code"],
            -32602
        );
        s.assert_alive();

        // Invalid JSON and malformed envelopes.
        s.write_raw("{this is not json");
        let e = s.wait_for("parse error", |v| v["error"]["code"] == -32700);
        assert_eq!(e["id"], Value::Null);
        s.write_raw(r#"{"jsonrpc":"1.0","id":77,"method":"ping"}"#);
        let e = s.response(&json!(77));
        assert_eq!(e["error"]["code"], -32600);
        s.write_raw(r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#);
        s.wait_for("bad id", |v| {
            v["error"]["code"] == -32600 && v["id"].is_null()
        });
        s.write_raw("42");
        s.wait_for("non-object", |v| v["error"]["code"] == -32600);
        s.assert_alive();

        // An oversized line (over the 4 MiB default) is refused and skipped.
        let huge = format!(
            r#"{{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{}"}}}}}}"#,
            "x".repeat(5 * 1024 * 1024)
        );
        s.write_raw(&huge);
        let e = s.wait_for("oversized", |v| {
            v["error"]["code"] == -32600 && v["id"].is_null()
        });
        assert!(
            e["error"]["message"]
                .as_str()
                .unwrap()
                .contains("maximum size"),
            "{e}"
        );
        s.assert_alive();
        s.shutdown();
    }
}

#[test]
fn tools_in_every_revision() {
    for version in REVISIONS {
        let mut s = Server::start();
        s.initialize(version, ALL_CAPS());
        let tools = s.ok("tools/list", json!({}))["tools"].clone();
        let names: Vec<&str> = tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(&names[..3], &["echo", "add", "fail"]);
        let echo = &tools[0];
        assert_eq!(echo["inputSchema"]["type"], "object");
        assert_eq!(echo["inputSchema"]["properties"]["text"]["type"], "string");
        let add = &tools[1];
        let newer = version >= "2025-06-18";
        assert_eq!(add.get("title").is_some(), newer, "{version}: title");
        assert_eq!(
            add.get("outputSchema").is_some(),
            newer,
            "{version}: outputSchema"
        );
        assert_eq!(
            add.get("annotations").is_some(),
            version >= "2025-03-26",
            "{version}: annotations"
        );

        let r = s.ok(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hello"}}),
        );
        assert_eq!(r["content"], json!([{"type": "text", "text": "hello"}]));
        assert!(r.get("isError").is_none());

        let r = s.ok(
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
        );
        assert_eq!(r.get("structuredContent").is_some(), newer, "{version}");
        if newer {
            assert_eq!(r["structuredContent"], json!({"sum": 5.0}));
        }
        assert!(text_of(&r).contains('5'));

        let r = s.ok("tools/call", json!({"name": "fail"}));
        assert_eq!(r["isError"], true);
        assert_eq!(text_of(&r), "this tool always fails");

        // Bad arguments are a tool execution error the model can read.
        let r = s.ok(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": 5}}),
        );
        assert_eq!(r["isError"], true);
        assert!(text_of(&r).contains("text"), "{r}");
        let r = s.ok("tools/call", json!({"name": "echo"}));
        assert_eq!(r["isError"], true);
        // Arguments stay text until the tool's type decodes them: whitespace around them,
        // `null` for none, escapes, and non-objects refused as invalid params.
        s.write_raw(
            r#"{"jsonrpc":"2.0","id":"ws","method":"tools/call","params":{"name":"echo","arguments"   :  { "text" : "a\u0062\n" } }}"#,
        );
        let r = s.response(&json!("ws"));
        assert_eq!(r["result"]["content"][0]["text"], "ab\n", "{r}");
        let r = s.ok("tools/call", json!({"name": "echo", "arguments": null}));
        assert_eq!(r["isError"], true, "{r}");
        assert!(text_of(&r).contains("text"), "{r}");
        for bad in [json!("x"), json!([1]), json!(5)] {
            let e = s.err("tools/call", json!({"name": "echo", "arguments": bad}));
            assert_eq!(e["code"], -32602, "{e}");
        }
        let e = s.err("tools/call", json!({"name": 5, "arguments": {}}));
        assert_eq!(e["code"], -32602, "{e}");
        let e = s.err("tools/call", json!({"name": "nope", "arguments": {}}));
        assert_eq!(e["code"], -32602, "{e}");
        assert!(e["message"].as_str().unwrap().contains("nope"), "{e}");

        // Every content kind, degraded for revisions that lack it.
        let r = s.ok("tools/call", json!({"name": "mixed"}));
        let kinds: Vec<&str> = r["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        let expected: &[&str] = match version {
            "2024-11-05" => &["text", "image", "text", "resource", "text"],
            "2025-03-26" => &["text", "image", "audio", "resource", "text"],
            _ => &["text", "image", "audio", "resource", "resource_link"],
        };
        assert_eq!(kinds, expected, "{version}");

        // Progress and logging tied to the request.
        assert_eq!(
            s.ok("logging/setLevel", json!({"level": "debug"})),
            json!({})
        );
        let r = s.ok(
            "tools/call",
            json!({"name": "countdown", "arguments": {"steps": 3, "delay_ms": 10}, "_meta": {"progressToken": "p-1"}}),
        );
        assert_eq!(text_of(&r), "liftoff after 3 steps");
        let progress = s.take_notifications("notifications/progress");
        assert_eq!(progress.len(), 3, "{version}");
        let mut last = 0.0;
        for p in &progress {
            assert_eq!(p["params"]["progressToken"], "p-1");
            let v = p["params"]["progress"].as_f64().unwrap();
            assert!(v > last);
            last = v;
            assert_eq!(
                p["params"].get("message").is_some(),
                version >= "2025-03-26"
            );
        }
        assert_eq!(s.take_notifications("notifications/message").len(), 3);
        // Above the level, log messages are filtered out.
        s.ok("logging/setLevel", json!({"level": "error"}));
        s.ok(
            "tools/call",
            json!({"name": "countdown", "arguments": {"steps": 2, "delay_ms": 10}}),
        );
        s.assert_alive();
        assert!(s.take_notifications("notifications/message").is_empty());
        assert!(s.take_notifications("notifications/progress").is_empty());

        // Cancellation: no response for the cancelled request; the server goes on.
        s.send(
            json!({"jsonrpc": "2.0", "id": "countdown-1", "method": "tools/call",
            "params": {"name": "countdown", "arguments": {"steps": 20}}}),
        );
        std::thread::sleep(Duration::from_millis(120));
        s.notify(
            "notifications/cancelled",
            json!({"requestId": "countdown-1", "reason": "test"}),
        );
        s.assert_alive();
        std::thread::sleep(Duration::from_millis(300));
        s.assert_alive();
        assert!(
            !s.seen.iter().any(|v| v["id"] == "countdown-1"),
            "a cancelled request must not be answered"
        );

        // Tools added at run time are announced and routable.
        s.ok("tools/call", json!({"name": "add_tool"}));
        s.wait_for("tools/list_changed", |v| {
            v["method"] == "notifications/tools/list_changed"
        });
        let tools = s.ok("tools/list", json!({}))["tools"].clone();
        assert!(
            tools
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["name"] == "late")
        );
        let r = s.ok("tools/call", json!({"name": "late"}));
        assert_eq!(text_of(&r), "late tool");
        s.shutdown();
    }
}

#[test]
fn resources_prompts_and_completion_in_every_revision() {
    for version in REVISIONS {
        let mut s = Server::start();
        s.initialize(version, json!({}));
        let list = s.ok("resources/list", json!({}));
        let uris: Vec<&str> = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert_eq!(uris, ["example://readme", "example://pixel.png"]);
        let r = s.ok("resources/read", json!({"uri": "example://readme"}));
        assert_eq!(
            r["contents"],
            json!([{"uri": "example://readme", "mimeType": "text/plain", "text": mcp_example::README}])
        );
        let r = s.ok("resources/read", json!({"uri": "example://pixel.png"}));
        assert_eq!(r["contents"][0]["mimeType"], "image/png");
        assert!(
            r["contents"][0]["blob"]
                .as_str()
                .unwrap()
                .starts_with("iVBOR")
        );
        let t = s.ok("resources/templates/list", json!({}));
        assert_eq!(
            t["resourceTemplates"][0]["uriTemplate"],
            "example://items/{id}"
        );
        let r = s.ok("resources/read", json!({"uri": "example://items/123"}));
        assert_eq!(r["contents"][0]["uri"], "example://items/123");
        assert!(r["contents"][0]["text"].as_str().unwrap().contains("123"));
        let e = s.err("resources/read", json!({"uri": "example://nonexistent"}));
        assert_eq!(e["code"], -32602);
        assert_eq!(e["data"]["uri"], "example://nonexistent");
        assert_eq!(s.err("resources/read", json!({}))["code"], -32602);

        // Subscriptions.
        assert_eq!(
            s.ok("resources/subscribe", json!({"uri": "example://readme"})),
            json!({})
        );
        assert_eq!(
            s.err("resources/subscribe", json!({"uri": "example://nope"}))["code"],
            -32602
        );
        s.ok("tools/call", json!({"name": "touch"}));
        let n = s.wait_for("resources/updated", |v| {
            v["method"] == "notifications/resources/updated"
        });
        assert_eq!(n["params"]["uri"], "example://readme");
        assert_eq!(
            s.ok("resources/unsubscribe", json!({"uri": "example://readme"})),
            json!({})
        );
        s.ok("tools/call", json!({"name": "touch"}));
        s.assert_alive();
        assert!(
            s.take_notifications("notifications/resources/updated")
                .is_empty()
        );

        // Prompts.
        let prompts = s.ok("prompts/list", json!({}))["prompts"].clone();
        let greeting = prompts
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "greeting")
            .unwrap()
            .clone();
        assert_eq!(greeting["arguments"][0]["name"], "name");
        assert_eq!(greeting["arguments"][0]["required"], true);
        let r = s.ok(
            "prompts/get",
            json!({"name": "greeting", "arguments": {"name": "testValue1"}}),
        );
        let text = r["messages"][0]["content"]["text"].as_str().unwrap();
        assert!(text.contains("testValue1"), "{r}");
        assert_eq!(
            s.err(
                "prompts/get",
                json!({"name": "greeting", "arguments": {"nom": "x"}})
            )["code"],
            -32602
        );
        assert_eq!(
            s.err("prompts/get", json!({"name": "nope"}))["code"],
            -32602
        );
        let r = s.ok(
            "prompts/get",
            json!({"name": "review", "arguments": {"code": "fn main() {}"}}),
        );
        assert_eq!(r["messages"][1]["content"]["type"], "resource");
        assert_eq!(
            r["messages"][1]["content"]["resource"]["text"],
            "fn main() {}"
        );
        // No arguments, and an image.
        let r = s.ok("prompts/get", json!({"name": "describe_pixel"}));
        assert_eq!(r["messages"][0]["role"], "user");
        assert_eq!(r["messages"][0]["content"]["mimeType"], "image/png");

        // Completion of a prompt argument and of a template variable.
        let r = s.ok(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greeting"}, "argument": {"name": "name", "value": "a"}}),
        );
        assert_eq!(r["completion"]["values"], json!(["Ada", "Alan"]));
        let r = s.ok(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "example://items/{id}"}, "argument": {"name": "id", "value": "2"}}),
        );
        assert_eq!(r["completion"]["values"], json!(["2"]));
        assert_eq!(
            s.err(
                "completion/complete",
                json!({"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "a", "value": ""}})
            )["code"],
            -32602
        );
        s.shutdown();
    }
}

/// Answers the next server-to-client request of `method` with `result`.
fn answer(s: &mut Server, method: &str, result: Value) -> Value {
    let m = method.to_owned();
    let req = s.wait_for(method, move |v| {
        v["method"] == m.as_str() && v.get("id").is_some()
    });
    s.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": result}));
    req
}

#[test]
fn requests_to_the_client_follow_capabilities_and_revision() {
    for version in REVISIONS {
        // With the capabilities declared.
        let mut s = Server::start();
        s.initialize(version, ALL_CAPS());
        let id = json!("sample-1");
        s.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "ask_model", "arguments": {"question": "hi"}}}));
        let req = answer(
            &mut s,
            "sampling/createMessage",
            json!({"role": "assistant", "content": {"type": "text", "text": "hello there"}, "model": "test-model"}),
        );
        assert_eq!(
            req["params"]["maxTokens"],
            mcp_example::ASK_MODEL_MAX_TOKENS
        );
        let r = s.response(&id);
        assert_eq!(text_of(&r["result"]), "test-model answered: hello there");

        let id = json!("roots-1");
        s.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "list_roots"}}));
        answer(
            &mut s,
            "roots/list",
            json!({"roots": [{"uri": "file:///tmp/a", "name": "a"}]}),
        );
        assert_eq!(text_of(&s.response(&id)["result"]), "file:///tmp/a");

        let id = json!("elicit-1");
        s.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "greet"}}));
        if version >= "2025-06-18" {
            let req = answer(
                &mut s,
                "elicitation/create",
                json!({"action": "accept", "content": {"name": "Ada", "language": "german"}}),
            );
            let schema = &req["params"]["requestedSchema"];
            assert_eq!(schema["properties"]["name"]["type"], "string");
            // An optional choice: its options, and not required. (2025-06-18 gets the form
            // without it: the model's enum schema does not project onto that revision's
            // `EnumSchema` yet, in mcp-types.)
            if version >= "2025-11-25" {
                assert_eq!(
                    schema["properties"]["language"]["enum"],
                    json!(["english", "french", "german"]),
                    "{schema}"
                );
                assert_eq!(schema["properties"]["language"]["type"], "string");
            }
            assert_eq!(schema["required"], json!(["name"]));
            assert_eq!(req["params"].get("mode").is_some(), version == "2025-11-25");
            assert_eq!(text_of(&s.response(&id)["result"]), "Hallo, Ada!");
            // An answer that does not match the schema is refused.
            let id = json!("elicit-2");
            s.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "greet"}}));
            answer(
                &mut s,
                "elicitation/create",
                json!({"action": "accept", "content": {"name": "Ada", "language": "klingon"}}),
            );
            assert_eq!(s.response(&id)["result"]["isError"], true);
        } else {
            let r = s.response(&id);
            assert_eq!(r["result"]["isError"], true);
            assert!(text_of(&r["result"]).contains("not available"), "{r}");
            assert!(
                !s.seen.iter().any(|v| v["method"] == "elicitation/create"),
                "no elicitation to {version}"
            );
        }
        // The client answers a server request with an error.
        let id = json!("sample-err");
        s.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "ask_model", "arguments": {"question": "hi"}}}));
        let req = s.wait_for("sampling", |v| v["method"] == "sampling/createMessage");
        s.send(json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -1, "message": "user rejected"}}));
        let r = s.response(&id);
        assert_eq!(r["result"]["isError"], true);
        assert!(text_of(&r["result"]).contains("user rejected"));
        s.shutdown();

        // Without capabilities: refused before anything is sent.
        let mut s = Server::start();
        s.initialize(version, json!({}));
        for tool in ["ask_model", "list_roots", "greet"] {
            let args = if tool == "ask_model" {
                json!({"question": "x"})
            } else {
                json!({})
            };
            let r = s.ok("tools/call", json!({"name": tool, "arguments": args}));
            assert_eq!(r["isError"], true, "{version} {tool}");
        }
        assert!(
            !s.seen
                .iter()
                .any(|v| v.get("method").is_some() && v.get("id").is_some()),
            "no server-to-client request without the capability: {:?}",
            s.seen
        );
        s.shutdown();
    }
}

#[test]
fn legacy_prefixed_methods_map_onto_the_standard_ones() {
    let mut s = Server::start();
    let init = s.ok("mcp/initialize", json!({}));
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert!(
        init["methods"]
            .as_array()
            .unwrap()
            .contains(&json!("mcp/tool/execute"))
    );
    let tools = s.ok("mcp/listTools", json!(null));
    let echo = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["toolId"] == "echo")
        .unwrap();
    assert_eq!(echo["inputSchema"]["type"], "object");
    let out = s.ok(
        "mcp/tool/execute",
        json!({"toolId": "echo", "inputs": {"text": "hey"}}),
    );
    assert_eq!(out, json!([{"type": "text", "text": "hey"}]));
    let out = s.ok(
        "mcp/tool/execute",
        json!({"toolId": "add", "inputs": {"a": 1, "b": 2}}),
    );
    assert_eq!(out, json!({"sum": 3.0}));
    let e = s.err("mcp/tool/execute", json!({"toolId": "fail"}));
    assert_eq!(e["code"], -32000);
    assert_eq!(
        s.err("mcp/tool/execute", json!({"inputs": {}}))["code"],
        -32602
    );
    let resources = s.ok("mcp/listResources", json!({}));
    let ids: Vec<&str> = resources
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["resourceId"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "example://readme",
            "example://pixel.png",
            "example://items/{id}"
        ]
    );
    let contents = s.ok(
        "mcp/resource/read",
        json!({"resourceId": "example://readme"}),
    );
    assert_eq!(contents[0]["text"], mcp_example::README);
    let contents = s.ok(
        "mcp/resource/read",
        json!({"resourceId": "example://items/{id}", "query": {"id": "7"}}),
    );
    assert_eq!(contents[0]["uri"], "example://items/7");
    s.shutdown();
}

#[test]
fn eof_while_a_request_runs_shuts_down_promptly() {
    let mut s = Server::start();
    s.initialize("2025-11-25", json!({}));
    s.send(json!({"jsonrpc": "2.0", "id": 1000, "method": "tools/call",
        "params": {"name": "countdown", "arguments": {"steps": 20}}}));
    std::thread::sleep(Duration::from_millis(50));
    s.shutdown();
}

#[test]
fn refused_envelopes_do_not_leak_request_ids() {
    let mut s = Server::start();
    s.initialize("2025-03-26", json!({}));
    for line in [
        r#"{"jsonrpc":"2.0","id":5,"method":7}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"ping","params":3}"#,
        r#"{"jsonrpc":"1.0","id":5,"method":"ping"}"#,
    ] {
        s.write_raw(line);
        let r = s.response(&json!(5));
        assert_eq!(r["error"]["code"], -32600, "{line}: {r}");
    }
    // The id is free again.
    s.send(json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}));
    let r = s.response(&json!(5));
    assert_eq!(r["result"], json!({}), "{r}");
    // A batch from a 2025-03-26 client is answered as an array.
    s.write_raw(
        r#"[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","id":"b2","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}]"#,
    );
    let batch = s.wait_for("batch", Value::is_array);
    assert_eq!(batch.as_array().unwrap().len(), 2);
    s.shutdown();
}

/// Reads one `Content-Length` framed message.
fn read_framed(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        if name.eq_ignore_ascii_case("content-length") {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    std::io::Read::read_exact(reader, &mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

fn write_framed(stdin: &mut ChildStdin, message: &Value) {
    let body = message.to_string();
    write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write");
    stdin.flush().expect("flush");
}

#[test]
fn content_length_framing_is_detected_and_answered_in_kind() {
    let mut child = spawn_server();
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        while let Some(message) = read_framed(&mut reader) {
            if tx.send(message).is_err() {
                break;
            }
        }
    });
    let next = |what: &str| {
        rx.recv_timeout(WAIT)
            .unwrap_or_else(|e| panic!("no framed answer for {what}: {e}"))
    };

    write_framed(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "framed", "version": "1"}}}),
    );
    let init = next("initialize");
    assert_eq!(init["id"], 1);
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    write_framed(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    // Progress notifications are framed too, and arrive before the result.
    write_framed(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "countdown", "arguments": {"steps": 2, "delay_ms": 10}, "_meta": {"progressToken": 9}}}),
    );
    let mut progress = 0;
    let result = loop {
        let m = next("countdown");
        if m["method"] == "notifications/progress" {
            assert_eq!(m["params"]["progressToken"], 9);
            progress += 1;
        } else if m["id"] == 2 {
            break m;
        }
    };
    assert_eq!(progress, 2);
    assert_eq!(text_of(&result["result"]), "liftoff after 2 steps");
    // Invalid JSON in a well-formed frame is answered (framed) and the session goes on.
    let garbage = "{not json";
    write!(stdin, "Content-Length: {}\r\n\r\n{garbage}", garbage.len()).unwrap();
    stdin.flush().unwrap();
    let e = next("parse error");
    assert_eq!(e["error"]["code"], -32700);
    write_framed(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"text": "framed"}}}),
    );
    let echo = next("echo");
    assert_eq!(echo["id"], 3);
    assert_eq!(text_of(&echo["result"]), "framed");

    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "server exited with {status}");
            break;
        }
        assert!(Instant::now() < deadline, "server did not exit after EOF");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn logs_of_the_stdin_reader_thread_reach_a_subscriber_set_for_the_main_thread_only() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_everything-stdio"))
        .env("EVERYTHING_SCOPED_LOG", "1")
        .env("RUST_LOG", "mcp_transport_stdio=debug")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the example server");
    let mut stdin = child.stdin.take().expect("stdin");
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": { "name": "t", "version": "0" }
        }
    });
    writeln!(stdin, "{initialize}").expect("write");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("the initialize answer");
    writeln!(
        stdin,
        "{}",
        json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" })
    )
    .expect("write");
    line.clear();
    stdout.read_line(&mut line).expect("the ping answer");
    assert!(line.contains("\"id\":2"), "{line}");
    drop(stdin);
    let output = child.wait_with_output().expect("exit");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("reading stdin on a thread of its own"),
        "the reader thread's log is missing:\n{stderr}"
    );
}
