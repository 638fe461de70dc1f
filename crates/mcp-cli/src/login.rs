//! `mcp login URL` and `mcp logout URL`: OAuth for HTTP servers through `mcp-auth`'s client
//! (discovery from the server's `401`, dynamic or pre-registered client, authorization code
//! with PKCE, refresh). Tokens live in `<config dir>/mcp/tokens.json`, readable by the owner
//! only; every client command uses them for the server they were issued for.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_auth::{
    AuthError, AuthProvider, AuthorizationHandler, AuthorizationRequest, AuthorizationResponse,
    BoxFuture, ClientCredentials, ClientMetadata, FileTokenStore, HttpClient, HyperHttpClient,
    OAuthClient,
};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::args::{LoginArgs, LogoutArgs};
use crate::{Exit, Fail, chain};

/// How long the browser step may take.
const LOGIN_WAIT: Duration = Duration::from_secs(300);
/// Largest callback request read.
const MAX_CALLBACK: usize = 16 * 1024;

/// The token file: `<config dir>/mcp/tokens.json`.
pub fn token_file() -> Option<PathBuf> {
    crate::configs::config_dir().map(|dir| dir.join("mcp").join("tokens.json"))
}

/// The provider a client command uses for `url`: the stored tokens, refreshed when they
/// expire. `None` when nobody ever logged in (no token file).
pub fn stored_provider(url: &str) -> Option<Arc<dyn AuthProvider>> {
    let path = token_file().filter(|p| p.is_file())?;
    let http: Arc<dyn HttpClient> = Arc::new(HyperHttpClient::new().ok()?);
    let client = OAuthClient::builder(ClientMetadata::new("mcp", "http://127.0.0.1/callback"))
        .http_client(http)
        .token_store(Arc::new(FileTokenStore::new(path)))
        .authorization_handler(NotLoggedIn {
            url: url.to_owned(),
        })
        .build();
    match client {
        Ok(client) => Some(Arc::new(client)),
        Err(error) => {
            tracing::debug!(error = %chain(&error), "the stored tokens are not used");
            None
        }
    }
}

/// The handler of client commands: no browser, only the advice to log in.
struct NotLoggedIn {
    url: String,
}

impl AuthorizationHandler for NotLoggedIn {
    fn authorize<'a>(
        &'a self,
        _: &'a AuthorizationRequest,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, AuthError>> {
        Box::pin(async move {
            Err(AuthError::Handler(format!(
                "{} needs authorization: run `mcp login {}`",
                self.url, self.url
            )))
        })
    }
}

/// The browser step: the authorization address on stderr (and opened in a browser), the
/// redirect taken on a loopback listener, or pasted at the prompt.
struct Loopback {
    listener: tokio::sync::Mutex<Option<TcpListener>>,
    browser: bool,
    asked: Arc<AtomicBool>,
}

impl AuthorizationHandler for Loopback {
    fn authorize<'a>(
        &'a self,
        request: &'a AuthorizationRequest,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, AuthError>> {
        Box::pin(async move {
            self.asked.store(true, Ordering::Relaxed);
            let Some(listener) = self.listener.lock().await.take() else {
                return Err(AuthError::Handler(
                    "the authorization was asked for twice".to_owned(),
                ));
            };
            eprintln!(
                "Open this address in a browser to authorize mcp:\n\n  {}\n",
                request.url
            );
            if self.browser {
                open_browser(&request.url);
            }
            let paste = std::io::stdin().is_terminal();
            if paste {
                eprintln!(
                    "Waiting for the browser; or paste the address it ends on (from another machine):"
                );
            } else {
                eprintln!(
                    "Waiting for the browser to come back to {}",
                    request.redirect_uri
                );
            }
            let redirect = request.redirect_uri.clone();
            let wait = async {
                tokio::select! {
                    got = callback(listener, &redirect) => got,
                    Some(line) = pasted(paste) => Ok(line),
                }
            };
            match tokio::time::timeout(LOGIN_WAIT, wait).await {
                Ok(Ok(url)) => Ok(AuthorizationResponse::Redirect(url)),
                Ok(Err(error)) => Err(AuthError::Handler(error)),
                Err(_) => Err(AuthError::Handler(format!(
                    "no answer from the browser within {} s",
                    LOGIN_WAIT.as_secs()
                ))),
            }
        })
    }
}

