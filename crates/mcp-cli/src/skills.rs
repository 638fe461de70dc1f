//! The Skills extension in the `mcp` command: `mcp list skills`, `mcp skill <name>` (the
//! manifest, or one file with `--file`, verified) and the skills `mcp serve --skills DIR`
//! serves.

use std::path::Path;

use base64::Engine as _;
use mcp_client::skills::SkillError;
use mcp_client::{CallError, ClientSession};
use mcp_server::skills::SkillSet;
use mcp_types::skills::{Skill, SkillResources};
use serde_json::{Value, json};

use crate::args::Format;
use crate::client::{call_failure, to_json};
use crate::output::{self, Table, first_line, print, print_json};
use crate::{Exit, Fail, chain};

/// The skills under `dir`, for `mcp serve --skills`.
pub fn load_dir(dir: &Path) -> Result<SkillSet, Fail> {
    SkillSet::from_dir(dir)
        .map_err(|e| Fail::usage(format!("--skills {}: {}", dir.display(), chain(&e))))
}

/// Every entry of `skills/list`, as `mcp list` lists any kind.
pub async fn list_all(session: &ClientSession) -> Result<Vec<Skill>, CallError> {
    let skills = session.skills().map_err(|_| CallError::MissingCapability {
        method: "skills/list",
        capability: "extensions.io.modelcontextprotocol/skills",
    })?;
    skills.list_all().await.map_err(|e| match e {
        SkillError::Call { source, .. } => source,
        other => CallError::InvalidResponse(other.to_string()),
    })
}

/// The `mcp list skills` table.
pub fn table(items: &[Value]) -> Table {
    let mut table = Table::new(&["URI", "NAME", "FILES", "DESCRIPTION"]);
    for item in items {
        let files = match item.get("resources") {
            Some(Value::Array(files)) => files.len().to_string(),
            Some(Value::String(s)) => s.clone(),
            _ => String::new(),
        };
        let frontmatter = item.get("frontmatter");
        let field = |k: &str| frontmatter.and_then(|f| f.get(k)).and_then(Value::as_str);
        table.row(vec![
            item.get("uri")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            field("name").unwrap_or_default().to_owned(),
            files,
            first_line(field("description")),
        ]);
    }
    table
}

fn skill_failure(what: &str, error: &SkillError) -> Fail {
    match error {
        SkillError::Call { source, .. } => call_failure(what, source),
        other => Fail::other(format!("{what}: {}", chain(other))),
    }
}

/// The entry named `name` (a skill name, or the URI of a `SKILL.md`).
async fn find(session: &ClientSession, name: &str) -> Result<Skill, Fail> {
    let skills = session.skills().map_err(|e| Fail::other(chain(&e)))?;
    let listed = skills
        .list_all()
        .await
        .map_err(|e| skill_failure("listing skills", &e))?;
    let matching: Vec<&Skill> = listed
        .iter()
        .filter(|s| s.uri == name || s.name() == name)
        .collect();
    match matching.as_slice() {
        [one] => Ok((*one).clone()),
        [] if name.contains("://") => skills
            .get(name)
            .await
            .map_err(|e| skill_failure(&format!("getting {name}"), &e)),
        [] => Err(Fail::other(format!(
            "the server lists no skill named `{name}` (see `mcp list skills`)"
        ))),
        many => Err(Fail::other(format!(
            "more than one skill is named `{name}`; name one by its URI: {}",
            many.iter()
                .map(|s| s.uri.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The URI of `path` in the skill: a URI as given, a relative path under the skill's root.
fn file_uri(skill: &Skill, path: &str) -> Result<String, Fail> {
    if path.contains("://") {
        return Ok(path.to_owned());
    }
    let root = skill
        .root()
        .ok_or_else(|| Fail::other(format!("{} is not the URI of a SKILL.md", skill.uri)))?;
    let path = path.trim_start_matches("./");
    if path.is_empty()
        || path.starts_with('/')
        || path
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err(Fail::usage(format!(
            "--file {path}: a path inside the skill's directory, without `.` or `..`"
        )));
    }
    Ok(format!("{root}/{path}"))
}

/// `mcp skill <name> [--file PATH]`.
pub async fn skill(
    session: ClientSession,
    name: String,
    file: Option<String>,
    format: Format,
) -> Result<Exit, Fail> {
    let entry = find(&session, &name).await?;
    let Some(path) = file else {
        return manifest(&entry, format);
    };
    let uri = file_uri(&entry, &path)?;
    let skills = session.skills().map_err(|e| Fail::other(chain(&e)))?;
    let read = skills
        .read_file(&entry, &uri)
        .await
        .map_err(|e| skill_failure(&format!("reading {uri}"), &e))?;
    if !read.verified {
        eprintln!(
            "mcp: {} is a dynamic skill: {uri} has no digest to check",
            entry.uri
        );
    }
    match format {
        Format::Json => {
            let mut value = json!({ "uri": read.uri, "verified": read.verified });
            if let Some(mime) = &read.mime_type {
                value["mimeType"] = json!(mime);
            }
            match read.text() {
                Some(text) => value["text"] = json!(text),
                None => {
                    value["blob"] =
                        json!(base64::engine::general_purpose::STANDARD.encode(&read.bytes));
                }
            }
            print_json(&value)?;
        }
        Format::Text => match read.text() {
            Some(text) => print(&output::line(text))?,
            None if !output::stdout_is_terminal() => output::print_bytes(&read.bytes)?,
            None => {
                eprintln!("mcp: binary contents; redirect stdout to a file to save them");
            }
        },
    }
    Ok(Exit::Ok)
}

/// Prints an entry: its frontmatter and the files of its manifest.
fn manifest(entry: &Skill, format: Format) -> Result<Exit, Fail> {
    if format == Format::Json {
        print_json(&to_json(entry))?;
        return Ok(Exit::Ok);
    }
    let mut text = format!("{}\n", entry.uri);
    for (key, value) in &entry.frontmatter {
        let shown = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        text.push_str(&format!("{key}: {shown}\n"));
    }
    match &entry.resources {
        SkillResources::Dynamic => text.push_str("\nfiles: dynamic (no digests)\n"),
        SkillResources::Files(files) => {
            text.push_str(&format!("\nFILES ({})\n", files.len()));
            let mut table = Table::new(&["URI", "SIZE", "DIGEST"]).unlimited();
            for f in files {
                table.row(vec![f.uri.clone(), f.size.to_string(), f.digest.clone()]);
            }
            text.push_str(&table.render());
        }
    }
    print(&text)?;
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_paths_resolve_under_the_skill_root() {
        let skill: Skill = serde_json::from_value(json!({
            "uri": "skill://acme/pdf/SKILL.md",
            "frontmatter": {"name": "pdf", "description": "d"},
            "resources": "dynamic"
        }))
        .unwrap();
        assert_eq!(
            file_uri(&skill, "templates/a.md").unwrap(),
            "skill://acme/pdf/templates/a.md"
        );
        assert_eq!(file_uri(&skill, "./a.md").unwrap(), "skill://acme/pdf/a.md");
        assert_eq!(
            file_uri(&skill, "skill://acme/pdf/x").unwrap(),
            "skill://acme/pdf/x"
        );
        for bad in ["../x", "a/../../b", "/etc/passwd", "a//b", ""] {
            assert!(file_uri(&skill, bad).is_err(), "{bad}");
        }
    }
}
