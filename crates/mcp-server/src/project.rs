//! Projection of results to the client's negotiated revision: fields and content kinds a
//! revision does not define are never sent to its clients.

use serde_json::{Value, json};

use crate::model::ProtocolVersion;

use ProtocolVersion::{V2025_03_26 as R0326, V2025_06_18 as R0618, V2025_11_25 as R1125};

fn remove(v: &mut Value, keys: &[&str]) {
    if let Value::Object(map) = v {
        for k in keys {
            map.remove(*k);
        }
    }
}

fn each(v: &mut Value, key: &str, f: impl Fn(&mut Value)) {
    if let Some(Value::Array(items)) = v.get_mut(key) {
        items.iter_mut().for_each(f);
    }
}

fn annotations(v: &mut Value, version: ProtocolVersion) {
    if version < R0618 {
        if let Some(a) = v.get_mut("annotations") {
            remove(a, &["lastModified"]);
        }
    }
}

/// Projects the fields every named entity shares (`title`, `icons`, `_meta`).
fn base_metadata(v: &mut Value, version: ProtocolVersion) {
    if version < R0618 {
        remove(v, &["title", "_meta"]);
    }
    if version < R1125 {
        remove(v, &["icons"]);
    }
}

pub(crate) fn implementation(v: &mut Value, version: ProtocolVersion) {
    base_metadata(v, version);
    if version < R1125 {
        remove(v, &["description", "websiteUrl"]);
    }
}

pub(crate) fn content_block(v: &mut Value, version: ProtocolVersion) {
    let kind = v.get("type").and_then(Value::as_str).unwrap_or_default();
    match kind {
        "audio" if version < R0326 => {
            let mime = v.get("mimeType").and_then(Value::as_str).unwrap_or("audio");
            *v = json!({
                "type": "text",
                "text": format!("[{mime} content omitted: audio is not supported by protocol revision {version}]"),
            });
            return;
        }
        "resource_link" if version < R0618 => {
            let uri = v.get("uri").and_then(Value::as_str).unwrap_or_default();
            let name = v.get("name").and_then(Value::as_str).unwrap_or(uri);
            *v = json!({"type": "text", "text": format!("{name}: {uri}")});
            return;
        }
        "resource_link" => base_metadata(v, version),
        "resource" => {
            if let Some(r) = v.get_mut("resource") {
                resource_contents(r, version);
            }
        }
        _ => {}
    }
    if version < R0618 {
        remove(v, &["_meta"]);
    }
    annotations(v, version);
}

fn resource_contents(v: &mut Value, version: ProtocolVersion) {
    if version < R0618 {
        remove(v, &["_meta"]);
    }
}

fn tool(v: &mut Value, version: ProtocolVersion) {
    base_metadata(v, version);
    if version < R0326 {
        remove(v, &["annotations"]);
    }
    if version < R0618 {
        remove(v, &["outputSchema"]);
    }
    if version < R1125 {
        remove(v, &["execution"]);
    }
}

fn resource_like(v: &mut Value, version: ProtocolVersion) {
    base_metadata(v, version);
    annotations(v, version);
}

fn prompt(v: &mut Value, version: ProtocolVersion) {
    base_metadata(v, version);
    if version < R0618 {
        each(v, "arguments", |a| remove(a, &["title"]));
    }
}

/// Projects the result of `method` for a client on `version`.
pub(crate) fn result(method: &str, v: &mut Value, version: ProtocolVersion) {
    match method {
        "initialize" => {
            if let Some(info) = v.get_mut("serverInfo") {
                implementation(info, version);
            }
            if version < R0326 {
                if let Some(caps) = v.get_mut("capabilities") {
                    remove(caps, &["completions"]);
                }
            }
        }
        "tools/list" => each(v, "tools", |t| tool(t, version)),
        "tools/call" => {
            if version < R0618 {
                remove(v, &["structuredContent"]);
            }
            each(v, "content", |c| content_block(c, version));
        }
        "resources/list" => each(v, "resources", |r| resource_like(r, version)),
        "resources/templates/list" => each(v, "resourceTemplates", |r| resource_like(r, version)),
        "resources/read" => each(v, "contents", |c| resource_contents(c, version)),
        "prompts/list" => each(v, "prompts", |p| prompt(p, version)),
        "prompts/get" => each(v, "messages", |m| {
            if let Some(c) = m.get_mut("content") {
                content_block(c, version);
            }
        }),
        _ => {}
    }
}

/// Whether `method` (client to server) exists in `version`.
pub(crate) fn client_method_exists(method: &str, _version: ProtocolVersion) -> bool {
    // Every client-to-server request of the stateful revisions exists in all four of them.
    matches!(
        method,
        "initialize"
            | "ping"
            | "tools/list"
            | "tools/call"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
            | "resources/subscribe"
            | "resources/unsubscribe"
            | "prompts/list"
            | "prompts/get"
            | "completion/complete"
            | "logging/setLevel"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ProtocolVersion::V2024_11_05 as R1105;

    #[test]
    fn old_clients_get_no_new_tool_fields() {
        let full = json!({"tools": [{
            "name": "t", "title": "T", "description": "d",
            "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true}, "icons": [{"src": "x"}], "_meta": {}
        }]});
        let mut v = full.clone();
        result("tools/list", &mut v, R1105);
        assert_eq!(
            v,
            json!({"tools": [{"name": "t", "description": "d", "inputSchema": {"type": "object"}}]})
        );
        let mut v = full.clone();
        result("tools/list", &mut v, R0326);
        assert_eq!(v["tools"][0]["annotations"], json!({"readOnlyHint": true}));
        assert!(v["tools"][0].get("title").is_none());
        let mut v = full.clone();
        result("tools/list", &mut v, R0618);
        assert!(v["tools"][0].get("icons").is_none());
        assert_eq!(v["tools"][0]["title"], "T");
        let mut v = full.clone();
        result("tools/list", &mut v, R1125);
        assert_eq!(v, full);
    }

    #[test]
    fn content_kinds_degrade_to_text() {
        let mut v = json!({"content": [
            {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///a", "name": "a"}
        ], "structuredContent": {"x": 1}});
        result("tools/call", &mut v, R1105);
        assert_eq!(v["content"][0]["type"], "text");
        assert_eq!(
            v["content"][1],
            json!({"type": "text", "text": "a: file:///a"})
        );
        assert!(v.get("structuredContent").is_none());
    }
}
