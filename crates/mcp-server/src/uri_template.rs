//! RFC 6570 URI templates: parsing, expansion and matching a concrete URI back to its variables.
//!
//! Resource templates (`resources/templates/list`) advertise URIs such as
//! `file:///{path}` or `weather://{city}/forecast{?days}`. When a client reads a concrete URI, the
//! server finds the template it belongs to and extracts the variables. Matching is the inverse of
//! expansion; it supports all operators of levels 1 to 3 (`{var}`, `{+var}`, `{#var}`, `{.var}`,
//! `{/var}`, `{;var}`, `{?var}`, `{&var}`) and the explode modifier (`{/path*}`) of level 4.
//! Prefix modifiers (`{var:3}`) are accepted and matched as plain variables.
//!
//! ```
//! use mcp_server::UriTemplate;
//!
//! let t = UriTemplate::parse("weather://{city}/forecast{?days}").unwrap();
//! let vars = t.matches("weather://Paris/forecast?days=3").unwrap();
//! assert_eq!(vars.get("city"), Some("Paris"));
//! assert_eq!(vars.get("days"), Some("3"));
//! assert!(t.matches("weather://Paris/history").is_none());
//! ```

use std::collections::HashMap;
use std::fmt;

/// The longest template accepted by [`UriTemplate::parse`], in bytes.
pub const MAX_TEMPLATE_LEN: usize = 2048;
/// The most expressions (`{...}`) a template may contain.
pub const MAX_EXPRESSIONS: usize = 32;
/// The longest URI [`UriTemplate::matches`] tries to match, in bytes; longer URIs never match.
pub const MAX_URI_LEN: usize = 16 * 1024;

/// Why a URI template could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UriTemplateError {
    /// The template is longer than [`MAX_TEMPLATE_LEN`] or has more than [`MAX_EXPRESSIONS`].
    TooLarge,
    /// A `{` without its `}` or a `}` without its `{`.
    Unbalanced(usize),
    /// An expression with no variable, or a variable name with characters RFC 6570 forbids.
    InvalidVariable(String),
    /// An operator RFC 6570 reserves for future use (`=`, `,`, `!`, `@`, `|`).
    ReservedOperator(char),
    /// Two expressions directly next to each other with nothing between them would make
    /// matching ambiguous for simple (`{a}{b}`) expressions.
    Ambiguous(String),
}

impl fmt::Display for UriTemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UriTemplateError::TooLarge => f.write_str("URI template is too large"),
            UriTemplateError::Unbalanced(e) => {
                write!(f, "unbalanced braces in URI template at byte {e}")
            }
            UriTemplateError::InvalidVariable(e) => {
                write!(f, "invalid variable name {e:?} in URI template")
            }
            UriTemplateError::ReservedOperator(e) => {
                write!(f, "reserved operator {e:?} in URI template")
            }
            UriTemplateError::Ambiguous(e) => write!(
                f,
                "adjacent expressions {e:?} cannot be matched unambiguously"
            ),
        }
    }
}

impl std::error::Error for UriTemplateError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Simple,
    Reserved,
    Fragment,
    Label,
    Path,
    PathParam,
    Query,
    QueryCont,
}

impl Op {
    fn prefix(self) -> &'static str {
        match self {
            Op::Simple | Op::Reserved => "",
            Op::Fragment => "#",
            Op::Label => ".",
            Op::Path => "/",
            Op::PathParam => ";",
            Op::Query => "?",
            Op::QueryCont => "&",
        }
    }
    fn separator(self) -> char {
        match self {
            Op::Simple | Op::Reserved | Op::Fragment => ',',
            Op::Label => '.',
            Op::Path => '/',
            Op::PathParam => ';',
            Op::Query | Op::QueryCont => '&',
        }
    }
    fn named(self) -> bool {
        matches!(self, Op::PathParam | Op::Query | Op::QueryCont)
    }
    fn allows_reserved(self) -> bool {
        matches!(self, Op::Reserved | Op::Fragment)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct VarSpec {
    name: String,
    explode: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Expr { op: Op, vars: Vec<VarSpec> },
}

/// A parsed RFC 6570 URI template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

/// The variables extracted from a URI by [`UriTemplate::matches`].
///
/// Values are percent-decoded. A variable the URI did not carry (an optional query parameter, for
/// example) is absent. Exploded and comma-separated list values are kept as one string joined
/// with `,`; use [`TemplateVars::get_list`] to split them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TemplateVars {
    values: HashMap<String, String>,
}

