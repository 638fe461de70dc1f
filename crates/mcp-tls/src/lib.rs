//! HTTPS for the SDK's HTTP clients, set up in one place.
//!
//! The Streamable HTTP client (`mcp-transport-http`, feature `rustls`) and the requests of the
//! OAuth flows (`mcp-auth`, feature `rustls`) connect through [`https_connector`], so they trust
//! the same roots and accept the same protocol versions:
//!
//! - rustls with the *ring* provider, TLS 1.2 and 1.3 (rustls' safe defaults);
//! - the Mozilla root store of `webpki-roots`, compiled in: the same trust on every machine,
//!   with no system store to find;
//! - HTTP/1.1 and HTTP/2, chosen by ALPN;
//! - `http://` URLs pass through the same connector in the clear (loopback servers, tests).
//!
//! ```
//! use hyper_util::client::legacy::connect::HttpConnector;
//!
//! let mut http = HttpConnector::new();
//! http.set_nodelay(true);
//! let connector = mcp_tls::https_connector(http)?;
//! # let _ = connector;
//! # Ok::<(), mcp_tls::Error>(())
//! ```
#![deny(missing_docs)]

use std::sync::Arc;

use hyper_util::client::legacy::connect::HttpConnector;

pub use hyper_rustls::HttpsConnector;
/// Why the TLS configuration could not be built.
pub use rustls::Error;

/// Wraps `http` (its timeouts and socket options are the caller's) in TLS for `https://`
/// URLs. `http://` URLs stay plain.
pub fn https_connector(mut http: HttpConnector) -> Result<HttpsConnector<HttpConnector>, Error> {
    http.enforce_http(false);
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    })
    .with_no_client_auth();
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_all_versions()
        .wrap_connector(http))
}
