//! `Server::serve` behind the Streamable HTTP service, driven with raw HTTP requests over hyper
//! (no SDK client): what a handler causes during a `tools/call` (progress, log messages, an
//! elicitation request) travels on the SSE stream of that call's POST, and the transport's
//! request extensions reach middleware and handlers.

use std::time::Duration;

use http::StatusCode;
use mcp_server::model::{Implementation, LoggingLevel};
use mcp_server::{
    BoxFuture, ErrorObject, Middleware, Next, NoArgs, Server, Tool, ToolContext, ToolError,
};
use mcp_tests::http::{Answer, Served, post};
use mcp_transport_http::server::SessionId;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// Who the caller is, as the middleware read it from the HTTP request.
#[derive(Debug, Clone)]
struct Caller(String);

/// Reads `X-Caller` from the HTTP request parts the transport attached, and hands it to the
/// handlers as a typed extension.
struct CallerFromHeader;

impl Middleware for CallerFromHeader {
    fn handle<'a>(
        &'a self,
        mut request: mcp_server::Request,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<mcp_jsonrpc::RawJson, ErrorObject>> {
        Box::pin(async move {
            let caller = request
                .extensions
                .get::<http::request::Parts>()
                .and_then(|p| p.headers.get("x-caller"))
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            if let Some(caller) = caller {
                request.extensions.insert(Caller(caller));
            }
            next.run(request).await
        })
    }
}

#[derive(Deserialize, JsonSchema)]
struct Steps {
    steps: u32,
}

#[derive(Deserialize, JsonSchema)]
struct Name {
    name: String,
}

fn server() -> Server {
    Server::builder(Implementation::new("server-http-test", "1.0.0"))
        .middleware(CallerFromHeader)
        .tool(
            Tool::new("slow"),
            |cx: ToolContext, args: Steps| async move {
                for i in 1..=args.steps {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    cx.progress(f64::from(i), Some(f64::from(args.steps)), None)
                        .await;
                    cx.log(LoggingLevel::Info, format!("step {i}")).await;
                }
                "done"
            },
        )
        .tool(
            Tool::new("ask"),
            |cx: ToolContext, _args: NoArgs| async move {
                match cx.elicit::<Name>("name", "Who are you?").await? {
                    mcp_server::Elicitation::Accepted(n) => {
                        Ok::<_, ToolError>(format!("hi {}", n.name))
                    }
                    _ => Ok("no answer".to_owned()),
                }
            },
        )
        .tool(
            Tool::new("whoami"),
            |cx: ToolContext, _args: NoArgs| async move {
                let session = cx
                    .extensions()
                    .get::<SessionId>()
                    .map(|s| s.0.clone())
                    .unwrap_or_default();
                let caller = cx
                    .extensions()
                    .get::<Caller>()
                    .map(|c| c.0.clone())
                    .unwrap_or_default();
                format!("{caller}@{session}")
            },
        )
        .build()
        .unwrap()
}

struct Http {
    served: Served,
    session: Option<String>,
}

impl Http {
    async fn start(server: Server) -> Self {
        Http {
            served: Served::server(&server).await,
            session: None,
        }
    }

    /// POSTs one message on a fresh connection, in the session once there is one.
    async fn post(&self, message: Value, caller: Option<&str>) -> Answer {
        let mut headers = vec![("mcp-protocol-version", "2025-11-25".to_owned())];
        if let Some(session) = &self.session {
            headers.push(("mcp-session-id", session.clone()));
        }
        if let Some(caller) = caller {
            headers.push(("x-caller", caller.to_owned()));
        }
        post(self.served.addr(), &message, &headers).await
    }

