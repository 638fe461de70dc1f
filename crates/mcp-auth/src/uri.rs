//! Exact-string URL helpers.
//!
//! OAuth identifiers (the resource of a protected resource, the issuer of an authorization
//! server) are compared as plain strings, so this module never re-serialises a URL: it slices
//! the string it was given. `http::Uri` is only used to *compare* origins.

use http::Uri;

/// Splits an absolute `http`/`https` URL into its origin (`scheme://authority`) and the rest
/// (path, query, fragment), both as slices of the input.
pub(crate) fn split_origin(url: &str) -> Option<(&str, &str)> {
    let scheme_end = url.find("://")?;
    let scheme = &url[..scheme_end];
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return None;
    }
    let after = scheme_end + 3;
    let rest = &url[after..];
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    if authority_len == 0 {
        return None;
    }
    Some(url.split_at(after + authority_len))
}

/// The path of an absolute URL (no query or fragment), possibly empty.
pub(crate) fn path_of(url: &str) -> Option<&str> {
    let (_, rest) = split_origin(url)?;
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    Some(&rest[..end])
}

/// Checks that `url` is an absolute `http(s)` URL without a fragment, usable as an OAuth
/// endpoint. Plain `http` is allowed only for loopback hosts unless `allow_insecure`.
pub(crate) fn check_endpoint(url: &str, allow_insecure: bool) -> Result<(), &'static str> {
    let uri: Uri = url.parse().map_err(|_| "not a valid absolute URL")?;
    let scheme = uri.scheme_str().ok_or("not an absolute URL")?;
    let host = uri.host().ok_or("URL has no host")?;
    if url.contains('#') {
        return Err("URL has a fragment");
    }
    if scheme.eq_ignore_ascii_case("https") {
        Ok(())
    } else if scheme.eq_ignore_ascii_case("http") {
        if allow_insecure || is_loopback(host) {
            Ok(())
        } else {
            Err("plain http is only allowed for loopback hosts")
        }
    } else {
        Err("scheme must be http or https")
    }
}

/// Whether `host` (as `http::Uri` reports it, IPv6 in brackets) names the loopback interface.
pub(crate) fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => false,
    }
}

fn default_port(scheme: &str) -> Option<u16> {
    if scheme.eq_ignore_ascii_case("https") {
        Some(443)
    } else if scheme.eq_ignore_ascii_case("http") {
        Some(80)
    } else {
        None
    }
}

/// Whether `resource` (from protected resource metadata) identifies `server_url`: same origin
/// (scheme, host, port, compared case-insensitively with default ports), and the resource's
/// path is a segment-wise prefix of the server URL's path. A resource with a fragment never
/// matches.
pub(crate) fn resource_matches(resource: &str, server_url: &str) -> bool {
    if resource.contains('#') {
        return false;
    }
    let (Ok(r), Ok(s)) = (resource.parse::<Uri>(), server_url.parse::<Uri>()) else {
        return false;
    };
    let (Some(rs), Some(ss)) = (r.scheme_str(), s.scheme_str()) else {
        return false;
    };
    let (Some(rh), Some(sh)) = (r.host(), s.host()) else {
        return false;
    };
    if !rs.eq_ignore_ascii_case(ss) || !rh.eq_ignore_ascii_case(sh) {
        return false;
    }
    if r.port_u16().or(default_port(rs)) != s.port_u16().or(default_port(ss)) {
        return false;
    }
    let (Some(rp), Some(sp)) = (path_of(resource), path_of(server_url)) else {
        return false;
    };
    let rp = rp.trim_end_matches('/');
    let sp_trimmed = sp.trim_end_matches('/');
    if rp.is_empty() {
        return true;
    }
    match sp_trimmed.strip_prefix(rp) {
        Some(rest) => rest.is_empty() || rest.starts_with('/'),
        None => false,
    }
}

/// The candidate Protected Resource Metadata URLs for a server URL (RFC 9728 section 3.1):
/// the path-based form first (when the URL has a path), then the root form.
pub(crate) fn protected_resource_metadata_urls(server_url: &str) -> Option<Vec<String>> {
    const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";
    let (origin, _) = split_origin(server_url)?;
    let path = path_of(server_url)?.trim_end_matches('/');
    let mut urls = Vec::with_capacity(2);
    if !path.is_empty() {
        urls.push(format!("{origin}{WELL_KNOWN}{path}"));
    }
    urls.push(format!("{origin}{WELL_KNOWN}"));
    Some(urls)
}

/// The candidate authorization server metadata URLs for an issuer, in the order the MCP
/// authorization specification gives: for an issuer with a path, RFC 8414 path insertion,
/// OpenID Connect path insertion, then OpenID Connect path appending; for an issuer without a
/// path, RFC 8414 then OpenID Connect. The root RFC 8414 URL is never tried for an issuer
/// with a path.
pub(crate) fn authorization_server_metadata_urls(issuer: &str) -> Option<Vec<String>> {
    let (origin, rest) = split_origin(issuer)?;
    if rest.contains(['?', '#']) {
        return None;
    }
    let path = rest.trim_end_matches('/');
    Some(if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    })
}

