//! `WWW-Authenticate` challenges (RFC 9110 section 11.6.1, RFC 6750 section 3).

use http::HeaderMap;
use http::header::WWW_AUTHENTICATE;

/// Longest header value that is parsed; longer values are ignored.
const MAX_HEADER_LEN: usize = 16 * 1024;
/// Most parameters kept per challenge.
const MAX_PARAMS: usize = 32;

/// One authentication challenge from a `WWW-Authenticate` header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Challenge {
    /// The authentication scheme, as received (compare case-insensitively).
    pub scheme: String,
    /// The parameters, names lower-cased, values unquoted.
    pub params: Vec<(String, String)>,
}

impl Challenge {
    /// The value of parameter `name` (lower case), if present.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The parts of a `Bearer` (or `DPoP`, RFC 9449 section 7.1) challenge that MCP uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BearerChallenge {
    /// `resource_metadata`: where the Protected Resource Metadata lives (RFC 9728).
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes needed, space-separated.
    pub scope: Option<String>,
    /// `error`: `invalid_token`, `insufficient_scope`, ...
    pub error: Option<String>,
    /// `error_description`.
    pub error_description: Option<String>,
}

impl BearerChallenge {
    /// Reads the first `Bearer` challenge from all `WWW-Authenticate` headers in `headers`,
    /// or, when there is none, the first `DPoP` challenge (a resource that accepts only
    /// DPoP-bound tokens challenges with that scheme alone). Returns an empty challenge when
    /// there is neither.
    pub fn from_headers(headers: &HeaderMap) -> Self {
        let challenges: Vec<Challenge> = headers
            .get_all(WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(parse_challenges)
            .collect();
        let scheme = |name: &'static str| move |c: &&Challenge| c.scheme.eq_ignore_ascii_case(name);
        let Some(c) = challenges
            .iter()
            .find(scheme("bearer"))
            .or_else(|| challenges.iter().find(scheme("dpop")))
        else {
            return Self::default();
        };
        let get = |name: &str| c.param(name).map(str::to_owned);
        Self {
            resource_metadata: get("resource_metadata"),
            scope: get("scope"),
            error: get("error"),
            error_description: get("error_description"),
        }
    }

    /// The requested scopes, split on spaces.
    pub fn scopes(&self) -> Vec<String> {
        split_scopes(self.scope.as_deref().unwrap_or(""))
    }
}

/// Splits a space-separated scope string, dropping empty items and duplicates.
pub(crate) fn split_scopes(scope: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in scope.split(' ').filter(|s| !s.is_empty()) {
        if !out.iter().any(|o| o == s) {
            out.push(s.to_owned());
        }
    }
    out
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Parses a `WWW-Authenticate` header value into its challenges. Malformed parts are
/// skipped; the parse never fails and never panics.
pub fn parse_challenges(header: &str) -> Vec<Challenge> {
    let mut out: Vec<Challenge> = Vec::new();
    if header.len() > MAX_HEADER_LEN {
        return out;
    }
    let b = header.as_bytes();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && (b[*i] == b' ' || b[*i] == b'\t') {
            *i += 1;
        }
    };
    while i < b.len() {
        // Separators between challenges or parameters.
        while i < b.len() && matches!(b[i], b' ' | b'\t' | b',') {
            i += 1;
        }
        let start = i;
        while i < b.len() && is_tchar(b[i]) {
            i += 1;
        }
        if i == start {
            // Not a token: skip one byte to guarantee progress.
            i += 1;
            continue;
        }
        let name = &header[start..i];
        skip_ws(&mut i);
        if i < b.len() && b[i] == b'=' {
            i += 1;
            skip_ws(&mut i);
            let value = if i < b.len() && b[i] == b'"' {
                i += 1;
                let mut v = String::new();
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' && i + 1 < b.len() {
                        i += 1;
                    }
                    // Push whole UTF-8 characters.
                    let ch_len = header[i..].chars().next().map_or(1, char::len_utf8);
                    v.push_str(&header[i..i + ch_len]);
                    i += ch_len;
                }
                i += 1; // closing quote (or end)
                v
            } else {
                let vs = i;
                while i < b.len() && (is_tchar(b[i]) || b[i] == b'/' || b[i] == b'=') {
                    i += 1;
                }
                header[vs..i].to_owned()
            };
            if let Some(c) = out.last_mut() {
                if c.params.len() < MAX_PARAMS {
                    c.params.push((name.to_ascii_lowercase(), value));
                }
            }
        } else {
            out.push(Challenge {
                scheme: name.to_owned(),
                params: Vec::new(),
            });
        }
    }
    out
}

