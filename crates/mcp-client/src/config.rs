//! The `mcpServers` configuration shape that MCP hosts commonly read.
//!
//! ```json
//! {
//!   "mcpServers": {
//!     "files":  { "command": "npx", "args": ["-y", "server-filesystem", "/tmp"], "env": {"DEBUG": "1"} },
//!     "remote": { "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"} }
//!   }
//! }
//! ```
//!
//! An entry with `command` is a stdio server started as a child process; an entry with `url` is a
//! remote server reached over HTTP. An optional `type` (`stdio`, `http`, `streamable-http`, `sse`)
//! is checked against the fields present; `disabled: true` keeps an entry out of the host. Fields
//! this crate does not use (many hosts add their own) are ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Largest configuration document [`HostConfig::from_json`] accepts, in bytes.
pub const MAX_CONFIG_BYTES: usize = 1 << 20;

/// Most servers one configuration may name.
pub const MAX_SERVERS: usize = 256;

/// A parsed `{"mcpServers": {...}}` document: server name to how to reach it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HostConfig {
    /// Enabled servers by their configured name, in name order.
    pub servers: BTreeMap<String, ServerConfig>,
}

/// How to reach one server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerConfig {
    /// A local server started as a child process, spoken to over its stdin and stdout.
    Stdio(StdioServerConfig),
    /// A remote server reached over HTTP.
    Http(RemoteServerConfig),
}

/// A child-process server: `{"command", "args", "env", "cwd"}`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StdioServerConfig {
    /// The program to run (looked up on `PATH` when not a path).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment variables added to the inherited environment.
    pub env: BTreeMap<String, String>,
    /// Working directory; the host's own when absent.
    pub cwd: Option<PathBuf>,
}

/// A remote server: `{"url", "headers"}`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RemoteServerConfig {
    /// The MCP endpoint.
    pub url: String,
    /// Extra HTTP headers sent with every request (for example `Authorization`).
    pub headers: BTreeMap<String, String>,
    /// `true` when the entry asked for the 2024-11-05 HTTP+SSE transport (`"type": "sse"`).
    pub legacy_sse: bool,
}

/// Why a configuration document was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The document could not be read.
    #[error("cannot read the configuration file {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The document is larger than [`MAX_CONFIG_BYTES`].
    #[error("the configuration is {size} bytes, more than the {max} allowed")]
    TooLarge {
        /// Its size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// The document is not JSON.
    #[error("the configuration is not valid JSON")]
    Json(#[source] serde_json::Error),
    /// The top level is not an object with an `mcpServers` object.
    #[error("the configuration has no `mcpServers` object")]
    MissingServers,
    /// More servers than [`MAX_SERVERS`].
    #[error("the configuration names {count} servers, more than the {max} allowed")]
    TooManyServers {
        /// How many it names.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// One server entry is malformed.
    #[error("server `{name}`: {reason}")]
    Server {
        /// The entry's name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl HostConfig {
    /// Parses a configuration document.
    ///
    /// ```
    /// use mcp_client::config::{HostConfig, ServerConfig};
    ///
    /// let config = HostConfig::from_json(r#"{"mcpServers": {
    ///     "echo": {"command": "echo-server", "args": ["--quiet"]},
    ///     "web": {"url": "https://example.com/mcp"}
    /// }}"#)?;
    /// assert!(matches!(config.servers["echo"], ServerConfig::Stdio(_)));
    /// assert!(matches!(config.servers["web"], ServerConfig::Http(_)));
    /// # Ok::<(), mcp_client::config::ConfigError>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        if text.len() > MAX_CONFIG_BYTES {
            return Err(ConfigError::TooLarge {
                size: text.len(),
                max: MAX_CONFIG_BYTES,
            });
        }
        let value: Value = serde_json::from_str(text).map_err(ConfigError::Json)?;
        Self::from_value(&value)
    }

    /// Reads and parses a configuration file.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_json(&text)
    }

    /// Interprets an already parsed JSON document.
    pub fn from_value(value: &Value) -> Result<Self, ConfigError> {
        let servers = value
            .as_object()
            .and_then(|top| top.get("mcpServers"))
            .and_then(Value::as_object)
            .ok_or(ConfigError::MissingServers)?;
        if servers.len() > MAX_SERVERS {
            return Err(ConfigError::TooManyServers {
                count: servers.len(),
                max: MAX_SERVERS,
            });
        }
        let mut out = BTreeMap::new();
        for (name, entry) in servers {
            if name.trim().is_empty() {
                return Err(server_error(name, "the server name is empty"));
            }
            let Some(entry) = entry.as_object() else {
                return Err(server_error(name, "the entry is not an object"));
            };
            if entry.get("disabled").and_then(Value::as_bool) == Some(true) {
                tracing::debug!(server = %name, "skipping a disabled server");
                continue;
            }
            out.insert(name.clone(), parse_server(name, entry)?);
        }
        Ok(Self { servers: out })
    }
}

