//! The client: its identity, the handlers for server-initiated requests, and connecting.

use std::sync::Arc;
use std::time::Duration;

use mcp_types::{ClientCapabilities, Implementation, ProtocolVersion};
use serde_json::{Map, Value, json};

use crate::handler::{ElicitationHandler, Roots, SamplingHandler};
use crate::notify::{NotificationCallback, ServerNotification};

/// The newest revision that negotiates with `initialize`: the one a client asks for when it
/// falls back from `server/discover` (or when the stateless era is not configured).
pub use mcp_types::wire::latest_session_version;

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
    pub(crate) discover_timeout: Duration,
    pub(crate) max_pages: usize,
    pub(crate) max_concurrent_requests: usize,
    pub(crate) max_input_rounds: usize,
    pub(crate) cache_entries: usize,
    pub(crate) subscription_buffer: usize,
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
                protocol_version: ProtocolVersion::LATEST,
                min_protocol_version: ProtocolVersion::ALL[0],
                request_timeout: Some(Duration::from_secs(60)),
                initialize_timeout: Duration::from_secs(30),
                discover_timeout: Duration::from_secs(10),
                max_pages: 1000,
                max_concurrent_requests: 64,
                max_input_rounds: 8,
                cache_entries: 0,
                subscription_buffer: 64,
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
    /// [`ClientSession::notifications`](crate::ClientSession::notifications)).
    pub fn on_notification(
        mut self,
        callback: impl Fn(&ServerNotification) + Send + Sync + 'static,
    ) -> Self {
        self.shared.on_notification = Some(Arc::new(callback));
        self
    }

    /// How many notifications [`ClientSession::notifications`](crate::ClientSession::notifications) buffers per receiver (default
    /// 256); a receiver that falls further behind skips the oldest.
    pub fn notification_buffer(mut self, capacity: usize) -> Self {
        self.shared.notification_buffer = capacity.max(1);
        self
    }

    /// The newest revision the client speaks (default: the newest known,
    /// [`ProtocolVersion::LATEST`]). With a session revision here (2025-11-25 or older) the
    /// client never sends `server/discover` and asks for this revision in `initialize`.
    pub fn protocol_version(mut self, version: ProtocolVersion) -> Self {
        self.shared.protocol_version = version;
        self
    }

    /// The oldest revision the client accepts from the server (default 2024-11-05). With a
    /// stateless revision here the client never falls back to `initialize`.
    pub fn min_protocol_version(mut self, version: ProtocolVersion) -> Self {
        self.shared.min_protocol_version = version;
        self
    }

    /// How long `server/discover` may take before the client treats the server as one from
    /// before the stateless era and falls back to `initialize` (default 10 s). The probe never
    /// gets more than half of what is left of [`initialize_timeout`](Self::initialize_timeout),
    /// the budget of the whole connection attempt, so that the fallback has time too.
    pub fn discover_timeout(mut self, timeout: Duration) -> Self {
        self.shared.discover_timeout = timeout;
        self
    }

    /// How many `input_required` rounds one `tools/call`, `prompts/get` or `resources/read`
    /// may take on a stateless session before it fails with [`CallError::RoundsExceeded`]
    /// (default 8).
    ///
    /// [`CallError::RoundsExceeded`]: crate::CallError::RoundsExceeded
    pub fn max_input_rounds(mut self, rounds: usize) -> Self {
        self.shared.max_input_rounds = rounds;
        self
    }

    /// Caches list results (`tools/list`, `prompts/list`, `resources/list`,
    /// `resources/templates/list`, one entry per page) and `server/discover` for as long as
    /// their `ttlMs` says, keeping at most `entries` of them per session (default 0: no cache).
    /// Only stateless servers send `ttlMs`; a result without it, or with `0`, is not cached. A
    /// `list_changed` notification drops the matching entries.
    pub fn response_cache(mut self, entries: usize) -> Self {
        self.shared.cache_entries = entries;
        self
    }

    /// How many notifications each [`ClientSession::listen`](crate::ClientSession::listen) subscription buffers (default
    /// 64); when its reader falls behind, newer notifications are dropped with a warning.
    pub fn subscription_buffer(mut self, capacity: usize) -> Self {
        self.shared.subscription_buffer = capacity.max(1);
        self
    }

    /// The default timeout of every call (default 60 s; `None`: wait forever). Each call can
    /// override it with [`ClientSession::with_timeout`](crate::ClientSession::with_timeout).
    pub fn request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.shared.request_timeout = timeout;
        self
    }

    /// How long connecting may take in all (default 30 s): the `server/discover` probe (at
    /// most [`discover_timeout`](Self::discover_timeout) of it), its retries and `initialize`.
    /// When the probe runs out of time, `initialize` gets what is left; with nothing left the
    /// connection fails with a timeout.
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