/// Appends form-encoded query parameters to `base`, keeping whatever query it already has.
pub(crate) fn append_query<'a>(
    base: &str,
    params: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        query.append_pair(k, v);
    }
    let query = query.finish();
    let separator = match base.find('?') {
        None => "?",
        Some(_) if base.ends_with('?') || base.ends_with('&') => "",
        Some(_) => "&",
    };
    format!("{base}{separator}{query}")
}

/// The decoded query parameters of a URL (the part between `?` and `#`).
pub(crate) fn query_pairs(url: &str) -> Vec<(String, String)> {
    let Some(start) = url.find('?') else {
        return Vec::new();
    };
    let query = &url[start + 1..];
    let query = &query[..query.find('#').unwrap_or(query.len())];
    form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_without_normalising() {
        assert_eq!(
            split_origin("http://localhost:3000"),
            Some(("http://localhost:3000", ""))
        );
        assert_eq!(
            split_origin("https://a.example/x/y?q#f"),
            Some(("https://a.example", "/x/y?q#f"))
        );
        assert_eq!(split_origin("ftp://a.example/"), None);
        assert_eq!(split_origin("http:///x"), None);
        assert_eq!(path_of("https://a.example/x/y?q"), Some("/x/y"));
    }

    #[test]
    fn resource_matching() {
        assert!(resource_matches(
            "http://localhost:1/mcp",
            "http://localhost:1/mcp"
        ));
        assert!(resource_matches(
            "http://localhost:1",
            "http://localhost:1/mcp"
        ));
        assert!(resource_matches(
            "http://localhost:1/",
            "http://localhost:1/mcp"
        ));
        assert!(resource_matches(
            "HTTP://LOCALHOST:1/mcp",
            "http://localhost:1/mcp/"
        ));
        assert!(resource_matches(
            "https://a.example:443/x",
            "https://a.example/x/y"
        ));
        assert!(!resource_matches(
            "http://localhost:1/mc",
            "http://localhost:1/mcp"
        ));
        assert!(!resource_matches(
            "http://localhost:2/mcp",
            "http://localhost:1/mcp"
        ));
        assert!(!resource_matches(
            "https://localhost:1/mcp",
            "http://localhost:1/mcp"
        ));
        assert!(!resource_matches(
            "https://evil.example.com/mcp",
            "http://localhost:1/mcp"
        ));
        assert!(!resource_matches(
            "http://localhost:1/mcp#x",
            "http://localhost:1/mcp"
        ));
        assert!(!resource_matches(
            "http://localhost:1/mcp/sub",
            "http://localhost:1/mcp"
        ));
    }

    #[test]
    fn metadata_url_order() {
        assert_eq!(
            protected_resource_metadata_urls("http://localhost:1/mcp").unwrap(),
            [
                "http://localhost:1/.well-known/oauth-protected-resource/mcp",
                "http://localhost:1/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            protected_resource_metadata_urls("http://localhost:1").unwrap(),
            ["http://localhost:1/.well-known/oauth-protected-resource"]
        );
        assert_eq!(
            authorization_server_metadata_urls("http://localhost:2/tenant1").unwrap(),
            [
                "http://localhost:2/.well-known/oauth-authorization-server/tenant1",
                "http://localhost:2/.well-known/openid-configuration/tenant1",
                "http://localhost:2/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            authorization_server_metadata_urls("http://localhost:2").unwrap(),
            [
                "http://localhost:2/.well-known/oauth-authorization-server",
                "http://localhost:2/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn endpoints() {
        assert!(check_endpoint("https://as.example/token", false).is_ok());
        assert!(check_endpoint("http://127.0.0.1:9/token", false).is_ok());
        assert!(check_endpoint("http://[::1]:9/token", false).is_ok());
        assert!(check_endpoint("http://localhost/token", false).is_ok());
        assert!(check_endpoint("http://as.example/token", false).is_err());
        assert!(check_endpoint("http://as.example/token", true).is_ok());
        assert!(check_endpoint("https://as.example/token#x", false).is_err());
        assert!(check_endpoint("/token", false).is_err());
    }

    #[test]
    fn queries() {
        assert_eq!(
            append_query("https://a/authorize", [("a", "1 2"), ("b", "x&y")]),
            "https://a/authorize?a=1+2&b=x%26y"
        );
        assert_eq!(
            append_query("https://a/z?t=1", [("a", "1")]),
            "https://a/z?t=1&a=1"
        );
        assert_eq!(
            query_pairs("http://l/cb?code=c%20d&state=s#frag"),
            [("code".into(), "c d".into()), ("state".into(), "s".into())]
        );
        assert!(query_pairs("http://l/cb").is_empty());
    }
}
