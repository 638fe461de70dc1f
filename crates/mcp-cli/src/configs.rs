//! Server configurations where MCP clients keep them: the `mcpServers` format (Claude Desktop,
//! Claude Code, Cursor, Windsurf) and VS Code's `servers` format; `mcp servers`, servers by
//! name, and `mcp install`.

use std::path::{Path, PathBuf};

use mcp_client::config::{HostConfig, ServerConfig};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::args::{InstallArgs, ServersArgs};
use crate::output::{Table, print, print_json};
use crate::{Exit, Fail, chain};

/// A client whose configuration this command knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ClientApp {
    /// Claude Desktop (`claude_desktop_config.json`)
    ClaudeDesktop,
    /// Claude Code (`~/.claude.json`, and `.mcp.json` in a project)
    ClaudeCode,
    /// Cursor (`~/.cursor/mcp.json`, and `.cursor/mcp.json` in a project)
    Cursor,
    /// VS Code (the user's `mcp.json`, and `.vscode/mcp.json` in a project)
    Vscode,
    /// Windsurf (`~/.codeium/windsurf/mcp_config.json`)
    Windsurf,
}

impl ClientApp {
    /// How the client is named in output.
    pub fn label(self) -> &'static str {
        match self {
            ClientApp::ClaudeDesktop => "Claude Desktop",
            ClientApp::ClaudeCode => "Claude Code",
            ClientApp::Cursor => "Cursor",
            ClientApp::Vscode => "VS Code",
            ClientApp::Windsurf => "Windsurf",
        }
    }

    /// The key its servers live under.
    fn key(self) -> &'static str {
        match self {
            ClientApp::Vscode => "servers",
            _ => "mcpServers",
        }
    }
}

/// One configuration file a client reads.
#[derive(Debug, Clone)]
pub struct KnownFile {
    /// The client.
    pub app: ClientApp,
    /// Where.
    pub path: PathBuf,
    /// A project file (in the current directory) rather than the user's.
    pub project: bool,
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The user's configuration directory: `$XDG_CONFIG_HOME` or `~/.config` on Linux and other
/// Unixes, `~/Library/Application Support` on macOS, `%APPDATA%` on Windows.
pub fn config_dir() -> Option<PathBuf> {
    if cfg!(target_os = "macos") {
        return home().map(|h| h.join("Library/Application Support"));
    }
    if cfg!(windows) {
        return std::env::var_os("APPDATA")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| home().map(|h| h.join("AppData/Roaming")));
    }
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| home().map(|h| h.join(".config")))
}

/// Where `app` keeps its user configuration on this system.
pub fn user_file(app: ClientApp) -> Option<PathBuf> {
    let home = home()?;
    Some(match app {
        ClientApp::ClaudeDesktop => config_dir()?.join("Claude/claude_desktop_config.json"),
        ClientApp::ClaudeCode => home.join(".claude.json"),
        ClientApp::Cursor => home.join(".cursor/mcp.json"),
        ClientApp::Vscode => config_dir()?.join("Code/User/mcp.json"),
        ClientApp::Windsurf => home.join(".codeium/windsurf/mcp_config.json"),
    })
}

/// Where `app` keeps a project's configuration, relative to the project.
fn project_file(app: ClientApp) -> Option<&'static str> {
    match app {
        ClientApp::ClaudeCode => Some(".mcp.json"),
        ClientApp::Cursor => Some(".cursor/mcp.json"),
        ClientApp::Vscode => Some(".vscode/mcp.json"),
        ClientApp::ClaudeDesktop | ClientApp::Windsurf => None,
    }
}

const APPS: [ClientApp; 5] = [
    ClientApp::ClaudeDesktop,
    ClientApp::ClaudeCode,
    ClientApp::Cursor,
    ClientApp::Vscode,
    ClientApp::Windsurf,
];

/// Every configuration file the known clients read here, project files first.
pub fn known_files() -> Vec<KnownFile> {
    let mut files = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        for app in APPS {
            if let Some(relative) = project_file(app) {
                files.push(KnownFile {
                    app,
                    path: cwd.join(relative),
                    project: true,
                });
            }
        }
    }
    for app in APPS {
        if let Some(path) = user_file(app) {
            files.push(KnownFile {
                app,
                path,
                project: false,
            });
        }
    }
    files
}