impl TemplateVars {
    /// The value of a variable, if the URI carried it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// The value of a list variable split at `,`.
    pub fn get_list(&self, name: &str) -> Option<Vec<&str>> {
        self.get(name).map(|v| v.split(',').collect())
    }

    /// Iterates over all variables and their values.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Number of variables present.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether no variable was extracted.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Converts the variables to a JSON object of strings (handy for deserializing into a typed
    /// struct with `serde_json::from_value`).
    pub fn to_json(&self) -> serde_json::Value {
        let mut object = serde_json::Map::new();
        for (k, v) in &self.values {
            object.insert(k.clone(), serde_json::Value::String(v.clone()));
        }
        serde_json::Value::Object(object)
    }
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

fn is_varchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '%'
}

impl UriTemplate {
    /// Parses a template.
    pub fn parse(source: &str) -> Result<Self, UriTemplateError> {
        if source.len() > MAX_TEMPLATE_LEN {
            return Err(UriTemplateError::TooLarge);
        }
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut exprs = 0usize;
        let mut rest = source;
        let mut offset = 0usize;
        while let Some(ch) = rest.chars().next() {
            match ch {
                '{' => {
                    let close = rest.find('}').ok_or(UriTemplateError::Unbalanced(offset))?;
                    let body = &rest[1..close];
                    if body.contains('{') {
                        return Err(UriTemplateError::Unbalanced(offset));
                    }
                    if !literal.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut literal)));
                    }
                    exprs += 1;
                    if exprs > MAX_EXPRESSIONS {
                        return Err(UriTemplateError::TooLarge);
                    }
                    parts.push(parse_expr(body)?);
                    rest = &rest[close + 1..];
                    offset += close + 1;
                }
                '}' => return Err(UriTemplateError::Unbalanced(offset)),
                c => {
                    literal.push(c);
                    rest = &rest[c.len_utf8()..];
                    offset += c.len_utf8();
                }
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        for pair in parts.windows(2) {
            // `{a}{b}` has no boundary; an operator with its own prefix supplies one.
            if let [Part::Expr { .. }, Part::Expr { op, .. }] = pair {
                if op.prefix().is_empty() {
                    return Err(UriTemplateError::Ambiguous(source.to_owned()));
                }
            }
        }
        Ok(Self {
            source: source.to_owned(),
            parts,
        })
    }

    /// The template text as given.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The names of the template's variables, in order of appearance.
    pub fn variables(&self) -> Vec<&str> {
        let mut out = Vec::new();
        for part in &self.parts {
            if let Part::Expr { vars, .. } = part {
                for v in vars {
                    if !out.contains(&v.name.as_str()) {
                        out.push(v.name.as_str());
                    }
                }
            }
        }
        out
    }

    /// Expands the template with string values; variables without a value are left out, as
    /// RFC 6570 prescribes for undefined variables.
    pub fn expand(&self, values: &HashMap<String, String>) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Literal(l) => out.push_str(l),
                Part::Expr { op, vars } => {
                    let mut first = true;
                    for v in vars {
                        let Some(value) = values.get(&v.name) else {
                            continue;
                        };
                        out.push_str(if first { op.prefix() } else { "" });
                        if !first {
                            out.push(op.separator());
                        }
                        first = false;
                        if op.named() {
                            out.push_str(&v.name);
                            if value.is_empty() && *op == Op::PathParam {
                                continue;
                            }
                            out.push('=');
                        }
                        encode_into(&mut out, value, op.allows_reserved());
                    }
                }
            }
        }
        out
    }

    /// Matches a concrete URI against the template and returns its variables, or `None` if the
    /// URI does not belong to this template.
    pub fn matches(&self, uri: &str) -> Option<TemplateVars> {
        if uri.len() > MAX_URI_LEN {
            return None;
        }
        let mut vars = TemplateVars::default();
        let mut failed = std::collections::HashSet::new();
        if match_from(&self.parts, 0, uri, 0, &mut vars, &mut failed) {
            Some(vars)
        } else {
            None
        }
    }
}