fn server_error(name: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Server {
        name: name.to_owned(),
        reason: reason.into(),
    }
}

fn parse_server(name: &str, entry: &Map<String, Value>) -> Result<ServerConfig, ConfigError> {
    let kind = match entry.get("type").or_else(|| entry.get("transport")) {
        None | Some(Value::Null) => None,
        Some(Value::String(kind)) => Some(kind.as_str()),
        Some(_) => return Err(server_error(name, "`type` is not a string")),
    };
    let has_command = entry.contains_key("command");
    let has_url = entry.contains_key("url");
    match (has_command, has_url) {
        (true, true) => Err(server_error(
            name,
            "the entry has both `command` and `url`; give one",
        )),
        (false, false) => Err(server_error(
            name,
            "the entry has neither `command` (stdio) nor `url` (HTTP)",
        )),
        (true, false) => {
            if let Some(kind) = kind.filter(|kind| *kind != "stdio") {
                return Err(server_error(
                    name,
                    format!("`type` is `{kind}` but the entry has a `command`"),
                ));
            }
            parse_stdio(name, entry).map(ServerConfig::Stdio)
        }
        (false, true) => {
            let legacy_sse = match kind {
                None | Some("http" | "streamable-http" | "streamableHttp") => false,
                Some("sse") => true,
                Some(other) => {
                    return Err(server_error(
                        name,
                        format!("`type` is `{other}` but the entry has a `url`"),
                    ));
                }
            };
            parse_http(name, entry, legacy_sse).map(ServerConfig::Http)
        }
    }
}

fn parse_stdio(name: &str, entry: &Map<String, Value>) -> Result<StdioServerConfig, ConfigError> {
    let command = match entry.get("command") {
        Some(Value::String(command)) if !command.trim().is_empty() => command.clone(),
        Some(Value::String(_)) => return Err(server_error(name, "`command` is empty")),
        _ => return Err(server_error(name, "`command` is not a string")),
    };
    let args = match entry.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| match item {
                Value::String(arg) => Ok(arg.clone()),
                // Numbers and booleans are written unquoted by hand often enough.
                Value::Number(n) => Ok(n.to_string()),
                Value::Bool(b) => Ok(b.to_string()),
                _ => Err(server_error(
                    name,
                    format!("`args[{index}]` is not a string"),
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(server_error(name, "`args` is not an array")),
    };
    let env = string_map(name, entry, "env")?;
    let cwd = match entry.get("cwd") {
        None | Some(Value::Null) => None,
        Some(Value::String(cwd)) => Some(PathBuf::from(cwd)),
        Some(_) => return Err(server_error(name, "`cwd` is not a string")),
    };
    Ok(StdioServerConfig {
        command,
        args,
        env,
        cwd,
    })
}

fn parse_http(
    name: &str,
    entry: &Map<String, Value>,
    legacy_sse: bool,
) -> Result<RemoteServerConfig, ConfigError> {
    let url = match entry.get("url") {
        Some(Value::String(url)) => url.trim().to_owned(),
        _ => return Err(server_error(name, "`url` is not a string")),
    };
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(server_error(
            name,
            format!("`url` `{url}` is not an http:// or https:// URL"),
        ));
    }
    let headers = string_map(name, entry, "headers")?;
    for (header, value) in &headers {
        let valid_name = !header.is_empty()
            && header
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !valid_name {
            return Err(server_error(
                name,
                format!("`headers` has an invalid header name `{header}`"),
            ));
        }
        if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            return Err(server_error(
                name,
                format!("header `{header}` has a line break or NUL in its value"),
            ));
        }
    }
    Ok(RemoteServerConfig {
        url,
        headers,
        legacy_sse,
    })
}

