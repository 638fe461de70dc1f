//! The client: its identity, the handlers for server-initiated requests, and connecting.

use std::sync::Arc;
use std::time::Duration;

use mcp_jsonrpc::Connection;
use mcp_types::{ClientCapabilities, Era, Implementation, ProtocolVersion};
use serde_json::{Map, Value, json};

use crate::error::ConnectError;
use crate::handler::{ElicitationHandler, Roots, SamplingHandler};
use crate::notify::{NotificationCallback, ServerNotification};
use crate::session::ClientSession;

/// The newest revision that negotiates with `initialize`, the one a client asks for by default.
pub fn latest_session_version() -> ProtocolVersion {
    ProtocolVersion::ALL
        .iter()
        .copied()
        .filter(|v| v.era() == Era::Session)
        .max()
        .unwrap_or(ProtocolVersion::V2024_11_05)
}

/// An MCP client: who it is and how it answers the server. Cheap to clone; one client can hold
/// sessions with many servers.
///
/// ```no_run
/// # async fn run(connection: mcp_jsonrpc::Connection) -> Result<(), Box<dyn std::error::Error>> {
/// use mcp_client::Client;
/// use mcp_types::Implementation;
///
/// let client = Client::builder(Implementation::new("my-app", "1.0.0")).build();
/// let session = client.connect(connection).await?;
/// for tool in session.list_all_tools().await? {
///     println!("{}", tool.name);
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    pub(crate) shared: Arc<ClientShared>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("info", &self.shared.info)
            .field("capabilities", &self.capabilities_json())
            .finish_non_exhaustive()
    }
}

pub(crate) struct ClientShared {
    pub(crate) info: Implementation,
    pub(crate) sampling: Option<Arc<dyn SamplingHandler>>,
    pub(crate) elicitation: Option<Arc<dyn ElicitationHandler>>,
    pub(crate) url_elicitation: bool,
    pub(crate) fill_elicitation_defaults: bool,
    pub(crate) roots: Option<Roots>,
    pub(crate) on_notification: Option<NotificationCallback>,
    pub(crate) notification_buffer: usize,
    pub(crate) protocol_version: ProtocolVersion,
    pub(crate) min_protocol_version: ProtocolVersion,
    pub(crate) request_timeout: Option<Duration>,
    pub(crate) initialize_timeout: Duration,
    pub(crate) max_pages: usize,
    pub(crate) max_concurrent_requests: usize,
    pub(crate) experimental: Option<Map<String, Value>>,
}

/// Builds a [`Client`]; see [`Client::builder`].
pub struct ClientBuilder {
    shared: ClientShared,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("info", &self.shared.info)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Starts building a client that introduces itself as `info`.
    pub fn builder(info: Implementation) -> ClientBuilder {
        ClientBuilder {
            shared: ClientShared {
                info,
                sampling: None,
                elicitation: None,
                url_elicitation: false,
                fill_elicitation_defaults: true,
                roots: None,
                on_notification: None,
                notification_buffer: 256,
                protocol_version: latest_session_version(),
                min_protocol_version: ProtocolVersion::V2024_11_05,
                request_timeout: Some(Duration::from_secs(60)),
                initialize_timeout: Duration::from_secs(30),
                max_pages: 1000,
                max_concurrent_requests: 64,
                experimental: None,
            },
        }
    }

    /// The client's implementation info.
    pub fn info(&self) -> &Implementation {
        &self.shared.info
    }

    /// The capabilities this client declares, derived from the handlers it was built with.
    ///
    /// ```
    /// use mcp_client::{Client, Roots};
    /// use mcp_types::Implementation;
    ///
    /// let plain = Client::builder(Implementation::new("a", "1")).build();
    /// assert_eq!(serde_json::to_value(plain.capabilities())?, serde_json::json!({}));
    /// let with_roots = Client::builder(Implementation::new("a", "1")).roots(Roots::new(vec![])).build();
    /// assert_eq!(
    ///     serde_json::to_value(with_roots.capabilities())?,
    ///     serde_json::json!({"roots": {"listChanged": true}})
    /// );
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn capabilities(&self) -> ClientCapabilities {
        // Every field of the value built here is defined by the model, so it always decodes.
        serde_json::from_value(self.capabilities_json()).unwrap_or_default()
    }

    pub(crate) fn capabilities_json(&self) -> Value {
        let shared = &self.shared;
        let mut caps = Map::new();
        if shared.sampling.is_some() {
            caps.insert("sampling".into(), json!({}));
        }
        if shared.elicitation.is_some() {
            let mut modes = Map::new();
            modes.insert("form".into(), json!({}));
            if shared.url_elicitation {
                modes.insert("url".into(), json!({}));
            }
            caps.insert("elicitation".into(), Value::Object(modes));
        }
        if shared.roots.is_some() {
            caps.insert("roots".into(), json!({"listChanged": true}));
        }
        if let Some(experimental) = &shared.experimental {
            caps.insert("experimental".into(), Value::Object(experimental.clone()));
        }
        Value::Object(caps)
    }

