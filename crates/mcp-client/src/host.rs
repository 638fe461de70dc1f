//! A host: one client, one session per configured server, and the aggregated view across them.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use mcp_client::{Client, Host, config::HostConfig};
//! use mcp_types::Implementation;
//!
//! let config = HostConfig::from_json(r#"{"mcpServers": {
//!     "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]}
//! }}"#)?;
//! let host = Host::new(Client::builder(Implementation::new("my-host", "1.0.0")).build(), config);
//! for (server, result) in host.connect_all().await {
//!     if let Err(error) = result {
//!         eprintln!("{server}: {error}");
//!     }
//! }
//! let tools = host.list_tools().await;
//! for tool in &tools.items {
//!     println!("{} (from {})", tool.name, tool.server);
//! }
//! let result = host.call_tool("everything__echo", serde_json::json!({"message": "hi"})).await?;
//! # let _ = result; Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use mcp_types::{CallToolResult, GetPromptResult, Prompt, ReadResourceResult, Resource, Tool};
use serde::Serialize;
use tokio::sync::Mutex as AsyncMutex;

use crate::client::Client;
use crate::config::{HostConfig, ServerConfig};
use crate::error::{CallError, ConnectError};
use crate::handler::BoxFuture;
use crate::names::NameTable;
use crate::session::ClientSession;

/// A running server process (or any other resource) that a [`Connector`] opened for a session
/// and that must be shut down with it.
pub trait ServerProcess: Send + Sync + 'static {
    /// Stops it (gracefully where possible).
    fn shutdown(&self) -> BoxFuture<'_, ()>;
    /// Whether it is known to have exited.
    fn has_exited(&self) -> bool;
    /// The operating system's process id, if it is a process that still runs.
    fn id(&self) -> Option<u32> {
        None
    }
}

#[cfg(feature = "stdio")]
impl ServerProcess for mcp_transport_stdio::ChildProcess {
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Err(error) = mcp_transport_stdio::ChildProcess::shutdown(self).await {
                tracing::debug!(%error, "server process shutdown failed");
            }
        })
    }

    fn has_exited(&self) -> bool {
        self.try_status().is_some()
    }

    fn id(&self) -> Option<u32> {
        mcp_transport_stdio::ChildProcess::id(self)
    }
}

/// What a [`Connector`] returns: the connection, and the process behind it if any.
pub struct Transport {
    /// The connection to run the session over.
    pub connection: mcp_jsonrpc::Connection,
    /// The process to shut down when the session ends.
    pub process: Option<Box<dyn ServerProcess>>,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("process", &self.process.is_some())
            .finish_non_exhaustive()
    }
}

/// Opens the transport for a configured server. The default, [`DefaultConnector`], starts
/// `command` entries as child processes and (with the `http` feature) reaches `url` entries
/// over Streamable HTTP; supply your own with [`Host::with_connector`] to open transports
/// differently (for example with an OAuth provider).
pub trait Connector: Send + Sync + 'static {
    /// Opens a transport to the server `name` configured as `config`.
    fn open<'a>(
        &'a self,
        name: &'a str,
        config: &'a ServerConfig,
    ) -> BoxFuture<'a, Result<Transport, ConnectError>>;
}

/// Starts stdio servers as child processes (with the `stdio` feature) and connects `url`
/// entries over Streamable HTTP with their configured headers (with the `http` feature; a
/// server that refuses Streamable HTTP is tried with the 2024-11-05 HTTP+SSE transport, and an
/// entry with `"type": "sse"` uses that transport directly). Without a feature, such entries
/// are refused with [`ConnectError::Unsupported`].
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultConnector;

impl Connector for DefaultConnector {
    fn open<'a>(
        &'a self,
        name: &'a str,
        config: &'a ServerConfig,
    ) -> BoxFuture<'a, Result<Transport, ConnectError>> {
        Box::pin(async move {
            match config {
                #[cfg(feature = "stdio")]
                ServerConfig::Stdio(stdio) => {
                    let mut command = mcp_transport_stdio::ServerCommand::new(&stdio.command)
                        .args(&stdio.args)
                        .envs(&stdio.env);
                    if let Some(cwd) = &stdio.cwd {
                        command = command.current_dir(cwd);
                    }
                    let (connection, child) =
                        command.spawn().map_err(|source| ConnectError::Spawn {
                            command: stdio.command.clone(),
                            source,
                        })?;
                    Ok(Transport {
                        connection,
                        process: Some(Box::new(child)),
                    })
                }
                #[cfg(not(feature = "stdio"))]
                ServerConfig::Stdio(_) => Err(ConnectError::Unsupported(format!(
                    "server `{name}` is a stdio server, but mcp-client was built without its `stdio` feature"
                ))),
                #[cfg(feature = "http")]
                ServerConfig::Http(http) => open_http(name, http).await,
                #[cfg(not(feature = "http"))]
                ServerConfig::Http(http) => Err(ConnectError::Unsupported(format!(
                    "server `{name}` is reached over HTTP ({}), but mcp-client was built without its `http` feature (or use Host::with_connector)",
                    http.url
                ))),
            }
        })
    }
}

