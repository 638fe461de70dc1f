//! The client's use of the shared request engine (`mcp_jsonrpc::Engine`): starting it over a
//! connection with the client's handler, and the few calls the session makes on the peer.

use std::sync::Arc;
use std::time::Duration;

use mcp_jsonrpc::{
    Connection, Engine, ErrorObject, Handler, Notification, NotificationContext, Peer, RawJson,
    Request, RequestContext, RequestOptions,
};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::incoming::IncomingHandler;

pub use mcp_jsonrpc::Progress;

/// A progress callback.
pub(crate) type ProgressCallback = Arc<dyn Fn(Progress) + Send + Sync>;

/// Adapts the client's dispatcher to the engine's [`Handler`].
struct EngineHandler(IncomingHandler);

fn params_value(raw: Option<&RawValue>) -> Result<Option<Value>, ErrorObject> {
    raw.map(|raw| serde_json::from_str(raw.get()).map_err(ErrorObject::invalid_params))
        .transpose()
}

impl EngineHandler {
    async fn answer(&self, request: &Request) -> Result<RawJson, ErrorObject> {
        let result = self
            .0
            .request(&request.method, request.params.as_deref())
            .await?;
        RawJson::serialize(&result).map_err(ErrorObject::internal_error)
    }
}

impl Handler for EngineHandler {
    async fn handle_request(
        &self,
        request: Request,
        _cx: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        // The telemetry hook of what the server asks (sampling, elicitation, roots).
        #[cfg(feature = "otel")]
        if let Some(telemetry) = crate::otel::installed() {
            use opentelemetry::trace::FutureExt;
            let operation = telemetry.start_received(
                &request.method,
                Some(&request.id),
                request.params.as_deref(),
            );
            let result = self
                .answer(&request)
                .with_context(operation.context())
                .await;
            operation.end(match &result {
                Ok(_) => crate::otel::Outcome::Done(None),
                Err(error) => crate::otel::Outcome::Error(error.code, &error.message),
            });
            return result;
        }
        self.answer(&request).await
    }

    async fn handle_notification(&self, notification: Notification, _cx: NotificationContext) {
        #[cfg(feature = "otel")]
        let operation = crate::otel::installed().map(|telemetry| {
            telemetry.start_received(&notification.method, None, notification.params.as_deref())
        });
        match params_value(notification.params.as_deref()) {
            Ok(params) => self.0.notification(&notification.method, params),
            Err(error) => {
                tracing::debug!(method = %notification.method, %error, "undecodable notification params");
            }
        }
        #[cfg(feature = "otel")]
        if let Some(operation) = operation {
            operation.end(crate::otel::Outcome::Done(None));
        }
    }
}

/// A running connection: the engine's peer handle.
pub(crate) struct Rpc {
    peer: Peer,
    /// The revision negotiated, and when the connection started (telemetry only).
    #[cfg(feature = "otel")]
    observed: Observed,
}

/// What the telemetry hook knows of the connection beyond each message.
#[cfg(feature = "otel")]
struct Observed {
    version: std::sync::OnceLock<mcp_types::ProtocolVersion>,
    started: std::time::Instant,
    /// The transport, as the spans name it.
    transport: crate::otel::Transport,
}

impl Rpc {
    /// Starts the engine over `connection`.
    pub(crate) fn start(
        connection: Connection,
        handler: IncomingHandler,
        max_concurrent_requests: usize,
    ) -> Rpc {
        #[cfg(feature = "otel")]
        let transport = crate::otel::Transport::of(&connection);
        let (peer, _driver) = Engine::builder()
            .max_in_flight(max_concurrent_requests)
            .spawn(connection, EngineHandler(handler));
        Rpc {
            peer,
            #[cfg(feature = "otel")]
            observed: Observed {
                version: std::sync::OnceLock::new(),
                started: std::time::Instant::now(),
                transport,
            },
        }
    }

    /// The revision negotiated: an attribute of the spans from now on.
    #[cfg(feature = "otel")]
    pub(crate) fn set_version(&self, version: mcp_types::ProtocolVersion) {
        let _ = self.observed.version.set(version);
    }

