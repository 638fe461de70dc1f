//! Which server a command talks to, and opening a connection to it.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use http::{HeaderMap, HeaderName, HeaderValue};
use mcp_client::config::{HostConfig, ServerConfig};
use mcp_jsonrpc::Connection;
use mcp_transport_http::client::{ClientMode, HttpClientHandle, StreamableHttpClient};
use mcp_transport_stdio::{ChildProcess, ServerCommand, StderrMode};
use tokio::task::JoinHandle;

use crate::args::ServerArgs;
use crate::{Fail, chain};

/// Lines of a stdio server's stderr kept to explain a failure.
const STDERR_TAIL: usize = 20;
/// Frames buffered each way between the client and the bundled server in this process.
const IN_PROCESS_CAPACITY: usize = 64;

/// A server to talk to.
#[derive(Debug, Clone)]
pub enum Target {
    /// The bundled example server, served in this process.
    InProcess,
    /// A child process on stdio.
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<PathBuf>,
    },
    /// An HTTP endpoint.
    Http {
        url: String,
        headers: HeaderMap,
        sse: bool,
    },
}

impl Target {
    /// How the target is named in messages.
    pub fn describe(&self) -> String {
        match self {
            Target::InProcess => "the bundled example server".to_owned(),
            Target::Stdio { command, args, .. } => {
                let mut text = command.clone();
                for arg in args {
                    text.push(' ');
                    text.push_str(arg);
                }
                format!("`{text}`")
            }
            Target::Http { url, .. } => url.clone(),
        }
    }
}

fn key_value(text: &str, what: &str) -> Result<(String, String), Fail> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(Fail::usage(format!("{what} `{text}` is not KEY=VALUE"))),
    }
}

fn header(text: &str) -> Result<(HeaderName, HeaderValue), Fail> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| Fail::usage(format!("header `{text}` is not 'Name: value'")))?;
    let name = HeaderName::try_from(name.trim())
        .map_err(|e| Fail::usage(format!("header name in `{text}`: {e}")))?;
    let value = HeaderValue::try_from(value.trim())
        .map_err(|e| Fail::usage(format!("header value in `{text}`: {e}")))?;
    Ok((name, value))
}

/// Reads the server choice from the command line (and the configuration file it names).
pub fn resolve(args: &ServerArgs) -> Result<Target, Fail> {
    let mut env = args
        .env
        .iter()
        .map(|e| key_value(e, "--env"))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(url) = &args.url {
        let mut headers = HeaderMap::new();
        for text in &args.headers {
            let (name, value) = header(text)?;
            headers.append(name, value);
        }
        return Ok(Target::Http {
            url: url.clone(),
            headers,
            sse: args.sse,
        });
    }
    if let Some((command, rest)) = args.command.split_first() {
        return Ok(Target::Stdio {
            command: command.clone(),
            args: rest.to_vec(),
            env,
            cwd: None,
        });
    }
    let (name, entry) = match (&args.config, &args.server) {
        (None, None) => {
            if !env.is_empty() {
                return Err(Fail::usage("--env is for stdio servers (`-- <command>`)"));
            }
            return Ok(Target::InProcess);
        }
        // A name alone: the known client configurations.
        (None, Some(name)) => {
            let (entry, file) = crate::configs::by_name(name)?;
            tracing::debug!(server = %name, file = %file.display(), "server found by name");
            (name.clone(), entry)
        }
        (Some(path), _) => from_file(path, args.server.as_deref())?,
    };
    match entry {
        ServerConfig::Stdio(stdio) => {
            let mut all: Vec<(String, String)> = stdio.env.into_iter().collect();
            all.append(&mut env);
            Ok(Target::Stdio {
                command: stdio.command,
                args: stdio.args,
                env: all,
                cwd: stdio.cwd,
            })
        }
        ServerConfig::Http(http) => {
            if !env.is_empty() {
                return Err(Fail::usage(format!(
                    "--env is for stdio servers; `{name}` is reached over HTTP"
                )));
            }
            let mut headers = HeaderMap::new();
            for (name, value) in &http.headers {
                let (name, value) = header(&format!("{name}: {value}"))?;
                headers.append(name, value);
            }
            Ok(Target::Http {
                url: http.url,
                headers,
                sse: http.legacy_sse,
            })
        }
        other => Err(Fail::usage(format!(
            "server `{name}` uses a transport this command does not know: {other:?}"
        ))),
    }
}

