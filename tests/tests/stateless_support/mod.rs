//! Shared by the `stateless_*` tests: a server exercising every feature of the stateless
//! revision (2026-07-28), and raw clients that speak it over stdio framing (newline-delimited
//! JSON on a byte stream) and over Streamable HTTP (hyper), so each test runs on both.
#![allow(dead_code)]

use std::collections::VecDeque;

use http::StatusCode;
use mcp_server::model::{
    CreateMessageRequestParams, ElicitRequestParams, Implementation, InputResponse, LoggingLevel,
};
use mcp_server::prelude::*;
use mcp_server::{InputRequired, ServerBuilder};
pub use mcp_tests::http::{Answer, WAIT};
use mcp_tests::http::{Served, post};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

pub const V2026: &str = "2026-07-28";

#[derive(Deserialize, JsonSchema)]
pub struct Text {
    pub text: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct Name {
    pub name: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct City {
    pub city: String,
}

/// The tools, prompts and resources the `stateless_*` tests call. The handlers are written once
/// and never look at the protocol revision.
pub fn builder() -> ServerBuilder {
    Server::builder(Implementation::new("stateless-test-server", "1.2.3"))
        .instructions("Test server for the stateless revision")
        .tool(
            Tool::new("echo").description("Echoes the text"),
            |_cx: ToolContext, args: Text| async move { args.text },
        )
        .tool(
            Tool::new("work").description("Reports progress and logs at three levels"),
            |cx: ToolContext, _args: NoArgs| async move {
                for step in 1..=3 {
                    cx.progress(f64::from(step), Some(3.0), Some("working")).await;
                }
                cx.log(LoggingLevel::Debug, "debug detail").await;
                cx.log(LoggingLevel::Info, "info note").await;
                cx.log(LoggingLevel::Warning, "warning sign").await;
                "worked"
            },
        )
        .tool(
            Tool::new("greet").description("Asks for the user's name"),
            |cx: ToolContext, _args: NoArgs| async move {
                match cx.elicit::<Name>("name", "What is your name?").await? {
                    Elicitation::Accepted(n) => Ok::<_, ToolError>(format!("Hello, {}!", n.name)),
                    _ => Ok("Hello, stranger!".to_owned()),
                }
            },
        )
        .tool(
            Tool::new("trip").description("Asks for a name, then a city"),
            |cx: ToolContext, _args: NoArgs| async move {
                let name = match cx.elicit::<Name>("name", "Your name?").await? {
                    Elicitation::Accepted(n) => n.name,
                    _ => "nobody".to_owned(),
                };
                let city = match cx.elicit::<City>("city", "Your city?").await? {
                    Elicitation::Accepted(c) => c.city,
                    _ => "nowhere".to_owned(),
                };
                Ok::<_, ToolError>(format!("{name} travels to {city}"))
            },
        )
        .tool(
            Tool::new("ask_model").description("Samples the client's model"),
            |cx: ToolContext, _args: NoArgs| async move {
                let answer = cx
                    .sample(
                        "llm",
                        CreateMessageRequestParams::user_text("Capital of France?", 20),
                    )
                    .await?;
                Ok::<_, ToolError>(format!("model: {}", answer.text().unwrap_or_default()))
            },
        )
        .tool(
            Tool::new("count_roots").description("Lists the client's roots"),
            |cx: ToolContext, _args: NoArgs| async move {
                let roots = cx.roots("roots").await?;
                Ok::<_, ToolError>(format!("{} root(s)", roots.len()))
            },
        )
        .tool(
            Tool::new("deploy").description("Asks for confirmation the explicit way, with state"),
            |cx: ToolContext, args: Text| async move {
                if let Some(InputResponse::Elicit(answer)) = cx.input_response("confirm") {
                    let state = cx.input_state().unwrap_or(Value::Null);
                    return Ok::<_, ToolError>(format!(
                        "{} {} (state {state})",
                        args.text,
                        answer.action.as_str()
                    ));
                }
                let form: ElicitRequestParams = serde_json::from_value(json!({
                    "mode": "form",
                    "message": format!("Deploy {}?", args.text),
                    "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
                }))
                .map_err(ToolError::execution)?;
                Err(InputRequired::new()
                    .elicit("confirm", form)
                    .state(json!({"target": args.text}))
                    .into())
            },
        )
        .tool(
            Tool::new("change_tools").description("Adds and removes a tool"),
            |cx: ToolContext, _args: NoArgs| async move {
                cx.server()
                    .add_tool(Tool::new("ephemeral"), |_cx: ToolContext, _a: NoArgs| async {
                        "here"
                    })
                    .map_err(ToolError::execution)?;
                cx.server().remove_tool("ephemeral");
                Ok::<_, ToolError>("changed")
            },
        )
        .prompt(
            Prompt::new("intro").description("Asks for a name before writing the prompt"),
            |cx: ToolContext, _args: NoArgs| async move {
                match cx.elicit::<Name>("name", "Who is this for?").await? {
                    Elicitation::Accepted(n) => Ok::<_, ToolError>(format!("Introduce {}", n.name)),
                    _ => Ok("Introduce someone".to_owned()),
                }
            },
        )
        .resource(
            Resource::new("test://doc", "doc")
                .description("A document")
                .mime_type("text/plain"),
            |_cx| async { "the document" },
        )
        .resource(
            Resource::new("test://secret", "secret")
                .description("Asks for a password before reading")
                .mime_type("text/plain"),
            |cx: ToolContext| async move {
                #[derive(Deserialize, JsonSchema)]
                struct Password {
                    password: String,
                }
                match cx.elicit::<Password>("password", "Password?").await? {
                    Elicitation::Accepted(p) if p.password == "open" => {
                        Ok::<_, ToolError>("the secret".to_owned())
                    }
                    _ => Ok("locked".to_owned()),
                }
            },
        )
}

pub fn server() -> Server {
    builder().build().unwrap()
}

/// `_meta` of a stateless request with these client capabilities.
pub fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": V2026,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test-client", "version": "0.0.1"},
    })
}

