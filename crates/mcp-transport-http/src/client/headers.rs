//! Header values mirrored from the body (2026-07-28 `Mcp-Method`, `Mcp-Name`, and the
//! `Mcp-Param-*` headers of `x-mcp-header` tool parameters).

use std::collections::{HashMap, HashSet};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderMap, HeaderName, HeaderValue};
use mcp_jsonrpc::Id;
use mcp_types::x_mcp_header::{ParamHeader, header_text, param_headers};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

const PREFIX: &str = "=?base64?";
const SUFFIX: &str = "?=";

/// Encodes a body value for a header: as is when it is printable ASCII without leading or
/// trailing whitespace, otherwise (or when it looks like the encoded form itself) as
/// `=?base64?<standard Base64 of the UTF-8 bytes>?=`.
pub(crate) fn encode_header_value(value: &str) -> Option<HeaderValue> {
    let plain = value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && value.trim_matches(' ') == value
        && !(value.starts_with(PREFIX) && value.ends_with(SUFFIX));
    if plain {
        HeaderValue::from_str(value).ok()
    } else {
        let encoded = format!("{PREFIX}{}{SUFFIX}", STANDARD.encode(value.as_bytes()));
        HeaderValue::from_str(&encoded).ok()
    }
}

/// Most `tools/list` requests awaited at once; older ones are forgotten beyond that.
const MAX_PENDING_LISTS: usize = 64;

/// The `x-mcp-header` parameters of the tools the server listed, learned from the `tools/list`
/// results that pass through the transport, so that any client gets its `tools/call` headers
/// right without telling the transport anything.
#[derive(Debug)]
pub(crate) struct ToolHeaders {
    /// Tool name to its annotated parameters (only tools that have some).
    tools: HashMap<String, Vec<ParamHeader>>,
    /// Ids of outbound `tools/list` requests whose results are still to come.
    lists: HashSet<Id>,
    max_tools: usize,
}

#[derive(Deserialize)]
struct ListProbe {
    #[serde(default)]
    tools: Vec<ToolProbe>,
}

#[derive(Deserialize)]
struct ToolProbe {
    name: String,
    #[serde(rename = "inputSchema", default)]
    input_schema: Option<Map<String, Value>>,
}

impl ToolHeaders {
    pub(crate) fn new(max_tools: usize) -> Self {
        ToolHeaders {
            tools: HashMap::new(),
            lists: HashSet::new(),
            max_tools,
        }
    }

    /// Notes the ids of `tools/list` requests about to be sent.
    pub(crate) fn expect_lists(&mut self, ids: &[Id]) {
        if ids.is_empty() {
            return;
        }
        if self.lists.len() + ids.len() > MAX_PENDING_LISTS {
            self.lists.clear();
        }
        self.lists.extend(ids.iter().cloned());
    }

    /// Learns from the result of a response with `id` if it answers a `tools/list`.
    pub(crate) fn learn(&mut self, id: &Id, result: &str) {
        if !self.lists.remove(id) {
            return;
        }
        let list: ListProbe = match serde_json::from_str(result) {
            Ok(list) => list,
            Err(error) => {
                tracing::debug!(%error, "tools/list result without a readable tool list");
                return;
            }
        };
        for tool in list.tools {
            let headers = match tool.input_schema.as_ref().map(param_headers) {
                Some(Ok(headers)) => headers,
                Some(Err(error)) => {
                    // The client drops such a tool; a call to it anyway gets no headers.
                    tracing::debug!(tool = %tool.name, %error, "invalid x-mcp-header annotation");
                    Vec::new()
                }
                None => Vec::new(),
            };
            if headers.is_empty() {
                self.tools.remove(&tool.name);
            } else if self.tools.len() < self.max_tools || self.tools.contains_key(&tool.name) {
                self.tools.insert(tool.name, headers);
            } else {
                tracing::warn!(
                    tool = %tool.name,
                    limit = self.max_tools,
                    "too many tools with x-mcp-header parameters; this one gets no Mcp-Param headers"
                );
            }
        }
    }

    /// Adds the `Mcp-Param-*` headers of a `tools/call` of `tool` with `arguments`.
    pub(crate) fn mirror(&self, tool: &str, arguments: Option<&RawValue>, headers: &mut HeaderMap) {
        let Some(params) = self.tools.get(tool) else {
            return;
        };
        let Some(arguments) =
            arguments.and_then(|raw| serde_json::from_str::<Map<String, Value>>(raw.get()).ok())
        else {
            return;
        };
        for param in params {
            let Some(text) = param.value_in(&arguments).and_then(header_text) else {
                continue;
            };
            let name = HeaderName::from_bytes(param.header_name().as_bytes());
            match (name, encode_header_value(&text)) {
                (Ok(name), Some(value)) => {
                    headers.insert(name, value);
                }
                _ => tracing::debug!(header = %param.header_name(), "cannot form the header"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: &str) -> String {
        encode_header_value(v).unwrap().to_str().unwrap().to_owned()
    }

    #[test]
    fn plain_ascii_passes_and_the_rest_is_base64() {
        assert_eq!(enc("tools/call"), "tools/call");
        assert_eq!(enc("us west 1"), "us west 1");
        assert_eq!(enc(""), "");
        assert_eq!(
            enc("file:///path/to/file%20name.txt"),
            "file:///path/to/file%20name.txt"
        );
        assert_eq!(enc(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(enc("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(enc("line1\r\nline2"), "=?base64?bGluZTENCmxpbmUy?=");
        assert_eq!(
            enc("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
    }

    #[test]
    fn mirrors_parameters_of_listed_tools_only() {
        let mut known = ToolHeaders::new(1);
        let list = Id::Number(3);
        known.expect_lists(std::slice::from_ref(&list));
        let result = serde_json::to_string(&serde_json::json!({"tools": [
            {"name": "sql", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "n": {"type": "integer", "x-mcp-header": "N"},
                "deep": {"type": "object", "properties": {"on": {"type": "boolean", "x-mcp-header": "On"}}},
                "query": {"type": "string"}
            }}},
            {"name": "bad", "inputSchema": {"type": "object", "properties": {
                "x": {"type": "number", "x-mcp-header": "X"}
            }}},
            {"name": "second", "inputSchema": {"type": "object", "properties": {
                "y": {"type": "string", "x-mcp-header": "Y"}
            }}}
        ]}))
        .unwrap();
        let raw = RawValue::from_string(result).unwrap();
        // A response to something else teaches nothing.
        known.learn(&Id::Number(4), raw.get());
        assert!(known.tools.is_empty());
        known.learn(&list, raw.get());
        assert_eq!(
            known.tools.len(),
            1,
            "bounded by max_tools; invalid tools skipped"
        );
        let args = RawValue::from_string(
            r#"{"region":"Hello, 世界","n":42,"deep":{"on":true},"query":"q"}"#.to_owned(),
        )
        .unwrap();
        let mut headers = HeaderMap::new();
        known.mirror("sql", Some(&args), &mut headers);
        assert_eq!(
            headers["mcp-param-region"],
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(headers["mcp-param-n"], "42");
        assert_eq!(headers["mcp-param-on"], "true");
        assert_eq!(headers.len(), 3);
        let mut none = HeaderMap::new();
        known.mirror("bad", Some(&args), &mut none);
        known.mirror("sql", None, &mut none);
        assert!(none.is_empty());
    }
}