/// The entry named `server` of the configuration file at `path` (either format), or its only
/// entry.
fn from_file(path: &Path, server: Option<&str>) -> Result<(String, ServerConfig), Fail> {
    let config = crate::configs::read(path)?;
    match server {
        Some(name) => match config.servers.get(name) {
            Some(entry) => Ok((name.to_owned(), entry.clone())),
            None => Err(Fail::usage(format!(
                "{} has no enabled server `{name}`{}; it has: {}",
                path.display(),
                crate::check::suggestion(name, config.servers.keys().map(String::as_str)),
                names(&config)
            ))),
        },
        None => {
            let mut servers = config.servers.iter();
            match (servers.next(), servers.next()) {
                (Some((name, entry)), None) => Ok((name.clone(), entry.clone())),
                (None, _) => Err(Fail::usage(format!(
                    "{} names no enabled server",
                    path.display()
                ))),
                _ => Err(Fail::usage(format!(
                    "{} names several servers; pick one with --server ({})",
                    path.display(),
                    names(&config)
                ))),
            }
        }
    }
}

fn names(config: &HostConfig) -> String {
    config
        .servers
        .keys()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// An open connection and what has to be cleaned up after it.
pub struct Opened {
    pub connection: Connection,
    pub guard: Guard,
}

/// What keeps a connection's far end alive.
pub enum Guard {
    InProcess(JoinHandle<()>),
    Child {
        child: ChildProcess,
        stderr: Arc<Mutex<VecDeque<String>>>,
    },
    Http(HttpClientHandle),
}

impl Guard {
    /// The last lines the server wrote to stderr, when it is a child process.
    pub fn stderr_tail(&self) -> Option<String> {
        match self {
            Guard::Child { stderr, .. } => {
                let lines = stderr.lock().unwrap_or_else(PoisonError::into_inner);
                if lines.is_empty() {
                    None
                } else {
                    Some(lines.iter().cloned().collect::<Vec<_>>().join("\n"))
                }
            }
            _ => None,
        }
    }

    /// [`close`](Self::close), then the last lines the server wrote to stderr (its stderr is
    /// drained after it exited, so a crash's last words are there).
    pub async fn close_with_stderr(self) -> Option<String> {
        let child = matches!(self, Guard::Child { .. });
        let stderr = match &self {
            Guard::Child { stderr, .. } => Some(Arc::clone(stderr)),
            _ => None,
        };
        self.close().await;
        if child {
            // The stderr reader sees end of file right after the exit; give it a moment.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let lines = stderr?;
        let lines = lines.lock().unwrap_or_else(PoisonError::into_inner);
        (!lines.is_empty()).then(|| lines.iter().cloned().collect::<Vec<_>>().join("\n"))
    }

    /// Ends the connection's far end: the child is shut down as the specification describes,
    /// the HTTP session is deleted, the in-process server stops.
    pub async fn close(self) {
        match self {
            Guard::InProcess(task) => {
                // The server ends when the client side of the connection is dropped; give it
                // a moment, then stop it.
                let _ = tokio::time::timeout(std::time::Duration::from_millis(500), task).await;
            }
            Guard::Child { child, .. } => {
                if let Err(e) = child.shutdown().await {
                    tracing::debug!(error = %e, "shutting the server down failed");
                }
            }
            Guard::Http(handle) => handle.close().await,
        }
    }
}

/// Opens a connection to `target`. `verbose` shows a stdio server's stderr as it comes. An
/// HTTP server gets the tokens `mcp login` stored for it, unless the command line gives an
/// `Authorization` header.
pub async fn open(target: &Target, verbose: u8) -> Result<Opened, Fail> {
    let auth = match target {
        Target::Http { url, headers, .. } if !headers.contains_key(http::header::AUTHORIZATION) => {
            crate::login::stored_provider(url)
        }
        _ => None,
    };
    open_with_auth(target, verbose, auth).await
}

/// [`open`] with this OAuth provider for an HTTP server.
pub async fn open_with_auth(
    target: &Target,
    verbose: u8,
    auth: Option<Arc<dyn mcp_auth::AuthProvider>>,
) -> Result<Opened, Fail> {
    match target {
        Target::InProcess => {
            let server = mcp_example::server()
                .map_err(|e| Fail::other(format!("the example server: {}", chain(&e))))?;
            let (ours, theirs) = mcp_jsonrpc::memory_pair(IN_PROCESS_CAPACITY);
            let task = tokio::spawn(async move {
                if let Err(e) = server.serve(theirs).await {
                    tracing::debug!(error = %e, "the in-process server ended with an error");
                }
            });
            Ok(Opened {
                connection: ours,
                guard: Guard::InProcess(task),
            })
        }
        Target::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL)));
            let sink = Arc::clone(&tail);
            let program = command.clone();
            let on_line = move |line: &str| {
                if verbose > 0 {
                    eprintln!("[{program}] {line}");
                }
                let mut lines = sink.lock().unwrap_or_else(PoisonError::into_inner);
                if lines.len() == STDERR_TAIL {
                    lines.pop_front();
                }
                lines.push_back(line.to_owned());
            };
            let mut server = ServerCommand::new(command)
                .args(args)
                .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .stderr(StderrMode::Callback(Arc::new(on_line)));
            if let Some(dir) = cwd {
                server = server.current_dir(dir);
            }
            let (connection, child) = server
                .spawn()
                .map_err(|e| Fail::connect(format!("cannot start {}: {e}", target.describe())))?;
            Ok(Opened {
                connection,
                guard: Guard::Child {
                    child,
                    stderr: tail,
                },
            })
        }
        Target::Http { url, headers, sse } => {
            let mode = if *sse {
                ClientMode::HttpSse
            } else {
                ClientMode::Auto
            };
            let mut builder = StreamableHttpClient::builder(url.clone())
                .headers(headers.clone())
                .mode(mode);
            if let Some(auth) = auth {
                builder = builder.auth(auth);
            }
            let client = builder.build().map_err(|e| Fail::usage(chain(&e)))?;
            let (connection, handle) = client
                .connect()
                .await
                .map_err(|e| Fail::connect(format!("cannot reach {url}: {}", chain(&e))))?;
            Ok(Opened {
                connection,
                guard: Guard::Http(handle),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> ServerArgs {
        ServerArgs {
            timeout: 60,
            ..ServerArgs::default()
        }
    }

    #[test]
    fn no_server_means_the_bundled_one() {
        assert!(matches!(resolve(&args()), Ok(Target::InProcess)));
    }

    #[test]
    fn a_command_with_env_is_a_stdio_target() {
        let target = resolve(&ServerArgs {
            command: vec!["node".into(), "server.js".into()],
            env: vec!["DEBUG=1".into()],
            ..args()
        })
        .expect("valid");
        let Target::Stdio {
            command, args, env, ..
        } = target
        else {
            panic!("not stdio: {target:?}")
        };
        assert_eq!(command, "node");
        assert_eq!(args, vec!["server.js"]);
        assert_eq!(env, vec![("DEBUG".to_owned(), "1".to_owned())]);
    }

    #[test]
    fn headers_must_be_name_colon_value() {
        let ok = resolve(&ServerArgs {
            url: Some("http://127.0.0.1:1/mcp".into()),
            headers: vec!["Authorization: Bearer x".into()],
            ..args()
        })
        .expect("valid");
        let Target::Http { headers, .. } = ok else {
            panic!("not http")
        };
        assert_eq!(headers["authorization"], "Bearer x");
        let bad = resolve(&ServerArgs {
            url: Some("http://127.0.0.1:1/mcp".into()),
            headers: vec!["no colon".into()],
            ..args()
        })
        .expect_err("invalid header");
        assert_eq!(bad.code, crate::EXIT_USAGE);
    }

    #[test]
    fn config_entries_are_picked_by_name() {
        let dir = std::env::temp_dir().join(format!("mcp-cli-target-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("servers.json");
        std::fs::write(
            &path,
            r#"{"mcpServers": {
                "local": {"command": "node", "args": ["a.js"], "env": {"A": "1"}},
                "remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "k"}}
            }}"#,
        )
        .expect("write config");
        let pick = |server: Option<&str>| {
            resolve(&ServerArgs {
                config: Some(path.clone()),
                server: server.map(str::to_owned),
                ..args()
            })
        };
        let several = pick(None).expect_err("two servers, none chosen");
        assert!(
            several.message.contains("local, remote"),
            "{}",
            several.message
        );
        assert!(matches!(pick(Some("local")), Ok(Target::Stdio { .. })));
        let Ok(Target::Http { url, headers, .. }) = pick(Some("remote")) else {
            panic!("remote is http")
        };
        assert_eq!(url, "http://127.0.0.1:9/mcp");
        assert_eq!(headers["x-key"], "k");
        let unknown = pick(Some("nope")).expect_err("unknown name");
        assert_eq!(unknown.code, crate::EXIT_USAGE);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