/// Reads a configuration in either format: `mcpServers` (with Windsurf's `serverUrl` read as
/// `url`) or VS Code's `servers`. Claude Code's `~/.claude.json` also has servers per project;
/// those of the current directory are added.
pub fn parse(value: &Value) -> Result<HostConfig, Fail> {
    let mut servers = Map::new();
    let top = value
        .as_object()
        .ok_or_else(|| Fail::usage("the configuration is not a JSON object"))?;
    let sections = ["mcpServers", "servers"];
    if !sections.iter().any(|key| top.contains_key(*key)) {
        return Err(Fail::usage(
            "the configuration has neither `mcpServers` nor `servers`",
        ));
    }
    for key in sections {
        if let Some(section) = top.get(key).and_then(Value::as_object) {
            for (name, entry) in section {
                servers.insert(name.clone(), normalise(entry));
            }
        }
    }
    if let (Some(projects), Ok(cwd)) = (
        top.get("projects").and_then(Value::as_object),
        std::env::current_dir(),
    ) {
        let here = cwd.to_string_lossy();
        if let Some(section) = projects
            .get(here.as_ref())
            .and_then(|p| p.get("mcpServers"))
            .and_then(Value::as_object)
        {
            for (name, entry) in section {
                servers.insert(name.clone(), normalise(entry));
            }
        }
    }
    HostConfig::from_value(&json!({ "mcpServers": servers })).map_err(|e| Fail::usage(chain(&e)))
}

fn normalise(entry: &Value) -> Value {
    let mut entry = entry.clone();
    if let Some(object) = entry.as_object_mut() {
        if !object.contains_key("url") {
            if let Some(url) = object.remove("serverUrl") {
                object.insert("url".to_owned(), url);
            }
        }
    }
    entry
}

/// Reads and parses a configuration file.
pub fn read(path: &Path) -> Result<HostConfig, Fail> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Fail::usage(format!("cannot read {}: {e}", path.display())))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| Fail::usage(format!("{} is not valid JSON: {e}", path.display())))?;
    parse(&value).map_err(|fail| Fail::usage(format!("{}: {}", path.display(), fail.message)))
}

/// A server found in a known configuration.
#[derive(Debug, Clone)]
pub struct Found {
    /// Its name there.
    pub name: String,
    /// How to reach it.
    pub config: ServerConfig,
    /// The file.
    pub file: KnownFile,
}

/// Every server in the known configurations, and the files that could not be read.
pub fn discover() -> (Vec<Found>, Vec<String>) {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    for file in known_files() {
        if !file.path.is_file() {
            continue;
        }
        match read(&file.path) {
            Ok(config) => {
                for (name, config) in config.servers {
                    found.push(Found {
                        name,
                        config,
                        file: file.clone(),
                    });
                }
            }
            Err(fail) => problems.push(fail.message),
        }
    }
    (found, problems)
}

/// The server called `name` in the known configurations (the first, project files first).
pub fn by_name(name: &str) -> Result<(ServerConfig, PathBuf), Fail> {
    let (found, problems) = discover();
    for problem in &problems {
        tracing::warn!("{problem}");
    }
    if let Some(hit) = found.iter().find(|f| f.name == name) {
        return Ok((hit.config.clone(), hit.file.path.clone()));
    }
    let names: Vec<&str> = found.iter().map(|f| f.name.as_str()).collect();
    if names.is_empty() {
        return Err(Fail::usage(format!(
            "no server `{name}`: no client configuration names any server (see `mcp servers`)"
        )));
    }
    Err(Fail::usage(format!(
        "no server `{name}` in the client configurations{} (see `mcp servers`)",
        crate::check::suggestion(name, names)
    )))
}

/// Whether `name` is a server of the known configurations.
pub fn is_known(name: &str) -> bool {
    discover().0.iter().any(|f| f.name == name)
}

