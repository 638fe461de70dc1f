//! The user-facing step of the authorization code flow.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{ACCEPT, LOCATION};

use crate::error::AuthError;
use crate::http::{BoxFuture, HttpClient};

/// What the client asks the user (or a test) to do: open `url`, let the user approve, and
/// hand back where the authorization server redirected.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AuthorizationRequest {
    /// The complete authorization URL to open in a browser.
    pub url: String,
    /// The redirect URI the authorization server will send the user back to.
    pub redirect_uri: String,
    /// The `state` value in `url`; a callback listener can use it to match the redirect.
    pub state: String,
}

/// The outcome of the browser step.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthorizationResponse {
    /// The full URL the authorization server redirected to (`redirect_uri?code=..&state=..`).
    Redirect(String),
    /// The parameters of the redirect, already extracted.
    Code {
        /// The authorization code.
        code: String,
        /// The `state` parameter.
        state: Option<String>,
        /// The `iss` parameter (RFC 9207), if present.
        iss: Option<String>,
    },
}

/// The browser step of the authorization code flow: receives the authorization URL and
/// returns the redirect. Typical implementations open a browser and run a loopback listener
/// on the redirect URI; [`HeadlessRedirect`] serves tests and automated clients.
///
/// ```
/// use mcp_auth::{AuthError, AuthorizationHandler, AuthorizationRequest, AuthorizationResponse, BoxFuture};
///
/// /// Prints the URL and reads the redirect URL the user pastes.
/// struct AskUser;
///
/// impl AuthorizationHandler for AskUser {
///     fn authorize<'a>(
///         &'a self,
///         request: &'a AuthorizationRequest,
///     ) -> BoxFuture<'a, Result<AuthorizationResponse, AuthError>> {
///         Box::pin(async move {
///             eprintln!("Open {} and paste the address you land on:", request.url);
///             let mut line = String::new();
///             std::io::stdin()
///                 .read_line(&mut line)
///                 .map_err(|e| AuthError::Handler(e.to_string()))?;
///             Ok(AuthorizationResponse::Redirect(line.trim().to_owned()))
///         })
///     }
/// }
/// ```
pub trait AuthorizationHandler: Send + Sync {
    /// Performs the user's part of the authorization and returns the redirect.
    fn authorize<'a>(
        &'a self,
        request: &'a AuthorizationRequest,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, AuthError>>;
}

/// An [`AuthorizationHandler`] with no user: it GETs the authorization URL, expects a
/// redirect, and returns its `Location` without following it. For tests, conformance runs,
/// and authorization servers that approve without interaction.
#[derive(Clone)]
pub struct HeadlessRedirect {
    http: Arc<dyn HttpClient>,
}

impl std::fmt::Debug for HeadlessRedirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeadlessRedirect").finish_non_exhaustive()
    }
}

impl HeadlessRedirect {
    /// A handler that sends its request through `http` (which must not follow redirects).
    pub fn new(http: Arc<dyn HttpClient>) -> Self {
        Self { http }
    }
}

impl AuthorizationHandler for HeadlessRedirect {
    fn authorize<'a>(
        &'a self,
        request: &'a AuthorizationRequest,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, AuthError>> {
        Box::pin(async move {
            let req = http::Request::get(request.url.as_str())
                .header(ACCEPT, "text/html, application/json")
                .body(Bytes::new())
                .map_err(|_| AuthError::InvalidUrl {
                    url: request.url.clone(),
                    reason: "not a valid request URL",
                })?;
            let response = self
                .http
                .send(req)
                .await
                .map_err(|source| AuthError::Http {
                    url: request.url.clone(),
                    source,
                })?;
            if !response.status().is_redirection() {
                return Err(AuthError::Handler(format!(
                    "authorization endpoint answered {} instead of a redirect",
                    response.status()
                )));
            }
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    AuthError::Handler("redirect without a usable Location header".to_owned())
                })?;
            Ok(AuthorizationResponse::Redirect(location.to_owned()))
        })
    }
}
