//! `Host` and `Origin` validation against DNS rebinding.

use std::net::SocketAddr;

use http::header::{HOST, ORIGIN};
use http::request::Parts;

use super::config::{HostPolicy, HttpServerConfig};

/// The local address of the listener a request arrived on, when it is not a loopback address:
/// [`HostPolicy::Auto`] then relaxes the `Host` check. The serving helpers put it in the
/// request's extensions for listeners off loopback (without it the check stays on loopback
/// names, which is what a loopback listener needs). Insert it yourself when driving the service
/// from your own accept loop on such a listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalAddr(pub SocketAddr);

const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Splits `host[:port]` (with bracketed IPv6) into a host and an optional port, both slices of
/// the input (hosts compare case-insensitively).
fn split_authority(authority: &str) -> Option<(&str, Option<&str>)> {
    let authority = authority.trim();
    if authority.is_empty() || authority.bytes().any(|b| matches!(b, b'/' | b'@' | b' ')) {
        return None;
    }
    let (host, port) = if authority.starts_with('[') {
        let end = authority.find(']')?;
        let (host, rest) = authority.split_at(end + 1);
        match rest.strip_prefix(':') {
            Some(port) => (host, Some(port)),
            None if rest.is_empty() => (host, None),
            None => return None,
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty()
        || port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    Some((host, port))
}

/// Whether `authority` (`host[:port]`) matches `entry` (`host` = any port, `host:port` = exact).
fn matches_entry(authority: &str, entry: &str) -> bool {
    let (Some((host, port)), Some((want_host, want_port))) =
        (split_authority(authority), split_authority(entry))
    else {
        return false;
    };
    host.eq_ignore_ascii_case(want_host) && want_port.is_none_or(|p| Some(p) == port)
}

/// Whether `authority` names a loopback host, on any port (split once, not once per name).
fn is_loopback_authority(authority: &str) -> bool {
    split_authority(authority)
        .is_some_and(|(host, _)| LOOPBACK.iter().any(|l| host.eq_ignore_ascii_case(l)))
}

/// The request's authority: the `Host` header, or the URI's authority (HTTP/2).
fn request_authority(parts: &Parts) -> Option<&str> {
    if let Some(host) = parts.headers.get(HOST) {
        return host.to_str().ok();
    }
    parts.uri.authority().map(|a| a.as_str())
}

/// The effective policy for this request: `Auto` resolves by the listener's address.
enum Effective<'a> {
    Loopback,
    List(&'a [String]),
    Any,
}

fn effective<'a>(config: &'a HttpServerConfig, parts: &Parts) -> Effective<'a> {
    match &config.host_policy {
        HostPolicy::Loopback => Effective::Loopback,
        HostPolicy::Allow(list) => Effective::List(list),
        HostPolicy::Any => Effective::Any,
        HostPolicy::Auto => match parts.extensions.get::<LocalAddr>() {
            Some(LocalAddr(addr)) if !addr.ip().is_loopback() => Effective::Any,
            _ => Effective::Loopback,
        },
    }
}

/// Checks `Host` and `Origin`; `Err` carries the reason for the 403 answer.
pub(crate) fn check(config: &HttpServerConfig, parts: &Parts) -> Result<(), String> {
    let policy = effective(config, parts);
    let authority = request_authority(parts);
    match (&policy, authority) {
        (Effective::Any, _) => {}
        (_, None) => return Err("missing Host header".into()),
        (Effective::Loopback, Some(a)) if !is_loopback_authority(a) => {
            return Err(format!("host {a:?} is not allowed"));
        }
        (Effective::List(list), Some(a)) if !list.iter().any(|e| matches_entry(a, e)) => {
            return Err(format!("host {a:?} is not allowed"));
        }
        _ => {}
    }
    let Some(origin) = parts.headers.get(ORIGIN) else {
        return Ok(());
    };
    let origin = origin
        .to_str()
        .map_err(|_| "the Origin header is not visible ASCII".to_owned())?;
    if origin_allowed(config, &policy, origin, authority) {
        Ok(())
    } else {
        Err(format!("origin {origin:?} is not allowed"))
    }
}

