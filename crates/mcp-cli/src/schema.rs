//! `mcp schema`: the official JSON schema of a revision, or of one type with everything it
//! refers to.
//!
//! The schema files are looked up the way `cargo xtask codegen` does: `--schema-dir`,
//! `$MCP_SCHEMA_DIR`, `./schema`, `../shared/schema`, then the same two folders next to the
//! workspace this binary was built from. They are the protocol's reference; the JSON schemas
//! `schemars` derives from the generated Rust types differ from them in shape (nullable
//! options, per-variant definitions), so the files are what this command prints.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::args::SchemaArgs;
use crate::output::{print, print_json};
use crate::{Exit, Fail};

/// Largest schema file read.
const MAX_SCHEMA_BYTES: u64 = 16 * 1024 * 1024;

pub fn run(args: &SchemaArgs) -> Result<Exit, Fail> {
    let revision = args.revision.as_str();
    let path = find(args.schema_dir.as_deref(), revision)?;
    let schema = load(&path)?;
    if args.list {
        let names: Vec<&String> = definitions(&schema)?.keys().collect();
        let text: String = names.iter().map(|n| format!("{n}\n")).collect();
        print(&text)?;
        return Ok(Exit::Ok);
    }
    match &args.type_name {
        None => print_json(&schema)?,
        Some(name) => print_json(&one_type(&schema, name)?)?,
    }
    Ok(Exit::Ok)
}

fn candidates(explicit: Option<&Path>) -> Vec<PathBuf> {
    if let Some(dir) = explicit {
        return vec![dir.to_owned()];
    }
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::var_os("MCP_SCHEMA_DIR") {
        dirs.push(PathBuf::from(dir));
    }
    dirs.push(PathBuf::from("schema"));
    dirs.push(PathBuf::from("../shared/schema"));
    // The workspace this binary was built in (crates/mcp-cli/../..).
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    dirs.push(workspace.join("schema"));
    dirs.push(workspace.join("../shared/schema"));
    dirs
}

fn find(explicit: Option<&Path>, revision: &str) -> Result<PathBuf, Fail> {
    let dirs = candidates(explicit);
    for dir in &dirs {
        let path = dir.join(revision).join("schema.json");
        if path.is_file() {
            return Ok(path);
        }
    }
    Err(Fail::usage(format!(
        "no {revision}/schema.json found; looked in: {} (give --schema-dir or set MCP_SCHEMA_DIR)",
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

fn load(path: &Path) -> Result<Value, Fail> {
    let size = std::fs::metadata(path)
        .map_err(|e| Fail::other(format!("cannot read {}: {e}", path.display())))?
        .len();
    if size > MAX_SCHEMA_BYTES {
        return Err(Fail::other(format!(
            "{} is {size} bytes, more than the {MAX_SCHEMA_BYTES} accepted",
            path.display()
        )));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| Fail::other(format!("cannot read {}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| Fail::other(format!("{} is not JSON: {e}", path.display())))
}

/// The `$defs` (or draft-07 `definitions`) of a schema.
fn definitions(schema: &Value) -> Result<&Map<String, Value>, Fail> {
    schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))
        .and_then(Value::as_object)
        .ok_or_else(|| Fail::other("the schema has no definitions"))
}

/// `#/$defs/Name` or `#/definitions/Name` to `Name`.
fn ref_name(reference: &str) -> Option<&str> {
    reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))
}

fn collect_refs(value: &Value, into: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                if key == "$ref" {
                    if let Some(name) = item.as_str().and_then(ref_name) {
                        into.insert(name.to_owned());
                    }
                } else {
                    collect_refs(item, into);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_refs(item, into)),
        _ => {}
    }
}

/// A self-contained schema for one type: its definition at the top, and under the same
/// definitions key every definition it refers to, directly or not.
fn one_type(schema: &Value, name: &str) -> Result<Value, Fail> {
    let defs = definitions(schema)?;
    let key = if schema.get("$defs").is_some() {
        "$defs"
    } else {
        "definitions"
    };
    let found = defs
        .keys()
        .find(|k| *k == name)
        .or_else(|| defs.keys().find(|k| k.eq_ignore_ascii_case(name)));
    let Some(found) = found else {
        let lower = name.to_lowercase();
        let near: Vec<&str> = defs
            .keys()
            .filter(|k| k.to_lowercase().contains(&lower))
            .map(String::as_str)
            .take(10)
            .collect();
        let hint = if near.is_empty() {
            "list them with --list".to_owned()
        } else {
            format!("did you mean {}?", near.join(", "))
        };
        return Err(Fail::usage(format!(
            "no type `{name}` in this revision; {hint}"
        )));
    };
    let root = defs[found].clone();
    let mut needed = BTreeMap::new();
    let mut pending = BTreeSet::new();
    collect_refs(&root, &mut pending);
    while let Some(next) = pending.pop_first() {
        if needed.contains_key(&next) {
            continue;
        }
        if let Some(def) = defs.get(&next) {
            let mut more = BTreeSet::new();
            collect_refs(def, &mut more);
            pending.extend(more.into_iter().filter(|m| !needed.contains_key(m)));
            needed.insert(next, def.clone());
        }
    }
    let mut out = Map::new();
    if let Some(dialect) = schema.get("$schema") {
        out.insert("$schema".into(), dialect.clone());
    }
    out.insert("title".into(), json!(found));
    if let Value::Object(body) = root {
        out.extend(body);
    }
    if !needed.is_empty() {
        out.insert(key.into(), Value::Object(needed.into_iter().collect()));
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": {
                "Tool": {"type": "object", "properties": {
                    "name": {"type": "string"},
                    "icons": {"type": "array", "items": {"$ref": "#/$defs/Icon"}}
                }},
                "Icon": {"type": "object", "properties": {"theme": {"$ref": "#/$defs/Theme"}}},
                "Theme": {"enum": ["light", "dark"]},
                "Unrelated": {"type": "string"}
            }
        })
    }

    #[test]
    fn one_type_carries_what_it_refers_to() {
        let tool = one_type(&sample(), "Tool").expect("found");
        assert_eq!(tool["title"], "Tool");
        assert_eq!(tool["type"], "object");
        let defs = tool["$defs"].as_object().expect("defs");
        let names: Vec<&str> = defs.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            vec!["Icon", "Theme"],
            "transitively, and nothing else"
        );
        assert_eq!(
            tool["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
    }

    #[test]
    fn type_names_match_without_case_and_misses_suggest() {
        assert_eq!(one_type(&sample(), "icon").expect("found")["title"], "Icon");
        let miss = one_type(&sample(), "Ico").expect_err("no such type");
        assert_eq!(miss.code, crate::EXIT_USAGE);
        assert!(miss.message.contains("Icon"), "{}", miss.message);
    }

    #[test]
    fn a_missing_directory_is_a_usage_error() {
        let dir = std::env::temp_dir().join("mcp-cli-no-such-schema-dir");
        let fail = find(Some(&dir), "2025-11-25").expect_err("nothing there");
        assert_eq!(fail.code, crate::EXIT_USAGE);
        assert!(fail.message.contains("mcp-cli-no-such-schema-dir"));
    }
}