fn transport(config: &ServerConfig) -> (&'static str, String) {
    match config {
        ServerConfig::Stdio(stdio) => {
            let mut line = stdio.command.clone();
            for arg in &stdio.args {
                line.push(' ');
                line.push_str(arg);
            }
            ("stdio", line)
        }
        ServerConfig::Http(http) if http.legacy_sse => ("sse", http.url.clone()),
        ServerConfig::Http(http) => ("http", http.url.clone()),
        _ => ("?", String::new()),
    }
}

/// `mcp servers`.
pub fn servers(args: &ServersArgs) -> Result<Exit, Fail> {
    let (found, problems) = discover();
    for problem in &problems {
        eprintln!("mcp: {problem}");
    }
    if args.output.format() == crate::args::Format::Json {
        let list: Vec<Value> = found
            .iter()
            .map(|f| {
                let (kind, target) = transport(&f.config);
                json!({
                    "name": f.name,
                    "client": f.file.app.label(),
                    "transport": kind,
                    "target": target,
                    "file": f.file.path,
                    "project": f.file.project,
                })
            })
            .collect();
        print_json(&list)?;
        return Ok(Exit::Ok);
    }
    if found.is_empty() {
        eprintln!("mcp: no server in the known client configurations; looked at:");
        for file in known_files() {
            eprintln!("  {} ({})", file.path.display(), file.app.label());
        }
        return Ok(Exit::Ok);
    }
    let mut table = Table::new(&["NAME", "CLIENT", "TRANSPORT", "COMMAND OR URL", "FILE"]);
    for f in &found {
        let (kind, target) = transport(&f.config);
        table.row(vec![
            f.name.clone(),
            f.file.app.label().to_owned(),
            kind.to_owned(),
            target,
            f.file.path.display().to_string(),
        ]);
    }
    print(&table.render())?;
    Ok(Exit::Ok)
}

/// A JSON object read with its members in file order, each member's value kept as written.
struct Ordered(Vec<(String, Box<RawValue>)>);

impl<'de> serde::Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut members = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Box<RawValue>>()? {
                    members.push((key, value));
                }
                Ok(Ordered(members))
            }
        }
        deserializer.deserialize_map(Members)
    }
}

impl serde::Serialize for Ordered {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl Ordered {
    fn set(&mut self, key: &str, value: Box<RawValue>) -> Option<Box<RawValue>> {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some((_, slot)) => Some(std::mem::replace(slot, value)),
            None => {
                self.0.push((key.to_owned(), value));
                None
            }
        }
    }

    fn get(&self, key: &str) -> Option<&RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| &**v)
    }
}

fn raw(value: &impl serde::Serialize) -> Result<Box<RawValue>, Fail> {
    serde_json::value::to_raw_value(value)
        .map_err(|e| Fail::other(format!("cannot encode the entry: {e}")))
}

/// An object whose members keep the order they were added in.
#[derive(Default)]
struct Entry(Vec<(String, Value)>);

impl Entry {
    fn insert(&mut self, key: &str, value: Value) {
        self.0.push((key.to_owned(), value));
    }

    fn to_value(&self) -> Value {
        Value::Object(self.0.iter().cloned().collect())
    }

    fn to_raw(&self) -> Result<Box<RawValue>, Fail> {
        let members = self
            .0
            .iter()
            .map(|(k, v)| Ok((k.clone(), raw(v)?)))
            .collect::<Result<Vec<_>, Fail>>()?;
        raw(&Ordered(members))
    }
}