/// Connects a `url` entry: Streamable HTTP with the HTTP+SSE fallback, or HTTP+SSE alone for
/// `"type": "sse"`.
#[cfg(feature = "http")]
async fn open_http(
    name: &str,
    config: &crate::config::RemoteServerConfig,
) -> Result<Transport, ConnectError> {
    use mcp_transport_http::client::{ClientMode, StreamableHttpClient};
    let mut headers = http::HeaderMap::new();
    for (header, value) in &config.headers {
        let invalid = |what: &str| {
            ConnectError::Unsupported(format!(
                "server `{name}`: header `{header}` has an invalid {what}"
            ))
        };
        let header_name =
            http::HeaderName::from_bytes(header.as_bytes()).map_err(|_| invalid("name"))?;
        let header_value = http::HeaderValue::from_str(value).map_err(|_| invalid("value"))?;
        headers.append(header_name, header_value);
    }
    let mode = if config.legacy_sse {
        ClientMode::HttpSse
    } else {
        ClientMode::Auto
    };
    let transport = |error: mcp_transport_http::client::HttpError| {
        ConnectError::Transport(mcp_jsonrpc::TransportError::from(error))
    };
    let client = StreamableHttpClient::builder(config.url.clone())
        .headers(headers)
        .mode(mode)
        .build()
        .map_err(transport)?;
    let (connection, handle) = client.connect().await.map_err(transport)?;
    Ok(Transport {
        connection,
        process: Some(Box::new(handle)),
    })
}

/// An HTTP connection "shuts down" by ending its session (`DELETE` with the session id).
#[cfg(feature = "http")]
impl ServerProcess for mcp_transport_http::client::HttpClientHandle {
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.close().await })
    }

    fn has_exited(&self) -> bool {
        self.is_closed()
    }
}

struct Connected {
    session: ClientSession,
    process: Option<Box<dyn ServerProcess>>,
}

struct ServerSlot {
    config: ServerConfig,
    connected: AsyncMutex<Option<Connected>>,
}

/// The state of one server in a [`Host`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerStatus {
    /// Never connected, or shut down.
    Disconnected,
    /// A live session.
    Connected,
    /// The session ended on its own (the process exited or the connection dropped); see
    /// [`Host::reconnect`].
    Closed,
}

/// One item aggregated across servers.
#[derive(Debug, Clone)]
pub struct HostItem<T> {
    /// The collision-free name to route by (`server__item`).
    pub name: String,
    /// The server it comes from.
    pub server: String,
    /// The item as the server listed it.
    pub item: T,
}

/// An aggregated list: what every reachable server returned, and which servers failed.
#[derive(Debug)]
pub struct Listing<T> {
    /// The items, server by server in name order.
    pub items: Vec<HostItem<T>>,
    /// Servers that could not be listed, with why.
    pub failures: Vec<(String, CallError)>,
}

#[derive(Default)]
struct Routes {
    tools: NameTable,
    resources: NameTable,
    prompts: NameTable,
}