fn parse_expr(body: &str) -> Result<Part, UriTemplateError> {
    let (op, list) = match body.chars().next() {
        Some('+') => (Op::Reserved, &body[1..]),
        Some('#') => (Op::Fragment, &body[1..]),
        Some('.') => (Op::Label, &body[1..]),
        Some('/') => (Op::Path, &body[1..]),
        Some(';') => (Op::PathParam, &body[1..]),
        Some('?') => (Op::Query, &body[1..]),
        Some('&') => (Op::QueryCont, &body[1..]),
        Some(c @ ('=' | ',' | '!' | '@' | '|')) => {
            return Err(UriTemplateError::ReservedOperator(c));
        }
        _ => (Op::Simple, body),
    };
    let mut vars = Vec::new();
    for spec in list.split(',') {
        let (name, explode) = match spec.strip_suffix('*') {
            Some(n) => (n, true),
            None => (spec, false),
        };
        let name = match name.split_once(':') {
            Some((n, len)) => {
                if len.is_empty() || len.len() > 4 || !len.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(UriTemplateError::InvalidVariable(spec.to_owned()));
                }
                n
            }
            None => name,
        };
        if name.is_empty() || !name.chars().all(is_varchar) || name.starts_with('.') {
            return Err(UriTemplateError::InvalidVariable(spec.to_owned()));
        }
        vars.push(VarSpec {
            name: name.to_owned(),
            explode,
        });
    }
    Ok(Part::Expr { op, vars })
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn is_reserved(b: u8) -> bool {
    matches!(
        b,
        b':' | b'/'
            | b'?'
            | b'#'
            | b'['
            | b']'
            | b'@'
            | b'!'
            | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b';'
            | b'='
    )
}

