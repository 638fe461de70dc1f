//! Connection failures said in words: what the network or the server actually did, instead of
//! the JSON-RPC error the transport wrapped it in.

use std::time::Duration;

use mcp_client::{Client, ConnectError};
use mcp_types::{Implementation, ProtocolVersion};

use crate::target::{self, Target};

/// How long the follow-up checks of a failed connection may take.
const CHECK_WAIT: Duration = Duration::from_secs(5);

/// Why a TCP connection to `url` cannot be made, in words, or `None` when it can (or the URL
/// names no host).
pub async fn tcp_problem(url: &str) -> Option<String> {
    let uri: http::Uri = url.parse().ok()?;
    let host = uri.host()?.trim_start_matches('[').trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(match uri.scheme_str() {
        Some("https") => 443,
        _ => 80,
    });
    let connect = tokio::net::TcpStream::connect((host, port));
    match tokio::time::timeout(CHECK_WAIT, connect).await {
        Ok(Ok(_)) => None,
        Ok(Err(error)) => Some(match error.kind() {
            std::io::ErrorKind::ConnectionRefused => {
                format!("connection refused at {url}: nothing listens on {host}:{port}")
            }
            _ if error.to_string().contains("lookup") || error.to_string().contains("resolve") => {
                format!("cannot find the host `{host}` of {url}: {error}")
            }
            _ => format!("cannot open a connection to {host}:{port} for {url}: {error}"),
        }),
        Err(_) => Some(format!(
            "{host}:{port} did not accept a connection within {} s ({url})",
            CHECK_WAIT.as_secs()
        )),
    }
}

/// Whether a failure looks like the transport's, not the server's: worth a TCP check.
pub fn looks_like_transport(error: &ConnectError) -> bool {
    let text = crate::chain(error);
    matches!(error, ConnectError::Transport(_))
        || text.contains("HTTP request failed")
        || text.contains("client error (Connect)")
        || text.contains("Connection refused")
}

/// With `--protocol` forced: what the server offers instead, found by connecting once more
/// without the restriction. `None` when that fails too.
pub async fn offered_instead(target: &Target, verbose: u8) -> Option<String> {
    let client = Client::builder(Implementation::new("mcp", env!("CARGO_PKG_VERSION")))
        .initialize_timeout(CHECK_WAIT)
        .request_timeout(Some(CHECK_WAIT))
        .build();
    let opened = target::open(target, verbose).await.ok()?;
    let session = tokio::time::timeout(CHECK_WAIT * 2, client.connect(opened.connection))
        .await
        .ok()
        .and_then(Result::ok);
    let offered = session.as_ref().map(|session| {
        let mut versions: Vec<String> = session
            .discover_result()
            .map(|d| d.supported_versions.clone())
            .unwrap_or_default();
        let negotiated = session.protocol_version().to_string();
        if !versions.contains(&negotiated) {
            versions.push(negotiated);
        }
        versions.join(", ")
    });
    if let Some(session) = session {
        session.close().await;
    }
    opened.guard.close().await;
    offered
}

/// The message for a failed connection to `target`.
pub async fn connect_message(
    error: &ConnectError,
    target: &Target,
    forced: Option<ProtocolVersion>,
    verbose: u8,
) -> String {
    if let Target::Http { url, .. } = target {
        if looks_like_transport(error) {
            if let Some(problem) = tcp_problem(url).await {
                return problem;
            }
        }
    }
    let detail = crate::chain(error);
    if let Target::Http { url, .. } = target {
        if detail.contains("HTTP 401") && !detail.contains("mcp login") {
            return format!("{url} needs authorization: run `mcp login {url}`");
        }
    }
    if let Some(version) = forced {
        let refused = matches!(
            error,
            ConnectError::UnsupportedVersion { .. } | ConnectError::Discover(_)
        ) || detail.contains("nothing stateless");
        if refused {
            let mut message = format!("{} does not speak {version}", target.describe());
            match offered_instead(target, verbose).await {
                Some(offered) => message.push_str(&format!(
                    "; it offers {offered} (leave out --protocol to negotiate)"
                )),
                None => message.push_str(&format!(" ({})", short(&detail))),
            }
            return message;
        }
    }
    format!(
        "cannot connect to {}: {}",
        target.describe(),
        short(&detail)
    )
}

/// An error chain without the JSON-RPC wrapping the transport adds to its own failures.
pub fn short(detail: &str) -> String {
    detail
        .replace("the server returned error -32603: Internal error: ", "")
        .replace("error -32603: Internal error: ", "")
}