/// Keeps sessions with several servers and routes calls to them by collision-free names.
pub struct Host {
    client: Client,
    connector: Arc<dyn Connector>,
    servers: BTreeMap<String, ServerSlot>,
    routes: Mutex<Routes>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("servers", &self.servers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Host {
    /// A host for the servers of `config`, all connected through `client`. Nothing is
    /// started until [`Host::connect_all`] or [`Host::connect`].
    pub fn new(client: Client, config: HostConfig) -> Self {
        let servers = config
            .servers
            .into_iter()
            .map(|(name, config)| {
                (
                    name,
                    ServerSlot {
                        config,
                        connected: AsyncMutex::new(None),
                    },
                )
            })
            .collect();
        Self {
            client,
            connector: Arc::new(DefaultConnector),
            servers,
            routes: Mutex::new(Routes::default()),
        }
    }

    /// Uses `connector` to open transports (for example one that also handles `url` entries).
    pub fn with_connector(mut self, connector: impl Connector) -> Self {
        self.connector = Arc::new(connector);
        self
    }

    /// The configured server names, in order.
    pub fn server_names(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }

    /// How `name` is configured.
    pub fn server_config(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.get(name).map(|slot| &slot.config)
    }

    fn slot(&self, name: &str) -> Result<&ServerSlot, CallError> {
        self.servers
            .get(name)
            .ok_or_else(|| CallError::NotFound(format!("no server named `{name}` in the host")))
    }

    /// Connects `name` if it is not connected (a closed session is replaced) and returns its
    /// session.
    pub async fn connect(&self, name: &str) -> Result<ClientSession, ConnectError> {
        let slot = self.servers.get(name).ok_or_else(|| {
            ConnectError::Unsupported(format!("no server named `{name}` in the host"))
        })?;
        let mut connected = slot.connected.lock().await;
        if let Some(current) = connected.as_ref() {
            if !current.session.is_closed() {
                return Ok(current.session.clone());
            }
        }
        if let Some(old) = connected.take() {
            shutdown(old).await;
        }
        let fresh = self.open(name, &slot.config).await?;
        let session = fresh.session.clone();
        *connected = Some(fresh);
        Ok(session)
    }

    async fn open(&self, name: &str, config: &ServerConfig) -> Result<Connected, ConnectError> {
        let transport = self.connector.open(name, config).await?;
        match self.client.connect(transport.connection).await {
            Ok(session) => Ok(Connected {
                session,
                process: transport.process,
            }),
            Err(error) => {
                if let Some(process) = transport.process {
                    process.shutdown().await;
                }
                Err(error)
            }
        }
    }

    /// Connects every server, one after another, and reports each outcome.
    pub async fn connect_all(&self) -> Vec<(String, Result<ClientSession, ConnectError>)> {
        let mut outcomes = Vec::with_capacity(self.servers.len());
        for name in self.servers.keys() {
            let outcome = self.connect(name).await;
            if let Err(error) = &outcome {
                tracing::warn!(server = %name, %error, "could not connect");
            }
            outcomes.push((name.clone(), outcome));
        }
        outcomes
    }

    /// Drops `name`'s session (shutting its process down) and connects it again: the way back
    /// after a server crashed.
    pub async fn reconnect(&self, name: &str) -> Result<ClientSession, ConnectError> {
        let slot = self.servers.get(name).ok_or_else(|| {
            ConnectError::Unsupported(format!("no server named `{name}` in the host"))
        })?;
        let mut connected = slot.connected.lock().await;
        if let Some(old) = connected.take() {
            shutdown(old).await;
        }
        let fresh = self.open(name, &slot.config).await?;
        let session = fresh.session.clone();
        *connected = Some(fresh);
        Ok(session)
    }

    /// Closes `name`'s session and shuts its process down.
    pub async fn disconnect(&self, name: &str) {
        if let Some(slot) = self.servers.get(name) {
            if let Some(old) = slot.connected.lock().await.take() {
                shutdown(old).await;
            }
        }
    }

    /// Closes every session and shuts every process down.
    pub async fn shutdown(&self) {
        for name in self.servers.keys() {
            self.disconnect(name).await;
        }
    }

    /// The live session of `name`, if it has one.
    pub async fn session(&self, name: &str) -> Option<ClientSession> {
        let slot = self.servers.get(name)?;
        let connected = slot.connected.lock().await;
        connected
            .as_ref()
            .filter(|c| !c.session.is_closed())
            .map(|c| c.session.clone())
    }

    /// The process id of `name`'s server process, when it runs as a child process.
    pub async fn process_id(&self, name: &str) -> Option<u32> {
        let slot = self.servers.get(name)?;
        let connected = slot.connected.lock().await;
        connected.as_ref()?.process.as_ref()?.id()
    }

    /// The state of `name` (`None`: no such server).
    pub async fn status(&self, name: &str) -> Option<ServerStatus> {
        let slot = self.servers.get(name)?;
        let connected = slot.connected.lock().await;
        Some(match connected.as_ref() {
            None => ServerStatus::Disconnected,
            Some(c) if c.session.is_closed() => ServerStatus::Closed,
            Some(c) if c.process.as_ref().is_some_and(|p| p.has_exited()) => ServerStatus::Closed,
            Some(_) => ServerStatus::Connected,
        })
    }

    async fn live_sessions(&self) -> Vec<(String, ClientSession)> {
        let mut sessions = Vec::new();
        for name in self.servers.keys() {
            if let Some(session) = self.session(name).await {
                sessions.push((name.clone(), session));
            }
        }
        sessions
    }

    /// Every tool of every connected server that offers tools, with collision-free names.
    pub async fn list_tools(&self) -> Listing<Tool> {
        let mut table = NameTable::new();
        let mut listing = Listing {
            items: Vec::new(),
            failures: Vec::new(),
        };
        for (server, session) in self.live_sessions().await {
            if !session.offers("tools") {
                continue;
            }
            match session.list_all_tools().await {
                Ok(tools) => {
                    for tool in tools {
                        let name = table.insert(&server, &tool.name);
                        listing.items.push(HostItem {
                            name,
                            server: server.clone(),
                            item: tool,
                        });
                    }
                }
                Err(error) => listing.failures.push((server, error)),
            }
        }
        if let Ok(mut routes) = self.routes.lock() {
            routes.tools = table;
        }
        listing
    }

    /// Every resource of every connected server that offers resources. Names come from each
    /// resource's `name`; reading routes to its URI.
    pub async fn list_resources(&self) -> Listing<Resource> {
        let mut table = NameTable::new();
        let mut listing = Listing {
            items: Vec::new(),
            failures: Vec::new(),
        };
        for (server, session) in self.live_sessions().await {
            if !session.offers("resources") {
                continue;
            }
            match session.list_all_resources().await {
                Ok(resources) => {
                    for resource in resources {
                        let name = table.insert_as(&server, &resource.name, &resource.uri);
                        listing.items.push(HostItem {
                            name,
                            server: server.clone(),
                            item: resource,
                        });
                    }
                }
                Err(error) => listing.failures.push((server, error)),
            }
        }
        if let Ok(mut routes) = self.routes.lock() {
            routes.resources = table;
        }
        listing
    }

    /// Every prompt of every connected server that offers prompts.
    pub async fn list_prompts(&self) -> Listing<Prompt> {
        let mut table = NameTable::new();
        let mut listing = Listing {
            items: Vec::new(),
            failures: Vec::new(),
        };
        for (server, session) in self.live_sessions().await {
            if !session.offers("prompts") {
                continue;
            }
            match session.list_all_prompts().await {
                Ok(prompts) => {
                    for prompt in prompts {
                        let name = table.insert(&server, &prompt.name);
                        listing.items.push(HostItem {
                            name,
                            server: server.clone(),
                            item: prompt,
                        });
                    }
                }
                Err(error) => listing.failures.push((server, error)),
            }
        }
        if let Ok(mut routes) = self.routes.lock() {
            routes.prompts = table;
        }
        listing
    }

    fn route(
        &self,
        kind: &str,
        pick: impl Fn(&Routes) -> &NameTable,
        name: &str,
    ) -> Result<(String, String), CallError> {
        let routes = self
            .routes
            .lock()
            .map_err(|_| CallError::NotFound("the host's routing table is unavailable".into()))?;
        pick(&routes)
            .route(name)
            .map(|route| (route.server.clone(), route.name.clone()))
            .ok_or_else(|| {
                CallError::NotFound(format!(
                    "no {kind} named `{name}` (list {kind}s through the host first)"
                ))
            })
    }

    async fn routed_session(&self, server: &str) -> Result<ClientSession, CallError> {
        self.slot(server)?;
        self.session(server).await.ok_or_else(|| {
            CallError::Closed(format!(
                "server `{server}` is not connected (see Host::reconnect)"
            ))
        })
    }

    /// Calls the tool listed as `name` by [`Host::list_tools`] on its server.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<CallToolResult, CallError> {
        let (server, tool) = self.route("tool", |r| &r.tools, name)?;
        self.routed_session(&server)
            .await?
            .call_tool(tool, arguments)
            .await
    }

    /// Reads the resource listed as `name` by [`Host::list_resources`].
    pub async fn read_resource(&self, name: &str) -> Result<ReadResourceResult, CallError> {
        let (server, uri) = self.route("resource", |r| &r.resources, name)?;
        self.routed_session(&server).await?.read_resource(uri).await
    }

    /// Gets the prompt listed as `name` by [`Host::list_prompts`].
    pub async fn get_prompt<K, V>(
        &self,
        name: &str,
        arguments: impl IntoIterator<Item = (K, V)>,
    ) -> Result<GetPromptResult, CallError>
    where
        K: Into<String>,
        V: Into<String>,
    {
        let (server, prompt) = self.route("prompt", |r| &r.prompts, name)?;
        self.routed_session(&server)
            .await?
            .get_prompt(prompt, arguments)
            .await
    }
}

async fn shutdown(connected: Connected) {
    connected.session.close().await;
    if let Some(process) = connected.process {
        process.shutdown().await;
    }
}
