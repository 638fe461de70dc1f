//! An opt-in compatibility layer for the `mcp/`-prefixed method names of an early design
//! document of the protocol (`mcp/initialize`, `mcp/listTools`, `mcp/listResources`,
//! `mcp/tool/execute`, `mcp/resource/read`).
//!
//! Each name is mapped onto the standard method and its result reshaped as that document
//! describes:
//!
//! | legacy method | standard method | result |
//! |---|---|---|
//! | `mcp/initialize` | `initialize` (missing `protocolVersion`, `capabilities` or `clientInfo` are filled in) | the standard result plus `methods`: the legacy methods served |
//! | `mcp/listTools` | `tools/list`, every page | an array of tools, each with `toolId` (= `name`) |
//! | `mcp/listResources` | `resources/list` and `resources/templates/list`, every page | an array of resources, each with `resourceId` (= `uri` or `uriTemplate`); templates carry a `querySchema` of their variables |
//! | `mcp/tool/execute` `{toolId, inputs}` | `tools/call` `{name, arguments}` | `structuredContent` if the tool has it, else the `content` array; an `isError` result becomes JSON-RPC error `-32000` with the result in `data` |
//! | `mcp/resource/read` `{resourceId, query?}` | `resources/read` (a template is expanded with `query`; for a plain URI, `query` becomes its query string) | the `contents` array |
//!
//! It is off by default; enable it with
//! `ServerBuilder::middleware(LegacyMethods)`.

use std::collections::HashMap;

use mcp_jsonrpc::{ErrorObject, RawJson};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::context::BoxFuture;
use crate::handler::{Middleware, Next, Request};
use crate::uri_template::UriTemplate;

/// The error code of a failed `mcp/tool/execute`.
pub const LEGACY_TOOL_FAILED: i64 = -32000;

/// Most pages a legacy list walks before giving up (bounds a misbehaving handler).
const MAX_PAGES: usize = 1000;

/// The `mcp/`-prefixed method layer (see the [module docs](self)).
#[derive(Debug, Clone, Copy, Default)]
pub struct LegacyMethods;

const LEGACY: [&str; 5] = [
    "mcp/initialize",
    "mcp/listTools",
    "mcp/listResources",
    "mcp/tool/execute",
    "mcp/resource/read",
];

fn inner(req: &Request, method: &str, params: Value) -> Result<Request, ErrorObject> {
    let raw = mcp_jsonrpc::to_raw(&params).map_err(ErrorObject::internal_error)?;
    Ok(Request::derived(req, method, Some(raw)))
}

/// Runs an inner request and reads its (projected) result as JSON.
async fn run(next: Next<'_>, request: Request) -> Result<Value, ErrorObject> {
    let raw = next.run(request).await?;
    raw.parse().map_err(ErrorObject::internal_error)
}

fn obj(params: Option<&RawValue>) -> Result<Map<String, Value>, ErrorObject> {
    let Some(raw) = params else {
        return Ok(Map::new());
    };
    match mcp_jsonrpc::from_raw::<Value>(raw) {
        Ok(Value::Null) => Ok(Map::new()),
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(ErrorObject::invalid_params("params must be an object")),
    }
}

fn to_raw(value: &Value) -> Result<RawJson, ErrorObject> {
    RawJson::serialize(value).map_err(ErrorObject::internal_error)
}

async fn all_pages(
    req: &Request,
    next: Next<'_>,
    method: &str,
    key: &str,
) -> Result<Vec<Value>, ErrorObject> {
    let mut items = Vec::new();
    let mut cursor: Option<Value> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let mut page = run(next, inner(req, method, params)?).await?;
        if let Some(Value::Array(list)) = page.get_mut(key).map(Value::take) {
            items.extend(list);
        }
        match page.get("nextCursor") {
            Some(c @ Value::String(_)) => cursor = Some(c.clone()),
            _ => return Ok(items),
        }
    }
    Err(ErrorObject::internal_error("too many pages"))
}