fn origin_allowed(
    config: &HttpServerConfig,
    policy: &Effective<'_>,
    origin: &str,
    host: Option<&str>,
) -> bool {
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false; // "null" and anything that is not a serialized origin
    };
    let origin_authority = rest.split('/').next().unwrap_or(rest);
    if let Some(list) = &config.allowed_origins {
        return list.iter().any(|entry| match entry.split_once("://") {
            Some((want_scheme, want)) => {
                want_scheme.eq_ignore_ascii_case(scheme)
                    && matches_entry(origin_authority, want.trim_end_matches('/'))
            }
            None => matches_entry(origin_authority, entry),
        });
    }
    match policy {
        Effective::Loopback => is_loopback_authority(origin_authority),
        Effective::List(list) => list.iter().any(|e| matches_entry(origin_authority, e)),
        Effective::Any => {
            host.is_some_and(
                |h| match (split_authority(h), split_authority(origin_authority)) {
                    (Some((h, p)), Some((oh, op))) => h.eq_ignore_ascii_case(oh) && p == op,
                    _ => false,
                },
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(host: Option<&str>, origin: Option<&str>, local: Option<&str>) -> Parts {
        let mut b = http::Request::builder().uri("/mcp");
        if let Some(h) = host {
            b = b.header(HOST, h);
        }
        if let Some(o) = origin {
            b = b.header(ORIGIN, o);
        }
        let (mut parts, ()) = b.body(()).unwrap().into_parts();
        if let Some(l) = local {
            parts.extensions.insert(LocalAddr(l.parse().unwrap()));
        }
        parts
    }

    #[test]
    fn loopback_default() {
        let c = HttpServerConfig::default();
        for ok in [
            "localhost",
            "localhost:3000",
            "127.0.0.1:8080",
            "[::1]:9",
            "LOCALHOST",
        ] {
            assert!(check(&c, &parts(Some(ok), None, None)).is_ok(), "{ok}");
        }
        for bad in [
            "evil.example.com",
            "evil.example.com:80",
            "127.0.0.2",
            "localhost.evil.com",
            "",
        ] {
            assert!(check(&c, &parts(Some(bad), None, None)).is_err(), "{bad}");
        }
        assert!(check(&c, &parts(None, None, None)).is_err());
        assert!(
            check(
                &c,
                &parts(Some("localhost:1"), Some("http://localhost:5173"), None)
            )
            .is_ok()
        );
        assert!(
            check(
                &c,
                &parts(Some("localhost:1"), Some("http://evil.example.com"), None)
            )
            .is_err()
        );
        assert!(check(&c, &parts(Some("localhost:1"), Some("null"), None)).is_err());
    }

    #[test]
    fn auto_relaxes_on_public_listener() {
        let c = HttpServerConfig::default();
        let local = Some("10.0.0.5:443");
        assert!(check(&c, &parts(Some("mcp.example.com"), None, local)).is_ok());
        assert!(
            check(
                &c,
                &parts(
                    Some("mcp.example.com"),
                    Some("https://mcp.example.com"),
                    local
                )
            )
            .is_ok()
        );
        assert!(
            check(
                &c,
                &parts(
                    Some("mcp.example.com"),
                    Some("https://evil.example.com"),
                    local
                )
            )
            .is_err()
        );
        // A loopback listener keeps the strict default.
        assert!(
            check(
                &c,
                &parts(Some("mcp.example.com"), None, Some("127.0.0.1:1"))
            )
            .is_err()
        );
    }

    #[test]
    fn explicit_lists() {
        let c = HttpServerConfig::default()
            .host_policy(HostPolicy::Allow(vec![
                "api.example.com:8443".into(),
                "example.org".into(),
            ]))
            .allowed_origins(["https://app.example.com"]);
        assert!(check(&c, &parts(Some("api.example.com:8443"), None, None)).is_ok());
        assert!(check(&c, &parts(Some("api.example.com:8444"), None, None)).is_err());
        assert!(check(&c, &parts(Some("example.org:1"), None, None)).is_ok());
        assert!(
            check(
                &c,
                &parts(Some("example.org"), Some("https://app.example.com"), None)
            )
            .is_ok()
        );
        assert!(
            check(
                &c,
                &parts(Some("example.org"), Some("http://app.example.com"), None)
            )
            .is_err()
        );
        assert!(
            check(
                &c,
                &parts(Some("example.org"), Some("https://example.org"), None)
            )
            .is_err()
        );
    }
}