    async fn initialize(&mut self, capabilities: Value) {
        let mut answer = self
            .post(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": capabilities,
                    "clientInfo": {"name": "raw-http", "version": "1"}}}),
                None,
            )
            .await;
        assert_eq!(answer.status, StatusCode::OK);
        self.session = answer.session.clone();
        assert!(self.session.is_some(), "a session id");
        let init = answer.next_message().await.unwrap();
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
        let ack = self
            .post(
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                None,
            )
            .await;
        assert_eq!(ack.status, StatusCode::ACCEPTED);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_and_logs_of_a_call_arrive_on_its_post_stream() {
    let mut http = Http::start(server()).await;
    http.initialize(json!({})).await;
    let mut answer = http
        .post(
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
                "name": "slow", "arguments": {"steps": 3}, "_meta": {"progressToken": "p"}}}),
            None,
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(
        answer.is_sse(),
        "a call that reports progress is answered with SSE"
    );
    let mut progress = Vec::new();
    let mut logs = 0;
    let result = loop {
        let m = answer
            .next_message()
            .await
            .expect("the stream ends with the result");
        match m["method"].as_str() {
            Some("notifications/progress") => {
                assert_eq!(m["params"]["progressToken"], "p");
                progress.push(m["params"]["progress"].as_f64().unwrap());
            }
            Some("notifications/message") => logs += 1,
            Some(other) => panic!("unexpected {other}"),
            None => break m,
        }
    };
    assert_eq!(progress, [1.0, 2.0, 3.0]);
    assert_eq!(logs, 3);
    assert_eq!(result["id"], 7);
    assert_eq!(result["result"]["content"][0]["text"], "done");
    assert!(answer.next_message().await.is_none(), "the stream ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_during_a_call_arrives_on_its_post_stream() {
    let mut http = Http::start(server()).await;
    http.initialize(json!({"elicitation": {}})).await;
    let mut call = http
        .post(
            json!({"jsonrpc": "2.0", "id": "call-1", "method": "tools/call",
                   "params": {"name": "ask", "arguments": {}}}),
            None,
        )
        .await;
    assert!(call.is_sse());
    let ask = call.next_message().await.expect("the elicitation request");
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["mode"], "form");
    assert_eq!(
        ask["params"]["requestedSchema"]["properties"]["name"]["type"],
        "string"
    );
    // The answer goes in its own POST; the result comes on the call's stream.
    let ack = http
        .post(
            json!({"jsonrpc": "2.0", "id": ask["id"], "result": {
                "action": "accept", "content": {"name": "Ada"}}}),
            None,
        )
        .await;
    assert_eq!(ack.status, StatusCode::ACCEPTED);
    let result = call.next_message().await.expect("the result");
    assert_eq!(result["id"], "call-1");
    assert_eq!(result["result"]["content"][0]["text"], "hi Ada");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_see_the_extensions_of_the_transport_and_of_middleware() {
    let mut http = Http::start(server()).await;
    http.initialize(json!({})).await;
    let session = http.session.clone().unwrap();
    let mut answer = http
        .post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "whoami", "arguments": {}}}),
            Some("ada"),
        )
        .await;
    let result = answer.next_message().await.unwrap();
    assert_eq!(
        result["result"]["content"][0]["text"],
        format!("ada@{session}"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_each_get_their_own_logs_and_progress() {
    let mut http = Http::start(server()).await;
    http.initialize(json!({})).await;
    let call = |id: i64, steps: u32| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "slow", "arguments": {"steps": steps}, "_meta": {"progressToken": id}}})
    };
    let (mut a, mut b) = tokio::join!(http.post(call(1, 4), None), http.post(call(2, 2), None));
    async fn drain(answer: &mut Answer, id: i64) -> (usize, usize) {
        let (mut progress, mut logs) = (0, 0);
        loop {
            let m = answer.next_message().await.expect("a result");
            match m["method"].as_str() {
                Some("notifications/progress") => {
                    assert_eq!(m["params"]["progressToken"], id);
                    progress += 1;
                }
                Some("notifications/message") => logs += 1,
                Some(other) => panic!("unexpected {other}"),
                None => {
                    assert_eq!(m["id"], id);
                    return (progress, logs);
                }
            }
        }
    }
    let (ra, rb) = tokio::join!(drain(&mut a, 1), drain(&mut b, 2));
    assert_eq!(ra, (4, 4));
    assert_eq!(rb, (2, 2));
}

