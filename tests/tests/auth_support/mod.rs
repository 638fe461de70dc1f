//! What the OAuth tests over real HTTP share (`auth_http_e2e.rs`, `auth_dpop.rs`): an MCP
//! server protected by an authenticator on a loopback port, serving a plain `mcp_jsonrpc`
//! engine handler ([`ToolServer`]); the `mcp_auth::OAuthClient`; a client engine on the HTTP client transport;
//! and `initialize`.

use std::net::SocketAddr;
use std::sync::Arc;

use mcp_auth::{
    ClientMetadata, HeadlessRedirect, HttpClient, HyperHttpClient, OAuthClient, OAuthClientBuilder,
};
use mcp_jsonrpc::{
    CallError, Engine, ErrorObject, Handler, Peer, Request, RequestContext, RequestOptions,
};
use mcp_tests::http::Served;
use mcp_transport_http::client::{HttpClientHandle, StreamableHttpClient};
use mcp_transport_http::server::{Authenticator, HttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// The redirect URI the clients register (the headless handler never opens it).
pub const REDIRECT: &str = "http://127.0.0.1:1/callback";
/// The revision the clients ask for.
pub const VERSION: &str = "2025-11-25";

/// A listener on a free loopback port, and its base URL (`http://127.0.0.1:PORT`).
pub async fn loopback() -> (TcpListener, String) {
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    (listener, base)
}

/// Serves MCP at `/mcp` on `listener` behind `auth`, each connection by an engine running the
/// handler `handler` makes for it; stops when dropped.
pub fn serve<H: Handler, A: Authenticator>(
    listener: TcpListener,
    auth: A,
    handler: impl Fn() -> H + Send + Sync + 'static,
) -> Served {
    let service = StreamableHttpService::builder(move |connection| {
        let handler = handler();
        async move {
            let (_peer, driver) = Engine::builder().start(connection, handler);
            let _ = driver.await;
        }
    })
    .config(HttpServerConfig::default().path("/mcp"))
    .auth(auth)
    .build();
    Served::start_on(listener, service)
}

/// An MCP handler that answers `initialize` as the server `name` (the revision asked for,
/// tools) and `tools/call` with what `tool` makes of the call's params and context; `-32601`
/// for anything else. An observer sees every request first.
pub struct ToolServer {
    name: &'static str,
    tool: fn(&Value, &RequestContext) -> Value,
    observer: Option<Box<Observer>>,
}

/// What sees every request of a [`ToolServer`].
type Observer = dyn Fn(&Request, &RequestContext) + Send + Sync;

impl ToolServer {
    /// The server `name` whose tools answer with `tool`.
    pub fn new(name: &'static str, tool: fn(&Value, &RequestContext) -> Value) -> Self {
        Self {
            name,
            tool,
            observer: None,
        }
    }

    /// Shows every request to `observer` before it is answered.
    pub fn observed(
        mut self,
        observer: impl Fn(&Request, &RequestContext) + Send + Sync + 'static,
    ) -> Self {
        self.observer = Some(Box::new(observer));
        self
    }
}

impl Handler for ToolServer {
    async fn handle_request(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> Result<mcp_jsonrpc::RawJson, ErrorObject> {
        if let Some(observer) = &self.observer {
            observer(&request, &cx);
        }
        let params: Value = request.params_as()?;
        let result = match request.method.as_str() {
            "initialize" => json!({
                "protocolVersion": params["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": self.name, "version": "1"},
            }),
            "tools/call" => (self.tool)(&params, &cx),
            other => return Err(ErrorObject::method_not_found(other)),
        };
        mcp_jsonrpc::RawJson::serialize(&result).map_err(ErrorObject::internal_error)
    }
}

/// The result of a tool call by `subject`: the text `ok`, the subject structured.
pub fn subject_result(subject: Option<String>) -> Value {
    json!({
        "content": [{"type": "text", "text": "ok"}],
        "structuredContent": {"subject": subject},
    })
}

/// An OAuth client registering as `name` and authorizing headlessly, to be built.
pub fn oauth(name: &str) -> OAuthClientBuilder {
    let http: Arc<dyn HttpClient> = Arc::new(HyperHttpClient::new().unwrap());
    OAuthClient::builder(ClientMetadata::new(name, REDIRECT))
        .http_client(http.clone())
        .authorization_handler(HeadlessRedirect::new(http))
}

/// Connects the HTTP client transport to `url` with `oauth` and starts a client engine on it:
/// its peer and the transport's handle.
pub async fn connect(url: &str, oauth: Arc<OAuthClient>) -> (Peer, HttpClientHandle) {
    let client = StreamableHttpClient::builder(url)
        .auth(oauth)
        .build()
        .unwrap();
    let (connection, handle) = client.connect().await.unwrap();
    let (peer, _driver) = Engine::builder().spawn(connection, ());
    (peer, handle)
}

/// Sends `initialize` at [`VERSION`] as the client `name`.
pub async fn initialize(peer: &Peer, name: &str) -> Result<Value, CallError> {
    peer.call(
        "initialize",
        &json!({"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": name, "version": "1"}}),
        RequestOptions::new(),
    )
    .await
}