    /// Connects over `connection`: sends `initialize`, checks the revision the server answers,
    /// sends `notifications/initialized`, and returns the session.
    ///
    /// The client asks for [`ClientBuilder::protocol_version`] (by default the newest revision
    /// that uses `initialize`) and accepts any older revision the server answers with down to
    /// [`ClientBuilder::min_protocol_version`]; on any other answer it closes the connection and
    /// returns [`ConnectError::UnsupportedVersion`].
    pub async fn connect(&self, connection: Connection) -> Result<ClientSession, ConnectError> {
        ClientSession::start(self.clone(), connection).await
    }
}

impl ClientBuilder {
    /// Answers `sampling/createMessage` with `handler`; declares the `sampling` capability.
    pub fn on_sample(mut self, handler: impl SamplingHandler) -> Self {
        self.shared.sampling = Some(Arc::new(handler));
        self
    }

    /// Answers `elicitation/create` with `handler`; declares the `elicitation` capability (form
    /// mode; see [`ClientBuilder::url_elicitation`]).
    pub fn on_elicit(mut self, handler: impl ElicitationHandler) -> Self {
        self.shared.elicitation = Some(Arc::new(handler));
        self
    }

    /// Whether the elicitation handler also handles URL mode (declared on 2025-11-25 and
    /// later). Off by default.
    pub fn url_elicitation(mut self, enabled: bool) -> Self {
        self.shared.url_elicitation = enabled;
        self
    }

    /// Whether fields a form answer leaves out are filled from the schema's `default`s before
    /// the answer is validated and sent. On by default.
    pub fn fill_elicitation_defaults(mut self, enabled: bool) -> Self {
        self.shared.fill_elicitation_defaults = enabled;
        self
    }

    /// Exposes `roots` to servers (`roots/list`); declares `roots` with `listChanged`.
    pub fn roots(mut self, roots: Roots) -> Self {
        self.shared.roots = Some(roots);
        self
    }

    /// Calls `callback` for every notification the server sends, in order, on the connection's
    /// reader: it must return quickly (hand work off to a task or use
    /// [`ClientSession::notifications`]).
    pub fn on_notification(
        mut self,
        callback: impl Fn(&ServerNotification) + Send + Sync + 'static,
    ) -> Self {
        self.shared.on_notification = Some(Arc::new(callback));
        self
    }

    /// How many notifications [`ClientSession::notifications`] buffers per receiver (default
    /// 256); a receiver that falls further behind skips the oldest.
    pub fn notification_buffer(mut self, capacity: usize) -> Self {
        self.shared.notification_buffer = capacity.max(1);
        self
    }

    /// The revision to ask for in `initialize` (default: the newest that uses `initialize`).
    /// A stateless revision (2026-07-28) is not accepted here and keeps the default.
    pub fn protocol_version(mut self, version: ProtocolVersion) -> Self {
        if version.era() == Era::Session {
            self.shared.protocol_version = version;
        } else {
            tracing::warn!(%version, "not an initialize revision; keeping the default");
        }
        self
    }

    /// The oldest revision the client accepts from the server (default 2024-11-05).
    pub fn min_protocol_version(mut self, version: ProtocolVersion) -> Self {
        self.shared.min_protocol_version = version;
        self
    }

    /// The default timeout of every call (default 60 s; `None`: wait forever). Each call can
    /// override it with [`ClientSession::with_timeout`].
    pub fn request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.shared.request_timeout = timeout;
        self
    }

    /// How long `initialize` may take (default 30 s).
    pub fn initialize_timeout(mut self, timeout: Duration) -> Self {
        self.shared.initialize_timeout = timeout;
        self
    }

    /// The most pages `list_all_*` fetches before giving up (default 1000).
    pub fn max_pages(mut self, pages: usize) -> Self {
        self.shared.max_pages = pages.max(1);
        self
    }

    /// How many server-initiated requests are handled at once (default 64); more wait.
    pub fn max_concurrent_requests(mut self, limit: usize) -> Self {
        self.shared.max_concurrent_requests = limit.max(1);
        self
    }

    /// Declares experimental capabilities.
    pub fn experimental_capabilities(mut self, capabilities: Map<String, Value>) -> Self {
        self.shared.experimental = Some(capabilities);
        self
    }

    /// Builds the client.
    pub fn build(self) -> Client {
        Client {
            shared: Arc::new(self.shared),
        }
    }
}