/// `params` with `_meta` for these capabilities added.
pub fn with_meta(mut params: Value, capabilities: Value) -> Value {
    params["_meta"] = meta(capabilities);
    params
}

pub fn all_capabilities() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {"listChanged": true}})
}

/// The answer to one request: the notifications that came before the response (on stdio: those
/// that name no subscription), the response, and the HTTP status on HTTP.
#[derive(Debug)]
pub struct Outcome {
    pub status: Option<StatusCode>,
    pub notifications: Vec<Value>,
    pub response: Value,
}

impl Outcome {
    pub fn result(&self) -> &Value {
        assert!(
            self.response.get("result").is_some(),
            "expected a result, got {}",
            self.response
        );
        &self.response["result"]
    }

    /// The response to the request `id` (of `method`) in `answer`, with the notifications
    /// before it; server requests among them fail the test unless `requests_allowed`.
    pub async fn read(
        mut answer: Answer,
        id: &Value,
        method: &str,
        requests_allowed: bool,
    ) -> Outcome {
        let mut notifications = Vec::new();
        while let Some(m) = answer.next_message().await {
            if m.get("method").is_some() {
                assert!(
                    requests_allowed || m.get("id").is_none(),
                    "no request on a stateless stream: {m}"
                );
                notifications.push(m);
                continue;
            }
            assert_eq!(m["id"], *id, "the response echoes the id");
            return Outcome {
                status: Some(answer.status),
                notifications,
                response: m,
            };
        }
        panic!("no response to {method}");
    }

    pub fn error_code(&self) -> i64 {
        self.response["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("expected an error, got {}", self.response))
    }

    pub fn error_message(&self) -> &str {
        self.response["error"]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("expected an error, got {}", self.response))
    }

    pub fn text(&self) -> String {
        self.result()["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text in {}", self.response))
            .to_owned()
    }

    /// The status when the transport has one; stdio has none.
    pub fn assert_status(&self, expected: StatusCode) {
        if let Some(status) = self.status {
            assert_eq!(status, expected, "{}", self.response);
        }
    }
}

/// A client of one transport.
pub enum Client {
    Stdio(Stdio),
    Http(Http),
}

impl Client {
    pub fn name(&self) -> &'static str {
        match self {
            Client::Stdio(_) => "stdio",
            Client::Http(_) => "http",
        }
    }

    /// Sends a request and waits for its response.
    pub async fn request(&mut self, method: &str, params: Value) -> Outcome {
        match self {
            Client::Stdio(s) => s.request(method, params).await,
            Client::Http(h) => h.request(method, params).await,
        }
    }

    /// `tools/call` of `name` with `arguments` and capabilities, plus extra params.
    pub async fn call(&mut self, name: &str, arguments: Value, capabilities: Value) -> Outcome {
        self.request(
            "tools/call",
            with_meta(json!({"name": name, "arguments": arguments}), capabilities),
        )
        .await
    }
}

/// Both transports, each serving its own clone of `server`.
pub async fn clients(server: &Server) -> Vec<Client> {
    vec![
        Client::Stdio(Stdio::start(server.clone())),
        Client::Http(Http::start(server.clone()).await),
    ]
}