fn encode_into(out: &mut String, value: &str, allow_reserved: bool) {
    let bytes = value.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let keep_pct = allow_reserved
            && b == b'%'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        if is_unreserved(b) || (allow_reserved && is_reserved(b)) || keep_pct {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
        i += 1;
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Whether `c` may appear inside a value of an expression with operator `op`.
fn value_char_ok(op: Op, c: char) -> bool {
    if c == '%' {
        return true;
    }
    if !c.is_ascii() {
        // Tolerate IRIs: non-ASCII characters are accepted as they are.
        return true;
    }
    let b = c as u8;
    if is_unreserved(b) {
        return true;
    }
    if op.allows_reserved() {
        return is_reserved(b) && !(op == Op::Reserved && b == b'#');
    }
    // Lists: the separator `,` and, for named operators, `=` inside a single expression.
    b == b','
}

fn match_from(
    parts: &[Part],
    pi: usize,
    uri: &str,
    pos: usize,
    vars: &mut TemplateVars,
    failed: &mut std::collections::HashSet<(usize, usize)>,
) -> bool {
    if failed.contains(&(pi, pos)) {
        return false;
    }
    let ok = match_inner(parts, pi, uri, pos, vars, failed);
    if !ok {
        failed.insert((pi, pos));
    }
    ok
}

fn match_inner(
    parts: &[Part],
    pi: usize,
    uri: &str,
    pos: usize,
    vars: &mut TemplateVars,
    failed: &mut std::collections::HashSet<(usize, usize)>,
) -> bool {
    let Some(part) = parts.get(pi) else {
        return pos == uri.len();
    };
    let rest = &uri[pos..];
    match part {
        Part::Literal(l) => {
            rest.starts_with(l.as_str())
                && match_from(parts, pi + 1, uri, pos + l.len(), vars, failed)
        }
        Part::Expr { op, vars: specs } => {
            // The candidate ends: every char boundary up to the first char the operator cannot
            // contain, tried longest first.
            let mut limit = 0usize;
            let prefix = op.prefix();
            for (idx, c) in rest.char_indices() {
                let allowed = value_char_ok(*op, c)
                    || c == op.separator()
                    || (idx == 0 && prefix.starts_with(c))
                    || (op.named() && (c == '=' || c == '&' || c == ';'));
                if !allowed {
                    break;
                }
                limit = idx + c.len_utf8();
            }
            // Candidate ends, longest first. When a literal follows, only the places where it
            // occurs can end this expression; at the end of the template only the end of the URI.
            let mut ends: Vec<usize> = match parts.get(pi + 1) {
                None => {
                    if rest.len() <= limit {
                        vec![rest.len()]
                    } else {
                        Vec::new()
                    }
                }
                Some(Part::Literal(l)) => {
                    let window = (limit + l.len()).min(rest.len());
                    rest[..window]
                        .match_indices(l.as_str())
                        .map(|(i, _)| i)
                        .filter(|i| *i <= limit)
                        .collect()
                }
                Some(Part::Expr { .. }) => rest[..limit]
                    .char_indices()
                    .map(|(i, c)| i + c.len_utf8())
                    .chain(std::iter::once(0))
                    .collect(),
            };
            ends.sort_unstable_by(|a, b| b.cmp(a));
            ends.dedup();
            for end in ends {
                let piece = &rest[..end];
                if let Some(found) = bind_expr(*op, specs, piece) {
                    let saved = vars.clone();
                    for (k, v) in found {
                        vars.values.insert(k, v);
                    }
                    if match_from(parts, pi + 1, uri, pos + end, vars, failed) {
                        return true;
                    }
                    *vars = saved;
                }
            }
            false
        }
    }
}

/// Binds one expression's variables from the text it expanded to.
fn bind_expr(op: Op, specs: &[VarSpec], piece: &str) -> Option<Vec<(String, String)>> {
    if piece.is_empty() {
        // Every variable undefined: the expansion is empty. Only operators with a prefix
        // (`{?q}`, `{/p}`, ...) may be left out; `{id}` must match at least one character.
        return (!op.prefix().is_empty()).then(Vec::new);
    }
    let body = piece.strip_prefix(op.prefix())?;
    let sep = op.separator();
    let mut out = Vec::new();
    if op.named() {
        let mut by_name: Vec<(String, String)> = Vec::new();
        for item in body.split(sep) {
            let (name, value) = match item.split_once('=') {
                Some((n, v)) => (n, v),
                None if op == Op::PathParam => (item, ""),
                None => return None,
            };
            let value = percent_decode(value)?;
            if let Some(existing) = by_name.iter_mut().find(|(n, _)| n == name) {
                existing.1.push(',');
                existing.1.push_str(&value);
            } else {
                by_name.push((name.to_owned(), value));
            }
        }
        for (name, value) in by_name {
            if !specs.iter().any(|s| s.name == name) {
                return None;
            }
            out.push((name, value));
        }
        return Some(out);
    }
    if specs.len() == 1 {
        let spec = &specs[0];
        let raw = if spec.explode {
            body.split(sep).collect::<Vec<_>>().join(",")
        } else {
            if sep != ',' && body.contains(sep) {
                return None;
            }
            body.to_owned()
        };
        if raw.is_empty() {
            return None;
        }
        out.push((spec.name.clone(), percent_decode(&raw)?));
        return Some(out);
    }
    // Several variables: values in order, split at the separator.
    let items: Vec<&str> = body.split(sep).collect();
    if items.len() > specs.len() {
        return None;
    }
    for (spec, item) in specs.iter().zip(items) {
        out.push((spec.name.clone(), percent_decode(item)?));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(t: &str, uri: &str) -> Option<Vec<(String, String)>> {
        let t = UriTemplate::parse(t).unwrap();
        t.matches(uri).map(|v| {
            let mut list: Vec<_> = v
                .iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            list.sort();
            list
        })
    }

    fn kv(pairs: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
        let mut v: Vec<_> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        v.sort();
        Some(v)
    }

    #[test]
    fn simple_variables() {
        assert_eq!(
            m("test://template/{id}/data", "test://template/123/data"),
            kv(&[("id", "123")])
        );
        assert_eq!(
            m("test://template/{id}/data", "test://template//data"),
            None
        );
        assert_eq!(
            m("test://template/{id}/data", "test://template/1/2/data"),
            None
        );
        assert_eq!(
            m("users/{user}/repos/{repo}", "users/a%20b/repos/x"),
            kv(&[("repo", "x"), ("user", "a b")])
        );
    }

    #[test]
    fn reserved_expansion_spans_slashes() {
        assert_eq!(
            m("file:///{+path}", "file:///etc/hosts"),
            kv(&[("path", "etc/hosts")])
        );
        assert_eq!(m("file:///{path}", "file:///etc/hosts"), None);
    }

    #[test]
    fn query_parameters_are_optional_and_named() {
        let t = "weather://{city}/forecast{?days,units}";
        assert_eq!(m(t, "weather://Oslo/forecast"), kv(&[("city", "Oslo")]));
        assert_eq!(
            m(t, "weather://Oslo/forecast?days=3&units=metric"),
            kv(&[("city", "Oslo"), ("days", "3"), ("units", "metric")])
        );
        assert_eq!(
            m(t, "weather://Oslo/forecast?units=si"),
            kv(&[("city", "Oslo"), ("units", "si")])
        );
        assert_eq!(m(t, "weather://Oslo/forecast?other=1"), None);
    }

    #[test]
    fn path_and_label_operators() {
        assert_eq!(
            m("repo://x{/segments*}", "repo://x/a/b/c"),
            kv(&[("segments", "a,b,c")])
        );
        assert_eq!(
            m("host://www{.domain}", "host://www.example"),
            kv(&[("domain", "example")])
        );
        assert_eq!(
            m("doc://x{#section}", "doc://x#intro"),
            kv(&[("section", "intro")])
        );
        assert_eq!(
            m("map://{;x,y}", "map://;x=1;y=2"),
            kv(&[("x", "1"), ("y", "2")])
        );
    }

    #[test]
    fn expansion_round_trips() {
        let t = UriTemplate::parse("weather://{city}/forecast{?days}").unwrap();
        let mut values = HashMap::new();
        values.insert("city".to_owned(), "New York".to_owned());
        values.insert("days".to_owned(), "2".to_owned());
        let uri = t.expand(&values);
        assert_eq!(uri, "weather://New%20York/forecast?days=2");
        let back = t.matches(&uri).unwrap();
        assert_eq!(back.get("city"), Some("New York"));
        assert_eq!(back.get("days"), Some("2"));
        assert_eq!(t.variables(), vec!["city", "days"]);
    }

    #[test]
    fn bad_templates_are_rejected() {
        assert!(matches!(
            UriTemplate::parse("a{b"),
            Err(UriTemplateError::Unbalanced(_))
        ));
        assert!(matches!(
            UriTemplate::parse("a}b"),
            Err(UriTemplateError::Unbalanced(_))
        ));
        assert!(matches!(
            UriTemplate::parse("a{}"),
            Err(UriTemplateError::InvalidVariable(_))
        ));
        assert!(matches!(
            UriTemplate::parse("a{=x}"),
            Err(UriTemplateError::ReservedOperator('='))
        ));
        assert!(matches!(
            UriTemplate::parse("a{x}{y}"),
            Err(UriTemplateError::Ambiguous(_))
        ));
        assert!(UriTemplate::parse("a{x}{?y}").is_ok());
        let long = "x".repeat(MAX_TEMPLATE_LEN + 1);
        assert_eq!(UriTemplate::parse(&long), Err(UriTemplateError::TooLarge));
    }

    #[test]
    fn pathological_input_is_bounded() {
        let t = UriTemplate::parse("a{+x}b{+y}c{+z}d").unwrap();
        let uri = format!("a{}", "b".repeat(5000));
        assert!(t.matches(&uri).is_none());
        let huge = "a".repeat(MAX_URI_LEN + 1);
        assert!(t.matches(&huge).is_none());
    }

    #[test]
    fn invalid_percent_encoding_does_not_match() {
        assert_eq!(m("x://{id}", "x://%zz"), None);
        assert_eq!(m("x://{id}", "x://%ff"), None);
    }
}
