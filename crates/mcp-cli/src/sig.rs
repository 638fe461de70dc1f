//! Tools, prompts and schemas as one-line signatures:
//! `read_file(path: string, [limit: integer]) -> {content: string}`.
//!
//! Arguments are written required ones first, in the order of the schema's `required` list, then
//! the optional ones by name: the decoded schema keeps no other order.

use std::io::IsTerminal;

use serde_json::Value;

/// Longest nesting written out; deeper objects are `{…}`.
const MAX_DEPTH: usize = 3;

/// Whether stdout gets colour: a terminal, and `NO_COLOR` unset or empty.
pub fn stdout_colour() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// ANSI styles, or none.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    on: bool,
}

impl Style {
    /// Colour when `on`.
    pub fn new(on: bool) -> Self {
        Style { on }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// A name: bold.
    pub fn name(self, text: &str) -> String {
        self.paint("1", text)
    }

    /// A type: cyan.
    pub fn kind(self, text: &str) -> String {
        self.paint("36", text)
    }

    /// Secondary text: dim.
    pub fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }
}

/// The property names of an object schema: required ones in `required` order, then the rest
/// by name.
pub fn property_order(schema: &Value) -> Vec<String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut order: Vec<String> = required(schema)
        .into_iter()
        .filter(|name| properties.contains_key(name))
        .collect();
    for name in properties.keys() {
        if !order.contains(name) {
            order.push(name.clone());
        }
    }
    order
}

/// The names an object schema requires.
pub fn required(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A schema as a type: `string`, `integer[]`, `"a"|"b"`, `{x: number, [y: string]}`.
pub fn type_of(schema: &Value, style: Style) -> String {
    type_at(schema, style, 0)
}

fn type_at(schema: &Value, style: Style, depth: usize) -> String {
    let Some(object) = schema.as_object() else {
        return style.kind(if schema == &Value::Bool(false) {
            "never"
        } else {
            "any"
        });
    };
    if let Some(values) = object.get("enum").and_then(Value::as_array) {
        let alternatives: Vec<String> = values.iter().map(literal).collect();
        return style.kind(&alternatives.join("|"));
    }
    if let Some(value) = object.get("const") {
        return style.kind(&literal(value));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = object.get(key).and_then(Value::as_array) {
            let alternatives: Vec<String> = options
                .iter()
                .map(|o| type_at(o, style, depth + 1))
                .collect();
            return alternatives.join("|");
        }
    }
    if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
        let name = reference.rsplit('/').next().unwrap_or(reference);
        return style.kind(name);
    }
    let types: Vec<&str> = match object.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ if object.contains_key("properties") => vec!["object"],
        _ if object.contains_key("items") => vec!["array"],
        _ => vec![],
    };
    if types.is_empty() {
        return style.kind("any");
    }
    types
        .iter()
        .map(|t| match *t {
            "array" => {
                let item = object
                    .get("items")
                    .map_or_else(|| style.kind("any"), |i| type_at(i, style, depth + 1));
                if item.contains('|') {
                    format!("({item})[]")
                } else {
                    format!("{item}[]")
                }
            }
            "object" if object.contains_key("properties") => {
                if depth >= MAX_DEPTH {
                    "{…}".to_owned()
                } else {
                    format!("{{{}}}", fields(schema, style, depth + 1))
                }
            }
            other => style.kind(other),
        })
        .collect::<Vec<_>>()
        .join("|")
}

/// `a: T, [b: U]` for an object schema's properties.
fn fields(schema: &Value, style: Style, depth: usize) -> String {
    let required = required(schema);
    let properties = schema.get("properties");
    property_order(schema)
        .iter()
        .map(|name| {
            let kind = properties
                .and_then(|p| p.get(name))
                .map_or_else(|| style.kind("any"), |p| type_at(p, style, depth));
            if required.contains(name) {
                format!("{name}: {kind}")
            } else {
                format!("[{name}: {kind}]")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn literal(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// A tool (its `tools/list` JSON) as `name(args) -> output`.
pub fn tool(tool: &Value, style: Style) -> String {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or("?");
    let arguments = tool
        .get("inputSchema")
        .map(|s| fields(s, style, 1))
        .unwrap_or_default();
    let mut text = format!("{}({arguments})", style.name(name));
    if let Some(output) = tool.get("outputSchema") {
        text.push_str(" -> ");
        text.push_str(&type_of(output, style));
    }
    text
}

/// A prompt (its `prompts/list` JSON) as `name(arg, [optional])`; prompt arguments are strings.
pub fn prompt(prompt: &Value, style: Style) -> String {
    let name = prompt.get("name").and_then(Value::as_str).unwrap_or("?");
    let arguments =
        prompt
            .get("arguments")
            .and_then(Value::as_array)
            .map(|args| {
                let (required, optional): (Vec<&Value>, Vec<&Value>) = args
                    .iter()
                    .partition(|a| a.get("required").and_then(Value::as_bool) == Some(true));
                required
                    .iter()
                    .map(|a| {
                        a.get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("?")
                            .to_owned()
                    })
                    .chain(optional.iter().map(|a| {
                        format!("[{}]", a.get("name").and_then(Value::as_str).unwrap_or("?"))
                    }))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
    format!("{}({arguments})", style.name(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PLAIN: Style = Style { on: false };

    #[test]
    fn tools_read_as_signatures() {
        let tool = json!({
            "name": "read_file",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "limit": {"type": "integer"},
                    "path": {"type": "string"},
                    "encoding": {"enum": ["utf8", "base64"]},
                    "tags": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["path", "encoding"]
            },
            "outputSchema": {
                "type": "object",
                "properties": {"content": {"type": "string"}},
                "required": ["content"]
            }
        });
        assert_eq!(
            super::tool(&tool, PLAIN),
            r#"read_file(path: string, encoding: "utf8"|"base64", [limit: integer], [tags: string[]]) -> {content: string}"#
        );
        assert_eq!(
            super::tool(
                &json!({"name": "now", "inputSchema": {"type": "object"}}),
                PLAIN
            ),
            "now()"
        );
    }

    #[test]
    fn types_cover_unions_refs_and_nesting() {
        assert_eq!(
            type_of(&json!({"type": ["string", "null"]}), PLAIN),
            "string|null"
        );
        assert_eq!(
            type_of(
                &json!({"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/Point"}]}),
                PLAIN
            ),
            "integer|Point"
        );
        assert_eq!(
            type_of(
                &json!({"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "number"}]}}),
                PLAIN
            ),
            "(string|number)[]"
        );
        assert_eq!(
            type_of(
                &json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "boolean"}}}}}),
                PLAIN
            ),
            "{[a: {[b: boolean]}]}"
        );
        assert_eq!(type_of(&json!({}), PLAIN), "any");
    }

    #[test]
    fn prompts_put_required_arguments_first() {
        let prompt = json!({"name": "greet", "arguments": [
            {"name": "style"}, {"name": "name", "required": true}
        ]});
        assert_eq!(super::prompt(&prompt, PLAIN), "greet(name, [style])");
    }

    #[test]
    fn colour_wraps_names_and_types() {
        let styled = super::tool(
            &json!({"name": "t", "inputSchema": {"properties": {"a": {"type": "string"}}, "required": ["a"]}}),
            Style::new(true),
        );
        assert_eq!(styled, "\x1b[1mt\x1b[0m(a: \x1b[36mstring\x1b[0m)");
    }
}
