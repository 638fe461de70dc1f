//! Just enough of RFC 3986 to resolve `$id` and `$ref` against each other.

/// The base URI of a schema document without an `$id`.
pub(crate) const DEFAULT_BASE: &str = "json-schema:///";

struct Parts<'a> {
    scheme: Option<&'a str>,
    authority: Option<&'a str>,
    path: &'a str,
    query: Option<&'a str>,
    fragment: Option<&'a str>,
}

fn parse(s: &str) -> Parts<'_> {
    let (rest, fragment) = match s.split_once('#') {
        Some((r, f)) => (r, Some(f)),
        None => (s, None),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    let (scheme, rest) = match rest.find(':') {
        Some(p)
            if p > 0
                && rest.as_bytes()[0].is_ascii_alphabetic()
                && rest[..p]
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
                && !rest[..p].contains('/') =>
        {
            (Some(&rest[..p]), &rest[p + 1..])
        }
        _ => (None, rest),
    };
    let (authority, path) = match rest.strip_prefix("//") {
        Some(r) => match r.find('/') {
            Some(p) => (Some(&r[..p]), &r[p..]),
            None => (Some(r), ""),
        },
        None => (None, rest),
    };
    Parts {
        scheme,
        authority,
        path,
        query,
        fragment,
    }
}

fn remove_dot_segments(path: &str) -> String {
    let mut output: Vec<&str> = Vec::new();
    let absolute = path.starts_with('/');
    let segments: Vec<&str> = path.split('/').collect();
    let last = segments.len().saturating_sub(1);
    let mut trailing_slash = false;
    for (i, seg) in segments.iter().enumerate() {
        if i == 0 && absolute {
            continue;
        }
        match *seg {
            "." => trailing_slash = i == last,
            ".." => {
                output.pop();
                trailing_slash = i == last;
            }
            s => {
                output.push(s);
                trailing_slash = false;
            }
        }
    }
    let mut out = String::with_capacity(path.len());
    if absolute {
        out.push('/');
    }
    out.push_str(&output.join("/"));
    if trailing_slash && !out.ends_with('/') {
        out.push('/');
    }
    out
}

/// Resolves `reference` against the absolute URI `base` (RFC 3986, section 5.2).
pub(crate) fn resolve(base: &str, reference: &str) -> String {
    let r = parse(reference);
    let b = parse(base);
    let (scheme, authority, path, query);
    if r.scheme.is_some() || r.authority.is_some() {
        scheme = r.scheme.or(b.scheme);
        authority = r.authority;
        path = remove_dot_segments(r.path);
        query = r.query;
    } else {
        scheme = b.scheme;
        authority = b.authority;
        if r.path.is_empty() {
            path = b.path.to_owned();
            query = r.query.or(b.query);
        } else {
            path = if r.path.starts_with('/') {
                remove_dot_segments(r.path)
            } else if b.authority.is_some() && b.path.is_empty() {
                remove_dot_segments(&format!("/{}", r.path))
            } else {
                let dir = b.path.rfind('/').map_or("", |p| &b.path[..=p]);
                remove_dot_segments(&format!("{dir}{}", r.path))
            };
            query = r.query;
        }
    }
    let mut out = String::new();
    if let Some(s) = scheme {
        out.push_str(s);
        out.push(':');
    }
    if let Some(a) = authority {
        out.push_str("//");
        out.push_str(a);
    }
    out.push_str(&path);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    if let Some(f) = r.fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

/// Splits off the fragment (without `#`; empty when there is none).
pub(crate) fn split_fragment(uri: &str) -> (&str, &str) {
    match uri.split_once('#') {
        Some((u, f)) => (u, f),
        None => (uri, ""),
    }
}

/// Decodes `%XX` escapes; `None` when an escape is broken or the result is not UTF-8.
pub(crate) fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_owned());
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            // Two hex digits: `from_str_radix` alone would also take a sign (`%+1`).
            let hex = b.get(i + 1..i + 3)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Whether `uri` (without fragment) names one of the standard JSON Schema meta-schemas (or one
/// of their vocabulary meta-schemas).
pub(crate) fn is_meta_schema(uri: &str) -> bool {
    let Some(path) = uri
        .strip_prefix("http://json-schema.org/")
        .or_else(|| uri.strip_prefix("https://json-schema.org/"))
    else {
        return false;
    };
    matches!(
        path,
        "draft-04/schema" | "draft-06/schema" | "draft-07/schema" | "schema"
    ) || path
        .strip_prefix("draft/2019-09/")
        .or_else(|| path.strip_prefix("draft/2020-12/"))
        .is_some_and(|rest| rest == "schema" || rest.starts_with("meta/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_references() {
        let base = "http://a/b/c/d;p?q";
        for (r, expected) in [
            ("g", "http://a/b/c/g"),
            ("./g", "http://a/b/c/g"),
            ("g/", "http://a/b/c/g/"),
            ("/g", "http://a/g"),
            ("//g", "http://g"),
            ("?y", "http://a/b/c/d;p?y"),
            ("#s", "http://a/b/c/d;p?q#s"),
            ("", "http://a/b/c/d;p?q"),
            ("..", "http://a/b/"),
            ("../g", "http://a/b/g"),
            ("../../g", "http://a/g"),
            ("../../../g", "http://a/g"),
            ("g:h", "g:h"),
        ] {
            assert_eq!(resolve(base, r), expected, "{r}");
        }
        assert_eq!(resolve(DEFAULT_BASE, "#/a"), "json-schema:///#/a");
        assert_eq!(resolve(DEFAULT_BASE, "foo.json"), "json-schema:///foo.json");
        assert_eq!(
            resolve("urn:uuid:deadbeef-1234-ffff-ffff-4321feebdaed", "#/$defs/a"),
            "urn:uuid:deadbeef-1234-ffff-ffff-4321feebdaed#/$defs/a"
        );
    }

    #[test]
    fn percent_escapes_are_two_hex_digits() {
        assert_eq!(percent_decode("a%2Fb%7e").as_deref(), Some("a/b~"));
        assert_eq!(percent_decode("%+1"), None);
        assert_eq!(percent_decode("%-1"), None);
        assert_eq!(percent_decode("%4"), None);
        assert_eq!(percent_decode("%zz"), None);
    }

    #[test]
    fn meta_schemas() {
        assert!(is_meta_schema("http://json-schema.org/draft-07/schema"));
        assert!(is_meta_schema(
            "https://json-schema.org/draft/2020-12/schema"
        ));
        assert!(is_meta_schema(
            "https://json-schema.org/draft/2020-12/meta/core"
        ));
        assert!(!is_meta_schema("https://example.com/schema"));
    }
}