/// The entry `install` writes for `app`, its members in the order clients write them.
fn entry_for(app: ClientApp, args: &InstallArgs) -> Result<Entry, Fail> {
    let mut entry = Entry::default();
    if let Some(url) = &args.url {
        if app == ClientApp::Vscode {
            entry.insert("type", json!(if args.sse { "sse" } else { "http" }));
        } else if args.sse {
            entry.insert("type", json!("sse"));
        }
        let key = if app == ClientApp::Windsurf {
            "serverUrl"
        } else {
            "url"
        };
        entry.insert(key, json!(url));
        if !args.headers.is_empty() {
            let mut headers = Map::new();
            for header in &args.headers {
                let (name, value) = header.split_once(':').ok_or_else(|| {
                    Fail::usage(format!("header `{header}` is not 'Name: value'"))
                })?;
                headers.insert(name.trim().to_owned(), json!(value.trim()));
            }
            entry.insert("headers", Value::Object(headers));
        }
    } else {
        let Some((command, rest)) = args.command.split_first() else {
            return Err(Fail::usage(
                "give the server's command after `--`, or its --url",
            ));
        };
        if app == ClientApp::Vscode {
            entry.insert("type", json!("stdio"));
        }
        entry.insert("command", json!(command));
        entry.insert("args", json!(rest));
        if !args.env.is_empty() {
            let mut env = Map::new();
            for pair in &args.env {
                let (key, value) = pair
                    .split_once('=')
                    .filter(|(k, _)| !k.is_empty())
                    .ok_or_else(|| Fail::usage(format!("--env `{pair}` is not KEY=VALUE")))?;
                env.insert(key.to_owned(), json!(value));
            }
            entry.insert("env", Value::Object(env));
        }
    }
    // What is written must read back as a server.
    parse(&json!({ app.key(): { args.name.clone(): entry.to_value() } }))?;
    Ok(entry)
}

/// `mcp install NAME --client APP (-- CMD... | --url URL)`.
pub fn install(args: &InstallArgs) -> Result<Exit, Fail> {
    let path = match &args.config {
        Some(path) => path.clone(),
        None => user_file(args.client).ok_or_else(|| {
            Fail::usage(format!(
                "cannot tell where {} keeps its configuration here (no home directory); give \
                 --config FILE",
                args.client.label()
            ))
        })?,
    };
    let entry = entry_for(args.client, args)?;
    let existing = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Fail::usage(format!("cannot read {}: {e}", path.display()))),
    };
    let mut document: Ordered = match &existing {
        Some(text) if !text.trim().is_empty() => serde_json::from_str(text)
            .map_err(|e| Fail::usage(format!("{} is not a JSON object: {e}", path.display())))?,
        _ => Ordered(Vec::new()),
    };
    let key = args.client.key();
    let mut section: Ordered = match document.get(key) {
        Some(raw) => serde_json::from_str(raw.get()).map_err(|e| {
            Fail::usage(format!(
                "`{key}` in {} is not an object: {e}",
                path.display()
            ))
        })?,
        None => Ordered(Vec::new()),
    };
    let before = section.get(&args.name).map(|raw| raw.get().to_owned());
    if before.is_some() && !args.force && !args.dry_run {
        return Err(Fail::usage(format!(
            "{} already has a server `{}`; --force replaces it",
            path.display(),
            args.name
        )));
    }
    section.set(&args.name, entry.to_raw()?);
    document.set(key, raw(&section)?);
    let text = serde_json::to_string_pretty(&document)
        .map_err(|e| Fail::other(format!("cannot encode the configuration: {e}")))?;
    // Pretty-printing rewrites the entries it re-encodes; re-read to indent them evenly.
    let text = reindent(&text);
    let pretty_entry = reindent(entry.to_raw()?.get());
    if args.dry_run {
        let mut change = format!(
            "would {} `{}` in {} ({}, under `{key}`):\n",
            if before.is_some() { "replace" } else { "add" },
            args.name,
            path.display(),
            args.client.label()
        );
        if let Some(before) = &before {
            for line in reindent(before).lines() {
                change.push_str(&format!("- {line}\n"));
            }
        }
        for line in pretty_entry.lines() {
            change.push_str(&format!("+ {line}\n"));
        }
        if existing.is_none() {
            change.push_str("(the file does not exist yet and would be created)\n");
        }
        print(&change)?;
        return Ok(Exit::Ok);
    }
    write_atomically(&path, text.as_bytes())?;
    eprintln!(
        "mcp: {} `{}` in {} ({})",
        if before.is_some() {
            "replaced"
        } else {
            "added"
        },
        args.name,
        path.display(),
        args.client.label()
    );
    Ok(Exit::Ok)
}