/// Renders a quoted-string, escaping `"` and `\` and dropping characters a header cannot hold.
pub(crate) fn quote(value: &str) -> String {
    let mut s = String::with_capacity(value.len() + 2);
    s.push('"');
    for c in value.chars() {
        match c {
            '"' | '\\' => {
                s.push('\\');
                s.push(c);
            }
            ' '..='~' | '\t' => s.push(c),
            _ => {}
        }
    }
    s.push('"');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn parses_bearer_with_params() {
        let c = parse_challenges(
            r#"Bearer error="invalid_token", scope="a b", resource_metadata="http://l:1/.well-known/oauth-protected-resource/mcp""#,
        );
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].scheme, "Bearer");
        assert_eq!(c[0].param("scope"), Some("a b"));
        assert_eq!(
            c[0].param("resource_metadata"),
            Some("http://l:1/.well-known/oauth-protected-resource/mcp")
        );
    }

    #[test]
    fn parses_several_challenges_and_escapes() {
        let c = parse_challenges(
            r#"Basic realm="x, y", Bearer realm=api, error_description="say \"hi\"", DPoP algs="ES256""#,
        );
        let schemes: Vec<_> = c.iter().map(|c| c.scheme.as_str()).collect();
        assert_eq!(schemes, ["Basic", "Bearer", "DPoP"]);
        assert_eq!(c[0].param("realm"), Some("x, y"));
        assert_eq!(c[1].param("realm"), Some("api"));
        assert_eq!(c[1].param("error_description"), Some(r#"say "hi""#));
    }

    #[test]
    fn garbage_never_panics() {
        for s in [
            "",
            "=",
            "\"",
            "Bearer =",
            "Bearer a=\"unterminated",
            "é=é, ,,",
            "Bearer a=\"\\",
        ] {
            let _ = parse_challenges(s);
        }
        assert!(parse_challenges(&"a".repeat(MAX_HEADER_LEN + 1)).is_empty());
    }

    #[test]
    fn bearer_from_headers() {
        let mut h = HeaderMap::new();
        h.append(
            WWW_AUTHENTICATE,
            HeaderValue::from_static(r#"Basic realm="x""#),
        );
        h.append(
            WWW_AUTHENTICATE,
            HeaderValue::from_static(
                r#"bearer error="insufficient_scope", scope="mcp:write mcp:write""#,
            ),
        );
        let b = BearerChallenge::from_headers(&h);
        assert_eq!(b.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(b.scopes(), ["mcp:write"]);
        assert_eq!(
            BearerChallenge::from_headers(&HeaderMap::new()),
            BearerChallenge::default()
        );
    }

    #[test]
    fn dpop_challenge_when_there_is_no_bearer_one() {
        let mut h = HeaderMap::new();
        h.append(
            WWW_AUTHENTICATE,
            HeaderValue::from_static(
                r#"DPoP algs="ES256", resource_metadata="https://r/.well-known/oauth-protected-resource""#,
            ),
        );
        let b = BearerChallenge::from_headers(&h);
        assert_eq!(
            b.resource_metadata.as_deref(),
            Some("https://r/.well-known/oauth-protected-resource")
        );
        // A Bearer challenge wins over a DPoP one, in any order.
        h.append(
            WWW_AUTHENTICATE,
            HeaderValue::from_static(r#"Bearer resource_metadata="https://b/prm""#),
        );
        let b = BearerChallenge::from_headers(&h);
        assert_eq!(b.resource_metadata.as_deref(), Some("https://b/prm"));
    }

    #[test]
    fn quoting() {
        assert_eq!(quote(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(quote("x\ny"), "\"xy\"");
    }
}
