//! The client-side features a server may ask for: sampling, elicitation and roots.
//!
//! Each is answered by a handler the application supplies on the
//! [`ClientBuilder`](crate::ClientBuilder); the capabilities the client declares in `initialize`
//! follow from which handlers were given. Handlers are plain async closures:
//!
//! ```
//! use mcp_client::{Client, ElicitationAnswer, ElicitationRequest};
//! use mcp_types::Implementation;
//!
//! let client = Client::builder(Implementation::new("my-app", "1.0.0"))
//!     .on_elicit(|request: ElicitationRequest| async move {
//!         match request {
//!             ElicitationRequest::Form { .. } => Ok(ElicitationAnswer::Decline),
//!             _ => Ok(ElicitationAnswer::Cancel),
//!         }
//!     })
//!     .build();
//! # let _ = client;
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};

use mcp_jsonrpc::ErrorObject;
use mcp_types::{CreateMessageRequestParams, CreateMessageResult, Root};
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::elicit::FormSchema;

/// A boxed, sendable future, the return type of handler trait methods.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// An error a handler returns; it reaches the server as a JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (code {code})")]
pub struct HandlerError {
    /// The JSON-RPC error code.
    pub code: i64,
    /// A short description for the server.
    pub message: String,
}

impl HandlerError {
    /// An error with a code and message.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The user refused the request (code `-1`, as the specification's examples use).
    pub fn rejected(message: impl Into<String>) -> Self {
        Self::new(-1, message)
    }

    /// Something failed inside the client (`-32603`).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(mcp_types::error_codes::INTERNAL_ERROR, message)
    }

    /// The request's params are unusable (`-32602`).
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(mcp_types::error_codes::INVALID_PARAMS, message)
    }

    pub(crate) fn into_error_object(self) -> ErrorObject {
        ErrorObject::new(self.code, self.message)
    }
}

/// Answers `sampling/createMessage`: asks the application's language model for a message.
pub trait SamplingHandler: Send + Sync + 'static {
    /// Produces the model's reply to `request`.
    fn create_message(
        &self,
        request: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, HandlerError>>;
}

impl<F, Fut> SamplingHandler for F
where
    F: Fn(CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<CreateMessageResult, HandlerError>> + Send + 'static,
{
    fn create_message(
        &self,
        request: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, HandlerError>> {
        Box::pin(self(request))
    }
}

/// A server's `elicitation/create` request, in one of its two modes.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ElicitationRequest {
    /// Ask the user to fill in a form.
    Form {
        /// What to tell the user.
        message: String,
        /// The form, parsed from `requestedSchema`.
        schema: FormSchema,
        /// `requestedSchema` as the server sent it.
        requested_schema: Value,
    },
    /// Send the user to a URL (2025-11-25 and later); the answer only says whether they agreed
    /// to go, the interaction itself happens out of band.
    Url {
        /// What to tell the user.
        message: String,
        /// Where to send the user.
        url: String,
        /// The server's id for this elicitation (matched by `notifications/elicitation/complete`).
        elicitation_id: String,
    },
}

/// The user's answer to an [`ElicitationRequest`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitationAnswer {
    /// The user submitted the form (its values) or agreed to open the URL (an empty map).
    Accept(Map<String, Value>),
    /// The user explicitly declined.
    Decline,
    /// The user dismissed the request without choosing.
    Cancel,
}

/// Answers `elicitation/create`: asks the user for input.
///
/// A form answer is checked against the requested schema before it is sent (fields the user left
/// empty are first filled from the schema's `default`s unless
/// [`ClientBuilder::fill_elicitation_defaults`](crate::ClientBuilder::fill_elicitation_defaults)
/// is off); an answer that does not match is not sent, the server gets an error instead.
pub trait ElicitationHandler: Send + Sync + 'static {
    /// Asks the user.
    fn elicit(
        &self,
        request: ElicitationRequest,
    ) -> BoxFuture<'_, Result<ElicitationAnswer, HandlerError>>;
}

impl<F, Fut> ElicitationHandler for F
where
    F: Fn(ElicitationRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ElicitationAnswer, HandlerError>> + Send + 'static,
{
    fn elicit(
        &self,
        request: ElicitationRequest,
    ) -> BoxFuture<'_, Result<ElicitationAnswer, HandlerError>> {
        Box::pin(self(request))
    }
}

/// The roots a client exposes (`roots/list`), shared by every session of the client.
///
/// Changing them with [`Roots::set`] sends `notifications/roots/list_changed` to every connected
/// server.
///
/// ```
/// use mcp_client::Roots;
/// use mcp_types::Root;
///
/// let project: Root = serde_json::from_value(serde_json::json!({"uri": "file:///home/ada/project"}))?;
/// let roots = Roots::new(vec![project]);
/// roots.set(vec![]);
/// assert!(roots.get().is_empty());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Roots {
    inner: Arc<RootsInner>,
}

#[derive(Debug)]
struct RootsInner {
    list: RwLock<Vec<Root>>,
    changed: watch::Sender<u64>,
}

impl Roots {
    /// Roots with an initial list.
    pub fn new(roots: Vec<Root>) -> Self {
        let (changed, _) = watch::channel(0);
        Self {
            inner: Arc::new(RootsInner {
                list: RwLock::new(roots),
                changed,
            }),
        }
    }

    /// The current list.
    pub fn get(&self) -> Vec<Root> {
        match self.inner.list.read() {
            Ok(list) => list.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Replaces the list and tells every connected server.
    pub fn set(&self, roots: Vec<Root>) {
        match self.inner.list.write() {
            Ok(mut list) => *list = roots,
            Err(poisoned) => *poisoned.into_inner() = roots,
        }
        self.inner.changed.send_modify(|generation| {
            *generation = generation.wrapping_add(1);
        });
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }
}
