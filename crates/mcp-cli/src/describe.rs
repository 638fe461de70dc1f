//! `mcp describe`: one tool, resource, resource template or prompt in full.

use mcp_client::ClientSession;
use serde_json::Value;

use crate::args::{DescribeKind, Format};
use crate::client::{call_failure, to_json};
use crate::output::{self, print, print_json};
use crate::sig::{self, Style};
use crate::{Exit, Fail};

/// Finds the item and prints it.
pub async fn describe(
    session: ClientSession,
    kind: DescribeKind,
    name: String,
    format: Format,
) -> Result<Exit, Fail> {
    let (what, items): (&str, Vec<Value>) = match kind {
        DescribeKind::Tool => (
            "tool",
            session
                .list_all_tools()
                .await
                .map_err(|e| call_failure("listing tools", &e))?
                .iter()
                .map(to_json)
                .collect(),
        ),
        DescribeKind::Prompt => (
            "prompt",
            session
                .list_all_prompts()
                .await
                .map_err(|e| call_failure("listing prompts", &e))?
                .iter()
                .map(to_json)
                .collect(),
        ),
        DescribeKind::Resource => (
            "resource",
            session
                .list_all_resources()
                .await
                .map_err(|e| call_failure("listing resources", &e))?
                .iter()
                .map(to_json)
                .collect(),
        ),
        DescribeKind::Template => (
            "resource template",
            session
                .list_all_resource_templates()
                .await
                .map_err(|e| call_failure("listing resource templates", &e))?
                .iter()
                .map(to_json)
                .collect(),
        ),
    };
    let keys: &[&str] = match kind {
        DescribeKind::Tool | DescribeKind::Prompt => &["name"],
        DescribeKind::Resource => &["uri", "name"],
        DescribeKind::Template => &["uriTemplate", "name"],
    };
    let key_of = |item: &Value, key: &str| item.get(key).and_then(Value::as_str).map(str::to_owned);
    let found = keys.iter().find_map(|key| {
        items
            .iter()
            .find(|item| key_of(item, key).as_deref() == Some(name.as_str()))
    });
    let Some(item) = found else {
        let known: Vec<String> = items
            .iter()
            .flat_map(|item| keys.iter().filter_map(|key| key_of(item, key)))
            .collect();
        return Err(Fail::usage(format!(
            "the server has no {what} `{name}`{}",
            crate::check::suggestion(&name, known.iter().map(String::as_str))
        )));
    };
    match format {
        Format::Json => print_json(item)?,
        Format::Text => print(&text(kind, item, Style::new(sig::stdout_colour())))?,
    }
    Ok(Exit::Ok)
}