fn string_map(
    name: &str,
    entry: &Map<String, Value>,
    field: &str,
) -> Result<BTreeMap<String, String>, ConfigError> {
    match entry.get(field) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(key, value)| match value {
                Value::String(s) => Ok((key.clone(), s.clone())),
                Value::Number(n) => Ok((key.clone(), n.to_string())),
                Value::Bool(b) => Ok((key.clone(), b.to_string())),
                _ => Err(server_error(
                    name,
                    format!("`{field}.{key}` is not a string"),
                )),
            })
            .collect(),
        Some(_) => Err(server_error(name, format!("`{field}` is not an object"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stdio_and_http_entries() {
        let config = HostConfig::from_json(
            r#"{"mcpServers": {
                "fs": {"command": "node", "args": ["fs.js", 3], "env": {"A": "1", "N": 2}, "cwd": "/tmp"},
                "web": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer t"}},
                "old": {"type": "sse", "url": "http://localhost:1/sse"},
                "off": {"command": "x", "disabled": true}
            }, "other": 1}"#,
        )
        .unwrap();
        assert_eq!(config.servers.len(), 3);
        let ServerConfig::Stdio(fs) = &config.servers["fs"] else {
            panic!("fs is not stdio")
        };
        assert_eq!(fs.command, "node");
        assert_eq!(fs.args, ["fs.js", "3"]);
        assert_eq!(fs.env["A"], "1");
        assert_eq!(fs.env["N"], "2");
        assert_eq!(fs.cwd.as_deref(), Some(Path::new("/tmp")));
        let ServerConfig::Http(web) = &config.servers["web"] else {
            panic!("web is not http")
        };
        assert_eq!(web.headers["Authorization"], "Bearer t");
        assert!(!web.legacy_sse);
        let ServerConfig::Http(old) = &config.servers["old"] else {
            panic!("old is not http")
        };
        assert!(old.legacy_sse);
    }

    #[test]
    fn refuses_malformed_entries_precisely() {
        let cases = [
            (r#"{"servers": {}}"#, "no `mcpServers`"),
            (r#"[]"#, "no `mcpServers`"),
            (r#"{"mcpServers": {"a": 1}}"#, "not an object"),
            (r#"{"mcpServers": {"a": {}}}"#, "neither"),
            (
                r#"{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}"#,
                "both",
            ),
            (
                r#"{"mcpServers": {"a": {"command": ""}}}"#,
                "`command` is empty",
            ),
            (
                r#"{"mcpServers": {"a": {"command": 3}}}"#,
                "`command` is not a string",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "args": "y"}}}"#,
                "`args` is not an array",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "args": [{}]}}}"#,
                "`args[0]`",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "env": {"K": []}}}}"#,
                "`env.K`",
            ),
            (
                r#"{"mcpServers": {"a": {"type": "http", "command": "x"}}}"#,
                "`type` is `http`",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "ftp://h"}}}"#,
                "not an http",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "http://h", "headers": {"Bad Name": "v"}}}}"#,
                "invalid header name",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "http://h", "headers": {"X": "a\r\nb"}}}}"#,
                "line break",
            ),
            (r#"{"mcpServers": {"": {"command": "x"}}}"#, "name is empty"),
            (r#"{"mcpServers": "#, "not valid JSON"),
        ];
        for (text, expected) in cases {
            let err = HostConfig::from_json(text).unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: `{err}` lacks `{expected}`");
        }
    }

    #[test]
    fn refuses_oversized_documents() {
        let text = " ".repeat(MAX_CONFIG_BYTES + 1);
        assert!(matches!(
            HostConfig::from_json(&text),
            Err(ConfigError::TooLarge { .. })
        ));
    }
}
