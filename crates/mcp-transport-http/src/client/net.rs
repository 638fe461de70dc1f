//! The hyper client underneath: HTTP/1.1 and HTTP/2, optional TLS, custom headers and the
//! authorization provider's retry rules.

use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::error::HttpError;

#[cfg(feature = "rustls")]
type Connector = mcp_tls::HttpsConnector<HttpConnector>;
#[cfg(not(feature = "rustls"))]
type Connector = HttpConnector;

/// `text/event-stream`.
pub(crate) const EVENT_STREAM: &str = "text/event-stream";
/// The `Accept` value of every POST.
pub(crate) const ACCEPT_BOTH: &str = "application/json, text/event-stream";
/// `Mcp-Session-Id`.
pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// `MCP-Protocol-Version`.
pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Last-Event-ID`.
pub(crate) const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
/// `Mcp-Method` (2026-07-28).
pub(crate) const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name` (2026-07-28).
pub(crate) const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// How many times one exchange may be retried after the authorization provider obtained a
/// new token (a `401`, or a `403 insufficient_scope` step-up).
#[cfg(feature = "auth")]
const MAX_AUTH_RETRIES: usize = 3;

/// Network settings taken from the builder.
#[derive(Clone, Debug)]
pub(crate) struct NetConfig {
    pub connect_timeout: Duration,
    pub http2_prior_knowledge: bool,
}

/// One HTTP client shared by every exchange of a transport.
#[derive(Clone)]
pub(crate) struct Net {
    client: Client<Connector, Full<Bytes>>,
    headers: HeaderMap,
    #[cfg(feature = "auth")]
    auth: Option<std::sync::Arc<dyn mcp_auth::AuthProvider>>,
}

impl std::fmt::Debug for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Net").finish_non_exhaustive()
    }
}

/// What to send.
pub(crate) struct Exchange<'a> {
    pub method: Method,
    pub uri: &'a Uri,
    pub headers: HeaderMap,
    pub body: Option<Bytes>,
}

impl Net {
    pub fn new(
        config: &NetConfig,
        headers: HeaderMap,
        #[cfg(feature = "auth")] auth: Option<std::sync::Arc<dyn mcp_auth::AuthProvider>>,
    ) -> Result<Self, HttpError> {
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        http.set_connect_timeout(Some(config.connect_timeout));
        http.enforce_http(false);
        let connector = connector(http)?;
        let client = Client::builder(TokioExecutor::new())
            .http2_only(config.http2_prior_knowledge)
            .build(connector);
        Ok(Net {
            client,
            headers,
            #[cfg(feature = "auth")]
            auth,
        })
    }

    /// Sends one exchange: custom headers first, then the exchange's own headers (which win),
    /// then the provider's credentials for this method and URL (`Authorization`, and a `DPoP`
    /// proof for a DPoP-bound token). The provider sees each response first and may ask for
    /// one immediate retry (a DPoP nonce challenge); then a `401` or `403 insufficient_scope`
    /// lets it obtain a new token before the exchange is retried.
    // Without the `auth` feature there is nothing to retry, so the loop runs once.
    #[cfg_attr(not(feature = "auth"), allow(clippy::never_loop))]
    pub async fn send(&self, ex: Exchange<'_>) -> Result<Response<Incoming>, HttpError> {
        #[cfg(feature = "auth")]
        let mut retries = 0;
        #[cfg(feature = "auth")]
        let mut provider_retried = false;
        loop {
            let mut req = Request::builder()
                .method(ex.method.clone())
                .uri(ex.uri.clone())
                .body(Full::new(ex.body.clone().unwrap_or_default()))
                .map_err(|e| HttpError::Request(Box::new(e)))?;
            let headers = req.headers_mut();
            for (name, value) in &self.headers {
                headers.append(name, value.clone());
            }
            for (name, value) in &ex.headers {
                headers.insert(name, value.clone());
            }
            if ex.body.is_some() {
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            }
            #[cfg(feature = "auth")]
            let resource = ex.uri.to_string();
            #[cfg(feature = "auth")]
            if let Some(auth) = &self.auth {
                auth.authorize_request(&ex.method, &resource, headers)
                    .await
                    .map_err(HttpError::Auth)?;
            }
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| HttpError::Request(Box::new(e)))?;
            #[cfg(feature = "auth")]
            if let Some(auth) = &self.auth {
                let status = resp.status();
                if auth.on_response(&resource, status, resp.headers())
                    == mcp_auth::ResponseAction::Retry
                    && !provider_retried
                {
                    provider_retried = true;
                    continue;
                }
                if retries < MAX_AUTH_RETRIES {
                    // A new token starts a new round of credentials: the provider may ask for
                    // its immediate retry once more.
                    if status == StatusCode::UNAUTHORIZED {
                        retries += 1;
                        auth.on_unauthorized(&resource, resp.headers())
                            .await
                            .map_err(HttpError::Auth)?;
                        provider_retried = false;
                        continue;
                    }
                    if status == StatusCode::FORBIDDEN && insufficient_scope(resp.headers()) {
                        retries += 1;
                        auth.on_insufficient_scope(&resource, resp.headers())
                            .await
                            .map_err(HttpError::Auth)?;
                        provider_retried = false;
                        continue;
                    }
                }
            }
            return Ok(resp);
        }
    }
}

#[cfg(feature = "auth")]
fn insufficient_scope(headers: &HeaderMap) -> bool {
    headers
        .get_all(http::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("insufficient_scope"))
}

#[cfg(feature = "rustls")]
fn connector(http: HttpConnector) -> Result<Connector, HttpError> {
    mcp_tls::https_connector(http).map_err(|e| HttpError::Tls(e.to_string()))
}

#[cfg(not(feature = "rustls"))]
fn connector(http: HttpConnector) -> Result<Connector, HttpError> {
    Ok(http)
}

/// The response's media type (`Content-Type` without parameters, lowercased).
pub(crate) fn media_type(resp: &Response<Incoming>) -> String {
    resp.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// Reads a whole body, failing once it exceeds `limit` bytes.
pub(crate) async fn read_body(body: Incoming, limit: usize) -> Result<Bytes, HttpError> {
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(HttpError::TooLarge { limit }),
        Err(e) => Err(HttpError::Request(e)),
    }
}

/// The error for an unexpected status, with the start of the body for diagnostics.
pub(crate) async fn status_error(resp: Response<Incoming>) -> HttpError {
    let status = resp.status();
    let body = read_body(resp.into_body(), 4096).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&body);
    let mut body: String = text.chars().take(512).collect();
    body.truncate(body.trim_end().len());
    HttpError::Status { status, body }
}

/// Headers for an SSE GET.
pub(crate) fn accept_event_stream() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(ACCEPT, HeaderValue::from_static(EVENT_STREAM));
    h
}

/// Whether `status` is a success that carries no body to read (202 Accepted, 204 No Content).
pub(crate) fn is_empty_success(status: StatusCode) -> bool {
    status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT
}