/// A client on a newline-delimited byte stream served by `Server::serve_io`.
pub struct Stdio {
    writer: WriteHalf<DuplexStream>,
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    next_id: i64,
    /// Messages read while waiting for something else.
    backlog: VecDeque<Value>,
}

impl Stdio {
    pub fn start(server: Server) -> Self {
        let (client, server_end) = tokio::io::duplex(1 << 20);
        let (read, write) = tokio::io::split(server_end);
        tokio::spawn(async move {
            if let Err(e) = server.serve_io(read, write).await {
                eprintln!("stdio server ended: {e}");
            }
        });
        let (read, writer) = tokio::io::split(client);
        Stdio {
            writer,
            lines: BufReader::new(read).lines(),
            next_id: 1,
            backlog: VecDeque::new(),
        }
    }

    pub async fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    /// The next message from the server.
    pub async fn recv(&mut self) -> Value {
        if let Some(m) = self.backlog.pop_front() {
            return m;
        }
        let line = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("the server wrote in time")
            .unwrap()
            .expect("the server is still there");
        serde_json::from_str(&line).unwrap()
    }

    pub fn fresh_id(&mut self) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Sends a request with `id` and collects what comes before its response (notifications
    /// that belong to no subscription), keeping everything else for later.
    pub async fn request_with_id(&mut self, id: Value, method: &str, params: Value) -> Outcome {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.response_to(&id).await
    }

    pub async fn response_to(&mut self, id: &Value) -> Outcome {
        let mut notifications = Vec::new();
        let mut skipped = Vec::new();
        loop {
            let m = self.recv().await;
            if m.get("id") == Some(id) && m.get("method").is_none() {
                self.backlog.extend(skipped);
                return Outcome {
                    status: None,
                    notifications,
                    response: m,
                };
            }
            let subscribed = m["params"]["_meta"]
                .get("io.modelcontextprotocol/subscriptionId")
                .is_some();
            if m.get("id").is_none() && !subscribed {
                notifications.push(m);
            } else {
                skipped.push(m);
            }
        }
    }

    pub async fn request(&mut self, method: &str, params: Value) -> Outcome {
        let id = json!(self.fresh_id());
        self.request_with_id(id, method, params).await
    }
}

/// A client of `StreamableHttpService` over raw HTTP/1.1, one connection per POST.
pub struct Http {
    pub addr: std::net::SocketAddr,
    next_id: i64,
    /// The server [`Http::start`] started, stopped with this client.
    _served: Option<Served>,
}

/// The `Mcp-Name` of a request, when its method has one.
fn mcp_name(method: &str, params: &Value) -> Option<String> {
    let field = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return None,
    };
    params.get(field).and_then(Value::as_str).map(str::to_owned)
}

impl Http {
    pub async fn start(server: Server) -> Self {
        let served = Served::server(&server).await;
        Http {
            addr: served.addr(),
            next_id: 1,
            _served: Some(served),
        }
    }

    /// Another client of the service at `addr`.
    pub fn connect(addr: std::net::SocketAddr) -> Self {
        Http {
            addr,
            next_id: 1,
            _served: None,
        }
    }

    /// POSTs one message with the given headers (none added) on a fresh connection.
    pub async fn post_raw(&self, message: &Value, headers: &[(&str, String)]) -> Answer {
        post(self.addr, message, headers).await
    }

    /// POSTs a stateless request with the headers the revision requires (the version header
    /// names `_meta`'s version, or 2026-07-28 when `_meta` has none).
    pub async fn post(&mut self, method: &str, params: Value) -> (Value, Answer) {
        let id = json!(self.next_id);
        self.next_id += 1;
        let version = params["_meta"]["io.modelcontextprotocol/protocolVersion"]
            .as_str()
            .unwrap_or(V2026)
            .to_owned();
        let mut headers = vec![
            ("mcp-protocol-version", version),
            ("mcp-method", method.to_owned()),
        ];
        if let Some(name) = mcp_name(method, &params) {
            headers.push(("mcp-name", name));
        }
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let answer = self.post_raw(&message, &headers).await;
        (id, answer)
    }

    /// `tools/call` with `params` (name, arguments and anything else) and every client
    /// capability.
    pub async fn call_with(&mut self, params: Value) -> Outcome {
        self.request("tools/call", with_meta(params, all_capabilities()))
            .await
    }

    pub async fn request(&mut self, method: &str, params: Value) -> Outcome {
        let (id, answer) = self.post(method, params).await;
        Outcome::read(answer, &id, method, false).await
    }
}