    /// Sends a request and waits for its result. Dropping the future cancels it.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Option<Duration>,
        progress: Option<ProgressCallback>,
        cancellable: bool,
    ) -> Result<Box<RawValue>, mcp_jsonrpc::CallError> {
        let params = params
            .map(|p| mcp_jsonrpc::to_raw(&p))
            .transpose()
            .map_err(mcp_jsonrpc::CallError::Decode)?;
        self.request_raw(method, params, timeout, progress, cancellable)
            .await
    }

    /// [`Rpc::request`] with params already encoded.
    pub(crate) async fn request_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
        timeout: Option<Duration>,
        progress: Option<ProgressCallback>,
        cancellable: bool,
    ) -> Result<Box<RawValue>, mcp_jsonrpc::CallError> {
        let mut options = RequestOptions::new().timeout(timeout);
        if timeout.is_none() {
            options = options.max_timeout(None);
        }
        if let Some(progress) = progress {
            options = options.on_progress(move |p| progress(p));
        }
        if !cancellable {
            options = options.no_cancel();
        }
        // The telemetry hook: every request of the client passes here. Off, a branch on a
        // static.
        #[cfg(feature = "otel")]
        if let Some(telemetry) = crate::otel::installed() {
            use opentelemetry::trace::FutureExt;
            let (operation, params) = self.start_sent(telemetry, method, params);
            let options = operation.options(options);
            let result = self
                .peer
                .request(method, params, options)
                .with_context(operation.context())
                .await;
            operation.end(crate::otel::Outcome::of(&result));
            return result;
        }
        self.peer.request(method, params, options).await
    }

    /// The telemetry of a message being sent: its operation, and `params` with the span's
    /// context in `_meta`.
    #[cfg(feature = "otel")]
    fn start_sent(
        &self,
        telemetry: &'static crate::otel::Telemetry,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> (crate::otel::Operation, Option<Box<RawValue>>) {
        let version = self.observed.version.get().copied();
        let operation =
            telemetry.start(method, params.as_deref(), version, &self.observed.transport);
        let params = operation.inject(params);
        (operation, params)
    }

    /// Sends a notification.
    pub(crate) async fn notify(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<(), crate::error::CallError> {
        let params = params
            .map(|p| mcp_jsonrpc::to_raw(&p))
            .transpose()
            .map_err(crate::error::CallError::Decode)?;
        #[cfg(feature = "otel")]
        if let Some(telemetry) = crate::otel::installed() {
            let (operation, params) = self.start_sent(telemetry, method, params);
            let result = self.peer.notify(method, params).await;
            operation.end(match &result {
                Ok(()) => crate::otel::Outcome::Done(None),
                Err(e) => crate::otel::Outcome::Failed("_OTHER", e.to_string()),
            });
            return result.map_err(Into::into);
        }
        self.peer.notify(method, params).await.map_err(Into::into)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.peer.is_closed()
    }

    /// Waits until the connection has closed and returns why.
    pub(crate) async fn closed(&self) -> String {
        self.closed_signal().await
    }

    /// A future that resolves with the close reason; it does not borrow `self`.
    pub(crate) fn closed_signal(
        &self,
    ) -> impl std::future::Future<Output = String> + Send + 'static {
        let peer = self.peer.clone();
        async move {
            peer.closed().await;
            peer.close_reason()
                .unwrap_or_else(|| "the connection closed".to_owned())
        }
    }

    /// Closes the connection and waits for the engine to finish; pending calls fail.
    pub(crate) async fn close(&self) {
        self.peer.close();
        self.peer.closed().await;
    }
}

impl Drop for Rpc {
    fn drop(&mut self) {
        #[cfg(feature = "otel")]
        if let (Some(telemetry), Some(version)) =
            (crate::otel::installed(), self.observed.version.get())
        {
            telemetry.session_ended(self.observed.started, *version);
        }
        self.peer.close();
    }
}
