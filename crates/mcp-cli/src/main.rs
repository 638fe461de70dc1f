//! The `mcp` command: a client for any MCP server (stdio, Streamable HTTP, or an `mcpServers`
//! configuration entry), the bundled example server, a stdio/HTTP proxy, and the protocol's
//! schemas and method tables. See `docs/cli.md`.

mod args;
mod check;
mod client;
mod configs;
mod describe;
mod diagnose;
mod lineedit;
mod login;
mod output;
mod protocol;
mod proxy;
mod replicas;
mod schema;
mod shell;
mod sig;
mod skills;
mod target;
#[cfg(feature = "otel")]
mod telemetry;
mod term;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};

/// How a command ended, as the process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: done.
    Ok,
    /// 4: the tool ran and reported an error (`isError`).
    ToolError,
}

/// Why a command failed; each kind has its own exit code.
#[derive(Debug)]
pub struct Fail {
    code: u8,
    message: String,
}

/// Exit code of a usage error (bad arguments, unknown revision, unreadable configuration).
pub const EXIT_USAGE: u8 = 2;
/// Exit code when the server could not be started or reached, or the connection broke.
pub const EXIT_CONNECT: u8 = 3;
/// Exit code when a tool reported an error (`isError`).
pub const EXIT_TOOL: u8 = 4;

impl Fail {
    /// The exit code.
    pub fn code(&self) -> u8 {
        self.code
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Exit 2.
    pub fn usage(message: impl Into<String>) -> Self {
        Fail {
            code: EXIT_USAGE,
            message: message.into(),
        }
    }

    /// Exit 3.
    pub fn connect(message: impl Into<String>) -> Self {
        Fail {
            code: EXIT_CONNECT,
            message: message.into(),
        }
    }

    /// Exit 1.
    pub fn other(message: impl Into<String>) -> Self {
        Fail {
            code: 1,
            message: message.into(),
        }
    }
}

/// `error: cause: cause ...` for an error and its `source()` chain.
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.verbose);
    let result = match cli.command {
        // Offline commands need no runtime.
        Command::Revisions => protocol::revisions(),
        Command::Methods { revision } => protocol::methods(revision),
        Command::Schema(args) => schema::run(&args),
        Command::Completions { shell } => completions(shell),
        Command::Servers(args) => configs::servers(&args),
        Command::Install(args) => configs::install(&args),
        Command::Logout(args) => login::logout(&args),
        command => run_async(command, cli.verbose),
    };
    match result {
        Ok(Exit::Ok) => ExitCode::SUCCESS,
        Ok(Exit::ToolError) => ExitCode::from(EXIT_TOOL),
        Err(fail) => {
            if !fail.message.is_empty() {
                eprintln!("mcp: {}", fail.message);
            }
            ExitCode::from(fail.code)
        }
    }
}

/// `mcp completions SHELL`: the completion script on stdout.
fn completions(shell: clap_complete::Shell) -> Result<Exit, Fail> {
    use clap::CommandFactory;
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "mcp", &mut script);
    output::print_bytes(&script)?;
    Ok(Exit::Ok)
}

fn run_async(command: Command, verbose: u8) -> Result<Exit, Fail> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Fail::other(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async move {
        #[cfg(feature = "otel")]
        let exporting = telemetry::start();
        let result = match command {
            Command::Serve(args) => proxy::serve(args).await,
            Command::Proxy(args) => proxy::proxy(args, verbose).await,
            Command::Login(args) => login::login(args, verbose).await,
            other => client::run(other, verbose).await,
        };
        #[cfg(feature = "otel")]
        if let Some(exporting) = exporting {
            exporting.shutdown().await;
        }
        result
    })
}

/// Whether log lines on stderr are coloured: only on a terminal, and never when `NO_COLOR` is
/// set to a non-empty value (<https://no-color.org>).
fn log_colour(stderr_is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(std::ffi::OsStr::is_empty)
}

/// Diagnostics go to stderr through `tracing`: warnings by default, `-v` debug, `-vv` trace;
/// `RUST_LOG` overrides with a list of `level` and `target=level` directives (`Targets`: no span
/// or field filters, and no regex engine in the binary); a value that does not parse is ignored.
/// Coloured only when stderr is a terminal and `NO_COLOR` is unset.
fn init_tracing(verbose: u8) {
    use std::io::IsTerminal;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let default = match verbose {
        0 => "warn",
        1 => "info,mcp=debug,mcp_cli=debug",
        2 => "debug",
        _ => "trace",
    };
    let filter = log_filter(std::env::var("RUST_LOG").ok().as_deref(), default);
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(log_colour(
            std::io::stderr().is_terminal(),
            std::env::var_os("NO_COLOR").as_deref(),
        ))
        .with_target(verbose > 1);
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(fmt)
        .try_init();
}

/// The filter of `init_tracing`: `RUST_LOG` when it is set and parses, otherwise `default`.
fn log_filter(rust_log: Option<&str>, default: &str) -> tracing_subscriber::filter::Targets {
    rust_log
        .and_then(|directives| directives.parse().ok())
        .or_else(|| default.parse().ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::{log_colour, log_filter};
    use std::ffi::OsStr;
    use tracing::Level;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(log_colour(true, None));
        assert!(
            log_colour(true, Some(OsStr::new(""))),
            "an empty NO_COLOR is unset"
        );
        assert!(!log_colour(true, Some(OsStr::new("1"))));
        assert!(!log_colour(false, None));
        assert!(!log_colour(false, Some(OsStr::new("1"))));
    }

    #[test]
    fn rust_log_overrides_the_default_filter_when_it_parses() {
        let default = "info,mcp_cli=debug";
        let filter = log_filter(None, default);
        assert!(filter.would_enable("mcp_cli::serve", &Level::DEBUG));
        assert!(!filter.would_enable("hyper", &Level::DEBUG));

        let filter = log_filter(Some("warn,hyper=trace"), default);
        assert!(filter.would_enable("hyper::proto", &Level::TRACE));
        assert!(!filter.would_enable("mcp_cli::serve", &Level::INFO));

        let filter = log_filter(Some("hyper=nonsense"), default);
        assert!(
            filter.would_enable("mcp_cli::serve", &Level::DEBUG),
            "ignored: {filter}"
        );
    }
}