/// The method and revision of each request middleware saw.
type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, Option<String>)>>>;

/// Records what middleware sees of each request: its method and revision.
struct Recorder(Seen);

impl Middleware for Recorder {
    fn handle<'a>(
        &'a self,
        request: mcp_server::Request,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<mcp_jsonrpc::RawJson, ErrorObject>> {
        let version = request.protocol_version.map(|v| v.as_str().to_owned());
        self.0
            .lock()
            .unwrap()
            .push((request.method.clone(), version));
        Box::pin(next.run(request))
    }
}

/// A stateless `tools/call` of `name`, with the HTTP headers 2026-07-28 asks for.
async fn stateless_call(http: &Http, id: i64, name: &str, arguments: Value) -> Answer {
    let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": name, "arguments": arguments, "_meta": {
            "progressToken": id,
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/logLevel": "info"}}});
    let headers = [
        ("mcp-protocol-version", "2026-07-28".to_owned()),
        ("mcp-method", "tools/call".to_owned()),
        ("mcp-name", name.to_owned()),
        ("x-caller", format!("caller-{id}")),
    ];
    post(http.served.addr(), &message, &headers).await
}

/// Stateless requests are served in the task of their HTTP exchange once the server has
/// offered its direct handler (the first ones may still take the shared connection): with and
/// without middleware, each is served alike, middleware sees it with its revision, handlers see
/// the transport's and the middleware's extensions, and progress and logs reach its stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_calls_are_served_alike_on_every_path() {
    let seen = Seen::default();
    let with_middleware = Server::builder(Implementation::new("server-http-test", "1.0.0"))
        .middleware(Recorder(seen.clone()))
        .middleware(CallerFromHeader);
    let plain = Server::builder(Implementation::new("server-http-test", "1.0.0"));
    for (builder, recorded) in [(with_middleware, true), (plain, false)] {
        let server = builder
            .tool(
                Tool::new("slow"),
                |cx: ToolContext, args: Steps| async move {
                    for i in 1..=args.steps {
                        cx.progress(f64::from(i), None, None).await;
                        cx.log(LoggingLevel::Info, format!("step {i}")).await;
                    }
                    "done"
                },
            )
            .tool(
                Tool::new("whoami"),
                |cx: ToolContext, _args: NoArgs| async move {
                    let caller = cx.extensions().get::<Caller>().map(|c| c.0.clone());
                    let parts = cx.extensions().get::<http::request::Parts>().is_some();
                    format!("{caller:?} {parts}")
                },
            )
            .build()
            .unwrap();
        let http = Http::start(server).await;
        for id in 1..=20 {
            let mut answer = stateless_call(&http, id, "whoami", json!({})).await;
            assert_eq!(answer.status, StatusCode::OK);
            let result = answer.next_message().await.unwrap();
            assert_eq!(result["id"], id);
            assert_eq!(result["result"]["resultType"], "complete");
            let expected = if recorded {
                format!("Some(\"caller-{id}\") true")
            } else {
                "None true".to_owned()
            };
            assert_eq!(result["result"]["content"][0]["text"], expected, "{result}");

            let mut answer = stateless_call(&http, 100 + id, "slow", json!({"steps": 2})).await;
            assert!(answer.is_sse(), "progress turns the answer into a stream");
            let (mut progress, mut logs) = (0, 0);
            let result = loop {
                let m = answer.next_message().await.expect("the result");
                match m["method"].as_str() {
                    Some("notifications/progress") => {
                        assert_eq!(m["params"]["progressToken"], 100 + id);
                        progress += 1;
                    }
                    Some("notifications/message") => logs += 1,
                    Some(other) => panic!("unexpected {other}"),
                    None => break m,
                }
            };
            assert_eq!((progress, logs), (2, 2));
            assert_eq!(result["id"], 100 + id);
            assert_eq!(result["result"]["content"][0]["text"], "done");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 40, "middleware saw every request");
    assert!(
        seen.iter()
            .all(|(m, v)| m == "tools/call" && v.as_deref() == Some("2026-07-28")),
        "{seen:?}"
    );
}
