//! The raw JSON-RPC load driver. It starts the server itself (so it can read the server's memory
//! from `/proc`), runs one measurement and prints one JSON line.
//!
//! ```text
//! driver --stdio [LOAD] -- SERVER-COMMAND...            throughput over stdin/stdout
//! driver --http [--url URL] [LOAD] -- SERVER-COMMAND... throughput over Streamable HTTP;
//!        `{addr}` / `{port}` in the command become a free loopback address / its port
//! driver --http --sessions N [--protocol P] -- CMD...   RSS per idle session
//! driver --stdio --cold-start N -- CMD...               spawn to initialize answer, median
//!
//! LOAD: --inflight N (1)  --duration SECS (3) | --calls N  --warmup SECS (0.5)
//!       --protocol 2025-11-25|2026-07-28  --text-len BYTES (100)  --max-message BYTES
//!       --timeout SECS (the run, including start-up; default warm-up + duration + 60)
//! ```
//! Without a command, `--http --url URL` drives a server started elsewhere (no memory figures).

use std::process::ExitCode;
use std::time::Duration;

use mcp_bench::args::Args;
use mcp_bench::driver::http::{self, Target};
use mcp_bench::driver::{self, LoadOptions, ServerProcess, stdio};
use mcp_bench::fail;
use mcp_bench::load::{Protocol, Report, Result, Stop};

fn main() -> ExitCode {
    match run() {
        Ok(report) => match serde_json::to_string(&report) {
            Ok(line) => {
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("driver: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("driver: {e}");
            ExitCode::FAILURE
        }
    }
}

fn seconds(value: f64, name: &str) -> Result<Duration> {
    Duration::try_from_secs_f64(value).map_err(|e| fail!("{name}: {e}"))
}

fn run() -> Result<Report> {
    let mut args = Args::from_env();
    let use_stdio = args.flag("--stdio");
    let use_http = args.flag("--http");
    let url: Option<String> = args.value("--url")?;
    let sessions: Option<u64> = args.parsed_opt("--sessions")?;
    let cold_start: Option<usize> = args.parsed_opt("--cold-start")?;
    let calls: Option<u64> = args.parsed_opt("--calls")?;
    let duration: f64 = args.parsed("--duration", 3.0)?;
    let warmup: f64 = args.parsed("--warmup", 0.5)?;
    let timeout: Option<f64> = args.parsed_opt("--timeout")?;
    let timeout = match (timeout, calls) {
        (Some(timeout), _) => timeout,
        (None, None) if sessions.is_none() && cold_start.is_none() => warmup + duration + 60.0,
        (None, _) => 300.0,
    };
    let defaults = LoadOptions::default();
    let options = LoadOptions {
        protocol: args.parsed("--protocol", Protocol::Session)?,
        inflight: args.parsed("--inflight", 1)?,
        warmup: seconds(warmup, "--warmup")?,
        stop: match calls {
            Some(calls) => Stop::Calls(calls),
            None => Stop::After(seconds(duration, "--duration")?),
        },
        text_len: args.parsed("--text-len", defaults.text_len)?,
        max_message: args.parsed("--max-message", defaults.max_message)?,
        max_samples: args.parsed("--max-samples", defaults.max_samples)?,
        timeout: seconds(timeout, "--timeout")?,
    };
    let command = args.finish()?;

    match (use_stdio, use_http) {
        (true, false) => {
            if let Some(samples) = cold_start {
                let report =
                    stdio::cold_start(&command, samples, options.max_message, options.timeout)?;
                return Ok(Report::ColdStart(report));
            }
            if sessions.is_some() {
                return Err(fail!("--sessions needs --http"));
            }
            Ok(Report::Throughput(stdio::throughput(&command, &options)?))
        }
        (false, true) => {
            if cold_start.is_some() {
                return Err(fail!("--cold-start needs --stdio"));
            }
            let (target, server) = if command.is_empty() {
                let url = url.ok_or_else(|| fail!("--http needs --url or a server command"))?;
                (Target::parse(&url)?, None)
            } else {
                let addr = driver::free_local_addr()?;
                let server = ServerProcess::spawn(&driver::substitute(&command, addr), false)?;
                http::wait_listening(addr, &server, Duration::from_secs(10))?;
                let url = url.unwrap_or_else(|| format!("http://{addr}/mcp"));
                (Target::parse(&url)?, Some(server))
            };
            let pid = server.as_ref().map(ServerProcess::pid);
            let watchdog = server.as_ref().map(|s| s.watchdog(options.timeout));
            let report = match sessions {
                Some(count) => {
                    let pid = pid.ok_or_else(|| fail!("--sessions needs a server command"))?;
                    let (protocol, max, timeout) =
                        (options.protocol, options.max_message, options.timeout);
                    http::sessions(target, protocol, count, pid, max, timeout).map(Report::Sessions)
                }
                None => http::throughput(target, &options, pid).map(Report::Throughput),
            };
            if watchdog.is_some_and(driver::Watchdog::disarm) {
                return Err(fail!(
                    "run not over within {:?}: server killed",
                    options.timeout
                ));
            }
            let report = report?;
            if let Some(server) = &server {
                server.check_running()?;
            }
            Ok(report)
        }
        _ => Err(fail!("give exactly one of --stdio and --http")),
    }
}