/// An item as text: its signature or address, title, description, schemas, annotations, icons.
pub fn text(kind: DescribeKind, item: &Value, style: Style) -> String {
    let field = |key: &str| item.get(key).and_then(Value::as_str);
    let mut text = match kind {
        DescribeKind::Tool => format!("{}\n", sig::tool(item, style)),
        DescribeKind::Prompt => format!("{}\n", sig::prompt(item, style)),
        DescribeKind::Resource | DescribeKind::Template => format!(
            "{}\n",
            style.name(
                field(if kind == DescribeKind::Resource {
                    "uri"
                } else {
                    "uriTemplate"
                })
                .unwrap_or("?")
            )
        ),
    };
    let mut facts: Vec<(&str, String)> = Vec::new();
    if let Some(name) =
        field("name").filter(|_| matches!(kind, DescribeKind::Resource | DescribeKind::Template))
    {
        facts.push(("name", name.to_owned()));
    }
    if let Some(title) =
        field("title").or_else(|| item.pointer("/annotations/title").and_then(Value::as_str))
    {
        facts.push(("title", title.to_owned()));
    }
    if let Some(mime) = field("mimeType") {
        facts.push(("mime type", mime.to_owned()));
    }
    if let Some(size) = item.get("size").and_then(Value::as_u64) {
        facts.push(("size", format!("{size} bytes")));
    }
    if let Some(annotations) = item.get("annotations").and_then(Value::as_object) {
        let list: Vec<String> = annotations
            .iter()
            .filter(|(key, _)| key.as_str() != "title")
            .map(|(key, value)| format!("{key}: {}", plain(value)))
            .collect();
        if !list.is_empty() {
            facts.push(("annotations", list.join(", ")));
        }
    }
    if let Some(execution) = item.get("execution").and_then(Value::as_object) {
        let list: Vec<String> = execution
            .iter()
            .map(|(key, value)| format!("{key}: {}", plain(value)))
            .collect();
        facts.push(("execution", list.join(", ")));
    }
    for icon in item
        .get("icons")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let mut line = icon
            .get("src")
            .and_then(Value::as_str)
            .map(short_src)
            .unwrap_or_else(|| "?".to_owned());
        let extra: Vec<String> = ["mimeType", "sizes", "theme"]
            .iter()
            .filter_map(|key| icon.get(*key).map(plain))
            .collect();
        if !extra.is_empty() {
            line.push_str(&format!(" ({})", extra.join(", ")));
        }
        facts.push(("icon", line));
    }
    if kind == DescribeKind::Prompt {
        for argument in item
            .get("arguments")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = argument.get("name").and_then(Value::as_str).unwrap_or("?");
            let required = argument.get("required").and_then(Value::as_bool) == Some(true);
            let description = argument
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default();
            facts.push((
                "argument",
                format!(
                    "{name}{}{}{description}",
                    if required { " (required)" } else { "" },
                    if description.is_empty() { "" } else { ": " }
                ),
            ));
        }
    }
    let width = facts.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (key, value) in &facts {
        text.push_str(&format!(
            "{}{}  {value}\n",
            style.dim(key),
            " ".repeat(width - key.len())
        ));
    }
    if let Some(description) = field("description") {
        text.push('\n');
        text.push_str(&output::line(description.trim()));
    }
    for (title, key) in [
        ("input schema", "inputSchema"),
        ("output schema", "outputSchema"),
    ] {
        if let Some(schema) = item.get(key) {
            text.push_str(&format!("\n{}:\n", style.dim(title)));
            text.push_str(&output::line(
                &serde_json::to_string_pretty(schema).unwrap_or_default(),
            ));
        }
    }
    text
}

fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(plain).collect::<Vec<_>>().join(" "),
        other => other.to_string(),
    }
}

/// A `data:` icon shortened to its media type and size.
fn short_src(src: &str) -> String {
    match src.strip_prefix("data:") {
        Some(rest) => {
            let media = rest.split([';', ',']).next().unwrap_or_default();
            format!("data:{media} ({} bytes of data)", rest.len())
        }
        None => src.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_is_described_in_full() {
        let tool = json!({
            "name": "add",
            "title": "Add",
            "description": "Adds two numbers.",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]},
            "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]},
            "annotations": {"readOnlyHint": true, "idempotentHint": true},
            "icons": [{"src": "https://example.com/add.png", "mimeType": "image/png", "sizes": ["48x48"]}]
        });
        let text = text(DescribeKind::Tool, &tool, Style::new(false));
        assert!(
            text.starts_with("add(a: number, b: number) -> {sum: number}\n"),
            "{text}"
        );
        assert!(text.contains("title        Add\n"), "{text}");
        assert!(
            text.contains("annotations  idempotentHint: true, readOnlyHint: true\n"),
            "{text}"
        );
        assert!(
            text.contains("icon         https://example.com/add.png (image/png, 48x48)\n"),
            "{text}"
        );
        assert!(text.contains("\nAdds two numbers.\n"), "{text}");
        assert!(text.contains("input schema:\n{"), "{text}");
        assert!(text.contains("output schema:\n{"), "{text}");
    }
}