impl LegacyMethods {
    async fn run(&self, req: Request, next: Next<'_>) -> Result<RawJson, ErrorObject> {
        let params = obj(req.params.as_deref())?;
        match req.method.as_str() {
            "mcp/initialize" => {
                let mut p = params;
                p.entry("protocolVersion")
                    .or_insert_with(|| json!(mcp_types::wire::latest_session_version().as_str()));
                p.entry("capabilities").or_insert_with(|| json!({}));
                p.entry("clientInfo")
                    .or_insert_with(|| json!({"name": "legacy-client", "version": "0"}));
                let mut result = run(next, inner(&req, "initialize", Value::Object(p))?).await?;
                result["methods"] = json!(LEGACY);
                to_raw(&result)
            }
            "mcp/listTools" => {
                let tools = all_pages(&req, next, "tools/list", "tools").await?;
                to_raw(&Value::Array(
                    tools
                        .into_iter()
                        .map(|mut t| {
                            let id = t.get("name").cloned().unwrap_or(Value::Null);
                            t["toolId"] = id;
                            t
                        })
                        .collect(),
                ))
            }
            "mcp/listResources" => {
                let mut out: Vec<Value> = all_pages(&req, next, "resources/list", "resources")
                    .await?
                    .into_iter()
                    .map(|mut r| {
                        let id = r.get("uri").cloned().unwrap_or(Value::Null);
                        r["resourceId"] = id;
                        r
                    })
                    .collect();
                let templates =
                    all_pages(&req, next, "resources/templates/list", "resourceTemplates").await?;
                for mut t in templates {
                    let tpl = t.get("uriTemplate").and_then(Value::as_str).unwrap_or("");
                    let vars: Vec<String> = UriTemplate::parse(tpl)
                        .map(|p| p.variables().into_iter().map(str::to_owned).collect())
                        .unwrap_or_default();
                    let mut props = Map::new();
                    for v in &vars {
                        props.insert(v.clone(), json!({"type": "string"}));
                    }
                    t["resourceId"] = json!(tpl);
                    t["querySchema"] = json!({"type": "object", "properties": props});
                    out.push(t);
                }
                to_raw(&Value::Array(out))
            }
            "mcp/tool/execute" => {
                let Some(Value::String(tool)) = params.get("toolId") else {
                    return Err(ErrorObject::invalid_params(
                        "`toolId` (a string) is required",
                    ));
                };
                let inputs = match params.get("inputs") {
                    None | Some(Value::Null) => json!({}),
                    Some(v @ Value::Object(_)) => v.clone(),
                    Some(_) => {
                        return Err(ErrorObject::invalid_params("`inputs` must be an object"));
                    }
                };
                let call = inner(
                    &req,
                    "tools/call",
                    json!({"name": tool, "arguments": inputs}),
                )?;
                let result = run(next, call).await?;
                if result.get("isError") == Some(&Value::Bool(true)) {
                    let text = result["content"]
                        .as_array()
                        .and_then(|c| c.iter().find_map(|b| b.get("text")?.as_str()))
                        .unwrap_or("tool execution failed")
                        .to_owned();
                    return Err(crate::error::with_data(
                        ErrorObject::new(LEGACY_TOOL_FAILED, text),
                        &result,
                    ));
                }
                let empty = json!([]);
                to_raw(match result.get("structuredContent") {
                    Some(s) => s,
                    None => result.get("content").unwrap_or(&empty),
                })
            }
            "mcp/resource/read" => {
                let Some(Value::String(id)) = params.get("resourceId") else {
                    return Err(ErrorObject::invalid_params(
                        "`resourceId` (a string) is required",
                    ));
                };
                let uri = match params.get("query") {
                    None | Some(Value::Null) => id.clone(),
                    Some(Value::Object(q)) => with_query(id, q)?,
                    Some(_) => {
                        return Err(ErrorObject::invalid_params("`query` must be an object"));
                    }
                };
                let result = run(next, inner(&req, "resources/read", json!({"uri": uri}))?).await?;
                let empty = json!([]);
                to_raw(result.get("contents").unwrap_or(&empty))
            }
            _ => next.run(req).await,
        }
    }
}

fn scalar_string(v: &Value) -> Result<String, ErrorObject> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err(ErrorObject::invalid_params(
            "`query` values must be strings, numbers or booleans",
        )),
    }
}

/// Expands a template `resourceId` with `query`, or appends `query` to a plain URI.
fn with_query(id: &str, query: &Map<String, Value>) -> Result<String, ErrorObject> {
    let mut values = HashMap::new();
    for (k, v) in query {
        values.insert(k.clone(), scalar_string(v)?);
    }
    if id.contains('{') {
        let t = UriTemplate::parse(id)
            .map_err(|e| ErrorObject::invalid_params(format!("invalid resourceId: {e}")))?;
        return Ok(t.expand(&values));
    }
    if values.is_empty() {
        return Ok(id.to_owned());
    }
    let mut keys: Vec<&String> = values.keys().collect();
    keys.sort();
    let spec: Vec<&str> = keys.iter().map(|k| k.as_str()).collect();
    let t = UriTemplate::parse(&format!("{{?{}}}", spec.join(",")))
        .map_err(|e| ErrorObject::invalid_params(format!("invalid query: {e}")))?;
    let q = t.expand(&values);
    let q = if id.contains('?') {
        q.replacen('?', "&", 1)
    } else {
        q
    };
    Ok(format!("{id}{q}"))
}

impl Middleware for LegacyMethods {
    fn handle<'a>(
        &'a self,
        request: Request,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<RawJson, ErrorObject>> {
        Box::pin(self.run(request, next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_expands_templates_and_plain_uris() {
        let mut q = Map::new();
        q.insert("city".into(), json!("Oslo"));
        q.insert("days".into(), json!(3));
        assert_eq!(
            with_query("weather://{city}/forecast{?days}", &q).unwrap(),
            "weather://Oslo/forecast?days=3"
        );
        assert_eq!(
            with_query("data://x", &q).unwrap(),
            "data://x?city=Oslo&days=3"
        );
        assert_eq!(
            with_query("data://x?a=1", &q).unwrap(),
            "data://x?a=1&city=Oslo&days=3"
        );
        q.insert("bad".into(), json!({"nested": true}));
        assert!(with_query("data://x", &q).is_err());
    }
}