/// Pretty-prints JSON text again, keeping member order (members kept as written would carry
/// the indentation of their old place otherwise).
fn reindent(text: &str) -> String {
    let Ok(raw) = serde_json::from_str::<Box<RawValue>>(text) else {
        return text.to_owned();
    };
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(
        &mut out,
        serde_json::ser::PrettyFormatter::with_indent(b"  "),
    );
    match pretty_ordered(&raw, &mut serializer) {
        Ok(()) => String::from_utf8(out).map_or_else(|_| text.to_owned(), |t| t + "\n"),
        Err(_) => text.to_owned(),
    }
}

/// Serialises JSON text through `serializer`, objects in member order.
fn pretty_ordered<S>(raw: &RawValue, serializer: S) -> Result<S::Ok, S::Error>
where
    S: Serializer,
{
    struct Node<'a>(&'a RawValue);
    impl serde::Serialize for Node<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            pretty_ordered(self.0, serializer)
        }
    }
    use serde::ser::{Error as _, SerializeSeq};
    let text = raw.get().trim();
    if text.starts_with('{') {
        let members: Ordered = serde_json::from_str(text).map_err(S::Error::custom)?;
        let mut map = serializer.serialize_map(Some(members.0.len()))?;
        for (key, value) in &members.0 {
            map.serialize_entry(key, &Node(value))?;
        }
        map.end()
    } else if text.starts_with('[') {
        let items: Vec<Box<RawValue>> = serde_json::from_str(text).map_err(S::Error::custom)?;
        let mut seq = serializer.serialize_seq(Some(items.len()))?;
        for item in &items {
            seq.serialize_element(&Node(item))?;
        }
        seq.end()
    } else {
        serde::Serialize::serialize(raw, serializer)
    }
}

/// Writes `bytes` to `path` through a temporary file and a rename, keeping the permissions of
/// the file it replaces.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Fail> {
    let fail = |e: std::io::Error| Fail::other(format!("cannot write {}: {e}", path.display()));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".mcp-tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).map_err(fail)?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&tmp, meta.permissions());
    }
    std::fs::rename(&tmp, path).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_formats_read() {
        let cursor = parse(&json!({"mcpServers": {
            "files": {"command": "npx", "args": ["-y", "fs"]},
            "remote": {"serverUrl": "https://example.com/mcp"}
        }}))
        .expect("mcpServers");
        assert!(matches!(cursor.servers["files"], ServerConfig::Stdio(_)));
        assert!(matches!(cursor.servers["remote"], ServerConfig::Http(_)));
        let vscode = parse(&json!({"inputs": [], "servers": {
            "weather": {"type": "stdio", "command": "node", "args": ["w.js"]},
            "web": {"type": "http", "url": "https://example.com/mcp"},
            "old": {"type": "sse", "url": "https://example.com/sse"}
        }}))
        .expect("servers");
        assert_eq!(vscode.servers.len(), 3);
        let ServerConfig::Http(old) = &vscode.servers["old"] else {
            panic!("http")
        };
        assert!(old.legacy_sse);
        assert!(parse(&json!({"other": {}})).is_err());
    }

    #[test]
    fn rewriting_keeps_member_order() {
        let text = r#"{"zeta": 1, "alpha": {"b": [1, 2], "a": null}, "mcpServers": {"z": {"command": "z"}}}"#;
        let mut document: Ordered = serde_json::from_str(text).expect("object");
        let mut section: Ordered =
            serde_json::from_str(document.get("mcpServers").expect("section").get())
                .expect("object");
        section.set("a", raw(&json!({"command": "a"})).expect("raw"));
        document.set("mcpServers", raw(&section).expect("raw"));
        let out = reindent(&serde_json::to_string(&document).expect("encode"));
        let keys: Vec<usize> = [
            "\"zeta\"",
            "\"alpha\"",
            "\"b\"",
            "\"a\": null",
            "\"mcpServers\"",
            "\"z\"",
            "\"a\": {",
        ]
        .iter()
        .map(|k| out.find(k).unwrap_or_else(|| panic!("{k} in {out}")))
        .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{out}");
        let back: Value = serde_json::from_str(&out).expect("valid JSON");
        assert_eq!(back["mcpServers"]["a"]["command"], "a");
        assert!(out.contains("\n  \"alpha\": {\n    \"b\": [\n"), "{out}");
    }
}
