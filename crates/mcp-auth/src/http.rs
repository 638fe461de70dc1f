//! The small HTTP interface the OAuth flows use, and its default implementation on hyper-util.

use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::error::HttpError;

pub use crate::http_types::BoxFuture;

/// Sends one HTTP request and returns the whole response.
///
/// Implementations must **not** follow redirects: the OAuth flows read `Location` headers
/// themselves. They should bound the response size and the time spent.
///
/// ```
/// use bytes::Bytes;
/// use mcp_auth::{BoxFuture, HttpClient, HttpError};
///
/// /// Answers every request with 404 (for tests).
/// struct NotFound;
///
/// impl HttpClient for NotFound {
///     fn send(
///         &self,
///         _request: http::Request<Bytes>,
///     ) -> BoxFuture<'_, Result<http::Response<Bytes>, HttpError>> {
///         Box::pin(async {
///             Ok(http::Response::builder().status(404).body(Bytes::new()).unwrap())
///         })
///     }
/// }
/// ```
pub trait HttpClient: Send + Sync {
    /// Sends `request` and returns the response with its complete body.
    fn send(&self, request: Request<Bytes>) -> BoxFuture<'_, Result<Response<Bytes>, HttpError>>;
}

/// Limits of [`HyperHttpClient`].
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct HttpLimits {
    /// Largest accepted response body, in bytes. Default 1 MiB.
    pub max_response_bytes: usize,
    /// Time allowed for one whole exchange, body included. Default 30 s.
    pub timeout: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            max_response_bytes: 1024 * 1024,
            timeout: Duration::from_secs(30),
        }
    }
}

impl HttpLimits {
    /// Sets the largest accepted response body.
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// Sets the time allowed for one exchange.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

#[cfg(feature = "rustls")]
type Connector = mcp_tls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>;
#[cfg(not(feature = "rustls"))]
type Connector = hyper_util::client::legacy::connect::HttpConnector;

/// The default [`HttpClient`]: hyper-util's pooled client over HTTP/1.1 and HTTP/2, with
/// HTTPS through rustls (feature `rustls`, on by default). It never follows redirects.
///
/// Must be created and used inside a Tokio runtime.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use mcp_auth::{HttpClient, HyperHttpClient};
/// let client = HyperHttpClient::new()?;
/// let response = client
///     .send(http::Request::get("https://example.com/").body(bytes::Bytes::new())?)
///     .await?;
/// println!("{}", response.status());
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct HyperHttpClient {
    client: Client<Connector, Full<Bytes>>,
    limits: HttpLimits,
}

impl HyperHttpClient {
    /// A client with the default [`HttpLimits`].
    ///
    /// Fails only if the TLS configuration cannot be built.
    pub fn new() -> Result<Self, HttpError> {
        Self::with_limits(HttpLimits::default())
    }

    /// A client with the given limits.
    pub fn with_limits(limits: HttpLimits) -> Result<Self, HttpError> {
        let client = Client::builder(TokioExecutor::new()).build(Self::connector()?);
        Ok(Self { client, limits })
    }

    #[cfg(feature = "rustls")]
    fn connector() -> Result<Connector, HttpError> {
        let http = hyper_util::client::legacy::connect::HttpConnector::new();
        mcp_tls::https_connector(http)
            .map_err(|e| HttpError::InvalidRequest(format!("TLS setup failed: {e}")))
    }

    #[cfg(not(feature = "rustls"))]
    fn connector() -> Result<Connector, HttpError> {
        Ok(hyper_util::client::legacy::connect::HttpConnector::new())
    }
}

impl HttpClient for HyperHttpClient {
    fn send(&self, request: Request<Bytes>) -> BoxFuture<'_, Result<Response<Bytes>, HttpError>> {
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let request = Request::from_parts(parts, Full::new(body));
            let limit = self.limits.max_response_bytes;
            let exchange = async {
                let response = self
                    .client
                    .request(request)
                    .await
                    .map_err(|e| HttpError::Transport(Box::new(e)))?;
                let (parts, body) = response.into_parts();
                let body = Limited::new(body, limit)
                    .collect()
                    .await
                    .map_err(|e| {
                        if e.is::<http_body_util::LengthLimitError>() {
                            HttpError::BodyTooLarge { limit }
                        } else {
                            HttpError::Transport(e)
                        }
                    })?
                    .to_bytes();
                Ok(Response::from_parts(parts, body))
            };
            tokio::time::timeout(self.limits.timeout, exchange)
                .await
                .map_err(|_| HttpError::Timeout)?
        })
    }
}