/// A line typed at the prompt, when there is one.
async fn pasted(enabled: bool) -> Option<String> {
    if !enabled {
        return std::future::pending().await;
    }
    let line = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).ok().map(|_| line)
    })
    .await
    .ok()
    .flatten()?;
    let line = line.trim().to_owned();
    if line.is_empty() { None } else { Some(line) }
}

/// Starts the user's browser on `url`: `$BROWSER`, else the system's opener.
fn open_browser(url: &str) {
    let opener: Option<(String, Vec<String>)> = match std::env::var("BROWSER") {
        Ok(browser) if !browser.trim().is_empty() => Some((browser.trim().to_owned(), vec![])),
        _ if cfg!(target_os = "macos") => Some(("open".to_owned(), vec![])),
        _ if cfg!(windows) => Some((
            "cmd".to_owned(),
            vec!["/C".to_owned(), "start".to_owned(), String::new()],
        )),
        _ => Some(("xdg-open".to_owned(), vec![])),
    };
    if let Some((program, mut args)) = opener {
        args.push(url.to_owned());
        let started = std::process::Command::new(&program)
            .args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if let Err(error) = started {
            tracing::debug!(%program, %error, "could not open a browser");
        }
    }
}

/// Waits for the authorization server's redirect on the loopback listener and answers the
/// browser; returns the full redirect address.
async fn callback(listener: TcpListener, redirect: &str) -> Result<String, String> {
    let base = redirect
        .find("/callback")
        .map_or(redirect, |at| &redirect[..at])
        .to_owned();
    loop {
        let (mut stream, _) = listener
            .accept()
            .await
            .map_err(|e| format!("the loopback listener failed: {e}"))?;
        let mut buffer = Vec::new();
        let mut chunk = [0u8; 2048];
        while !buffer.windows(4).any(|w| w == b"\r\n\r\n") && buffer.len() < MAX_CALLBACK {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        let head = String::from_utf8_lossy(&buffer);
        let target = head
            .lines()
            .next()
            .and_then(|line| line.split_whitespace().nth(1))
            .unwrap_or_default()
            .to_owned();
        if !target.starts_with("/callback") {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
            continue;
        }
        let body = if target.contains("error=") {
            "mcp: the authorization was refused. You can close this window."
        } else {
            "mcp: authorized. You can close this window and go back to the terminal."
        };
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
        return Ok(format!("{base}{target}"));
    }
}

/// `mcp login URL`.
pub async fn login(args: LoginArgs, verbose: u8) -> Result<Exit, Fail> {
    let path = token_file()
        .ok_or_else(|| Fail::usage("cannot tell where to keep the tokens (no home directory)"))?;
    if let Some(dir) = path.parent() {
        create_private_dir(dir)?;
    }
    let listener = TcpListener::bind(("127.0.0.1", args.port))
        .await
        .map_err(|e| Fail::other(format!("cannot listen on 127.0.0.1:{}: {e}", args.port)))?;
    let port = listener
        .local_addr()
        .map_err(|e| Fail::other(format!("the loopback listener: {e}")))?
        .port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let http: Arc<dyn HttpClient> = Arc::new(
        HyperHttpClient::new()
            .map_err(|e| Fail::other(format!("the HTTP client: {}", chain(&e))))?,
    );
    let asked = Arc::new(AtomicBool::new(false));
    let mut builder = OAuthClient::builder(ClientMetadata::new("mcp", redirect))
        .http_client(http)
        .token_store(Arc::new(FileTokenStore::new(path.clone())))
        .authorization_handler(Loopback {
            listener: tokio::sync::Mutex::new(Some(listener)),
            browser: !args.no_browser,
            asked: Arc::clone(&asked),
        });
    if !args.scopes.is_empty() {
        builder = builder.scopes(args.scopes.iter().cloned());
    }
    if let Some(id) = &args.client_id {
        let credentials = match &args.client_secret {
            Some(secret) => ClientCredentials::with_secret(id.clone(), secret.clone()),
            None => ClientCredentials::public(id.clone()),
        };
        builder = builder.pre_registered(credentials);
    }
    let oauth: Arc<dyn AuthProvider> = Arc::new(
        builder
            .build()
            .map_err(|e| Fail::usage(format!("OAuth: {}", chain(&e))))?,
    );
    let server = crate::args::ServerArgs {
        url: Some(args.url.clone()),
        timeout: LOGIN_WAIT.as_secs() + 60,
        ..crate::args::ServerArgs::default()
    };
    let target = crate::target::resolve(&server)?;
    let opened = crate::target::open_with_auth(&target, verbose, Some(oauth)).await?;
    let client = mcp_client::Client::builder(mcp_types::Implementation::new(
        "mcp",
        env!("CARGO_PKG_VERSION"),
    ))
    .initialize_timeout(LOGIN_WAIT + Duration::from_secs(60))
    .build();
    let result = client.connect(opened.connection).await;
    let outcome = match result {
        Ok(session) => {
            session.close().await;
            Ok(())
        }
        Err(error) => Err(error),
    };
    opened.guard.close().await;
    match outcome {
        Ok(()) if asked.load(Ordering::Relaxed) => {
            restrict(&path);
            eprintln!(
                "mcp: logged in to {}; tokens in {}",
                args.url,
                path.display()
            );
            Ok(Exit::Ok)
        }
        Ok(()) if has_tokens(&path, &args.url) => {
            eprintln!(
                "mcp: already logged in to {} (tokens in {})",
                args.url,
                path.display()
            );
            Ok(Exit::Ok)
        }
        Ok(()) => {
            eprintln!(
                "mcp: {} did not ask for authorization; nothing to store",
                args.url
            );
            Ok(Exit::Ok)
        }
        Err(error) => Err(Fail::connect(format!(
            "logging in to {} failed: {}",
            args.url,
            crate::diagnose::short(&chain(&error))
        ))),
    }
}

/// `mcp logout URL`: forgets the tokens issued for `URL` (every token with `--all`).
pub fn logout(args: &LogoutArgs) -> Result<Exit, Fail> {
    let path = token_file()
        .ok_or_else(|| Fail::usage("cannot tell where the tokens are (no home directory)"))?;
    if args.all {
        match std::fs::remove_file(&path) {
            Ok(()) => eprintln!("mcp: forgot every token ({} removed)", path.display()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                eprintln!("mcp: no tokens stored");
            }
            Err(e) => {
                return Err(Fail::other(format!(
                    "cannot remove {}: {e}",
                    path.display()
                )));
            }
        }
        return Ok(Exit::Ok);
    }
    let Some(url) = &args.url else {
        return Err(Fail::usage("give the server's URL, or --all"));
    };
    let mut all = read_tokens(&path)?;
    let mut removed = 0;
    if let Some(issuers) = all.as_object_mut() {
        for credentials in issuers.values_mut() {
            if let Some(tokens) = credentials.get_mut("tokens").and_then(Value::as_object_mut) {
                let before = tokens.len();
                tokens.retain(|resource, _| !same_resource(resource, url));
                removed += before - tokens.len();
            }
        }
    }
    if removed == 0 {
        return Err(Fail::usage(format!("not logged in to {url}")));
    }
    let text = serde_json::to_vec_pretty(&all)
        .map_err(|e| Fail::other(format!("cannot encode the tokens: {e}")))?;
    write_private(&path, &text)?;
    eprintln!("mcp: logged out of {url}");
    Ok(Exit::Ok)
}

fn same_resource(resource: &str, url: &str) -> bool {
    resource.trim_end_matches('/') == url.trim_end_matches('/')
}

fn read_tokens(path: &std::path::Path) -> Result<Value, Fail> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| Fail::other(format!("{} is not valid JSON: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Value::Object(Default::default())),
        Err(e) => Err(Fail::other(format!("cannot read {}: {e}", path.display()))),
    }
}

fn has_tokens(path: &std::path::Path, url: &str) -> bool {
    read_tokens(path).ok().is_some_and(|all| {
        all.as_object().is_some_and(|issuers| {
            issuers.values().any(|c| {
                c.get("tokens")
                    .and_then(Value::as_object)
                    .is_some_and(|t| t.keys().any(|r| same_resource(r, url)))
            })
        })
    })
}

fn create_private_dir(dir: &std::path::Path) -> Result<(), Fail> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder
        .create(dir)
        .map_err(|e| Fail::other(format!("cannot create {}: {e}", dir.display())))
}

/// Owner-only permissions on the token file (the store creates it so; this keeps it so).
fn restrict(path: &std::path::Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    }
    #[cfg(not(unix))]
    let _ = path;
}

fn write_private(path: &std::path::Path, bytes: &[u8]) -> Result<(), Fail> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let fail = |e: std::io::Error| Fail::other(format!("cannot write {}: {e}", path.display()));
    {
        use std::io::Write;
        let mut file = options.open(&tmp).map_err(fail)?;
        file.write_all(bytes).map_err(fail)?;
    }
    std::fs::rename(&tmp, path).map_err(fail)?;
    restrict(path);
    Ok(())
}
