//! `mcp serve` as one of many replicas: sessions and resumable streams in Redis (`--redis`,
//! feature `redis`), and a `requestState` sealing key every replica shares
//! (`--sealing-key-file`, `MCP_SEALING_KEY`).

use std::path::{Path, PathBuf};

use clap::Args;
use mcp_server::{SealingKey, ServerBuilder};
use mcp_transport_http::server::StreamableHttpServiceBuilder;

use crate::Fail;

/// The environment variable with the current sealing key (when no file is given).
const SEALING_KEY_ENV: &str = "MCP_SEALING_KEY";
/// The environment variable with the previous sealing key, still accepted.
const PREVIOUS_KEY_ENV: &str = "MCP_SEALING_KEY_PREVIOUS";

/// Options of `mcp serve` for running several replicas behind one load balancer.
#[derive(Debug, Args, Clone)]
pub struct ReplicaArgs {
    /// Keep sessions, resumable SSE streams and tasks in Redis (redis://HOST:PORT[/DB]), shared
    /// by every replica: any of them serves any session or task (needs --http)
    #[arg(long, value_name = "URL", requires = "http")]
    pub redis: Option<String>,
    /// Seal requestState with the key on the first line of FILE (at least 32 bytes); a second
    /// line is the previous key, still accepted while states sealed with it live. Default: the
    /// MCP_SEALING_KEY (and MCP_SEALING_KEY_PREVIOUS) environment variables, else a random key
    #[arg(long, value_name = "FILE")]
    pub sealing_key_file: Option<PathBuf>,
    /// With --redis: do not route answers to server-to-client requests through Redis (pin
    /// sessions at the load balancer instead, by Mcp-Session-Id)
    #[arg(long, requires = "redis")]
    pub no_answer_bus: bool,
}

/// The sealing keys (current, previous) from `--sealing-key-file` or the environment.
fn sealing_keys(file: Option<&Path>) -> Result<Option<(SealingKey, Option<SealingKey>)>, Fail> {
    let (current, previous, source) = match file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                Fail::usage(format!(
                    "cannot read the sealing key file {}: {e}",
                    path.display()
                ))
            })?;
            let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
            let current = lines.next().map(str::to_owned);
            let previous = lines.next().map(str::to_owned);
            (current, previous, path.display().to_string())
        }
        None => (
            std::env::var(SEALING_KEY_ENV)
                .ok()
                .filter(|k| !k.is_empty()),
            std::env::var(PREVIOUS_KEY_ENV)
                .ok()
                .filter(|k| !k.is_empty()),
            SEALING_KEY_ENV.to_owned(),
        ),
    };
    let Some(current) = current else {
        return match file {
            Some(_) => Err(Fail::usage(format!("{source}: no sealing key in it"))),
            None => Ok(None),
        };
    };
    let key = |secret: &str| {
        SealingKey::new(secret.as_bytes())
            .map_err(|e| Fail::usage(format!("the sealing key from {source}: {e}")))
    };
    Ok(Some((
        key(&current)?,
        previous.as_deref().map(key).transpose()?,
    )))
}

/// What the replicas share, connected once at start.
pub struct Shared {
    #[cfg(feature = "redis")]
    store: Option<std::sync::Arc<mcp_store_redis::RedisStore>>,
    #[cfg(feature = "redis")]
    answer_bus: bool,
}

/// Connects to Redis with `--redis` (fails within the store's timeout when it is unreachable).
pub async fn connect(args: &ReplicaArgs) -> Result<Shared, Fail> {
    #[cfg(feature = "redis")]
    {
        let store = match &args.redis {
            Some(url) => Some(std::sync::Arc::new(
                mcp_store_redis::RedisStore::connect(url, mcp_store_redis::RedisConfig::default())
                    .await
                    .map_err(|e| Fail::connect(format!("cannot connect to Redis at {url}: {e}")))?,
            )),
            None => None,
        };
        Ok(Shared {
            store,
            answer_bus: !args.no_answer_bus,
        })
    }
    #[cfg(not(feature = "redis"))]
    let _ = args.no_answer_bus;
    #[cfg(not(feature = "redis"))]
    match &args.redis {
        Some(_) => Err(Fail::usage(
            "--redis: this mcp was built without Redis support (cargo feature `redis`)",
        )),
        None => Ok(Shared {}),
    }
}

/// The example server's builder with the configured sealing keys and, with `--redis`, the
/// change bus (list changes and resource updates reach every replica's clients) and the task
/// backend (a task of the extension is read, answered and cancelled through any replica).
pub fn configure_server(
    args: &ReplicaArgs,
    shared: &Shared,
    builder: ServerBuilder,
) -> Result<ServerBuilder, Fail> {
    let builder = match sealing_keys(args.sealing_key_file.as_deref())? {
        Some((current, Some(previous))) => {
            builder.sealing_key(current).previous_sealing_key(previous)
        }
        Some((current, None)) => builder.sealing_key(current),
        None => builder,
    };
    #[cfg(feature = "redis")]
    if let Some(store) = &shared.store {
        return Ok(builder
            .change_bus(store.clone())
            .task_backend(store.clone()));
    }
    let _ = shared;
    Ok(builder)
}

/// The HTTP service's builder on the Redis stores, with `--redis`.
pub fn configure_service(
    shared: &Shared,
    builder: StreamableHttpServiceBuilder,
) -> StreamableHttpServiceBuilder {
    #[cfg(feature = "redis")]
    if let Some(store) = &shared.store {
        let builder = builder
            .session_store(store.clone())
            .event_store(store.clone());
        return match shared.answer_bus {
            true => builder.message_bus(store.clone()),
            false => builder,
        };
    }
    let _ = shared;
    builder
}
