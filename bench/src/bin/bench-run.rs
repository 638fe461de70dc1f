//! Runs the benchmark: every case in interleaved rounds (baseline and SDK alternate which goes
//! first), then writes the markdown report and prints it. `scripts/bench` builds the binaries and
//! calls this.
//!
//! Usage: `bench-run [--rounds N] [--quick] [--duration SECS] [--warmup SECS] [--sessions N]
//! [--cold-starts N] [--no-pin] [--only KEY,KEY] [--bin-dir DIR] [--out FILE]
//! [--command-line TEXT] [--otel]`
//!
//! `--otel` (the SDK servers built with their `otel` feature, as `scripts/bench --otel` does):
//! after each stdio and HTTP server row, the same row with the server's telemetry on and with
//! it sampled out (`MCP_BENCH_OTEL`, bench/src/otel.rs); the row itself then measures the
//! telemetry compiled in but not installed.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mcp_bench::args::Args;
use mcp_bench::fail;
use mcp_bench::load::{ColdStartReport, Error, Report, Result};
use mcp_bench::report::{self, Case, Goal, Outcome, RunInfo, Table};
use mcp_bench::stats::median;

// The task store's RFC 3339 timestamps (mcp-server), which need no date library either.
#[path = "../../../crates/mcp-server/src/tasks/time.rs"]
mod timestamp;

struct Settings {
    rounds: usize,
    duration: f64,
    warmup: f64,
    sessions: u64,
    cold_starts: usize,
    pin: bool,
    only: Option<Vec<String>>,
    bin_dir: PathBuf,
    out: Option<PathBuf>,
    command_line: String,
    /// Rows with the servers' telemetry on and sampled out.
    otel: bool,
}

fn settings() -> Result<Settings> {
    let mut args = Args::from_env();
    let quick = args.flag("--quick");
    let rounds = args.parsed("--rounds", if quick { 1 } else { 5 })?;
    let duration = args.parsed("--duration", if quick { 1.0 } else { 3.0 })?;
    let warmup = args.parsed("--warmup", if quick { 0.2 } else { 0.5 })?;
    let sessions = args.parsed("--sessions", 1000u64)?;
    let cold_starts = args.parsed("--cold-starts", if quick { 10 } else { 20 })?;
    let pin = !args.flag("--no-pin");
    let otel = args.flag("--otel");
    let only = args
        .value("--only")?
        .map(|list| list.split(',').map(str::to_owned).collect());
    let bin_dir = match args.value("--bin-dir")? {
        Some(dir) => PathBuf::from(dir),
        None => std::env::current_exe()?
            .parent()
            .map(Path::to_path_buf)
            .ok_or_else(|| fail!("cannot locate the harness binaries"))?,
    };
    let out = args.value("--out")?.map(PathBuf::from);
    let command_line = args
        .value("--command-line")?
        .unwrap_or_else(|| std::env::args().collect::<Vec<_>>().join(" "));
    args.finish()?;
    if rounds == 0 {
        return Err(fail!("--rounds must be at least 1"));
    }
    Ok(Settings {
        rounds,
        duration,
        warmup,
        sessions,
        cold_starts,
        pin,
        only,
        bin_dir,
        out,
        command_line,
        otel,
    })
}

/// A case before it runs: the two driver command lines.
struct Plan {
    case: Case,
    argv: [Vec<String>; 2],
    /// Seconds a run may take before it is killed.
    timeout: f64,
    /// Cold starts: the driver measures one start per run, and the two sides take turns start
    /// by start, this many times per round.
    samples: Option<usize>,
}

fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|w| (*w).to_owned()).collect()
}

fn plans(s: &Settings, taskset: bool) -> Vec<Plan> {
    let bin = |name: &str| s.bin_dir.join(name).to_string_lossy().into_owned();
    let driver = bin("driver");
    let client = bin("sdk-client-driver");
    let have_client = s.bin_dir.join("sdk-client-driver").exists();
    let limit_stdio = bin("limit-stdio");
    let limit_http = bin("limit-http");
    let sdk = bin("sdk-echo");
    // The stdio server as the documentation writes one (`Server::run_stdio`, default
    // features, a binary of its own); built on its own by scripts/bench. Without it, the
    // stdio rows run `sdk-echo --stdio --threads 0`, the same server in the HTTP binary.
    let sdk_stdio_bin = bin("sdk-echo-stdio");
    let own_stdio = s.bin_dir.join("sdk-echo-stdio").exists();
    let load = |inflight: usize| {
        vec![
            "--inflight".to_owned(),
            inflight.to_string(),
            "--duration".into(),
            s.duration.to_string(),
            "--warmup".into(),
            s.warmup.to_string(),
        ]
    };
    let run_timeout = s.duration + s.warmup + 60.0;
    let mut plans = Vec::new();
    let mut add =
        |key: &str, table, title: &str, pinned: bool, goal, argv: [Vec<String>; 2], timeout| {
            let pin = pinned && taskset;
            let argv = argv.map(|a| {
                if pin {
                    let mut pinned = words(&["taskset", "-c", "0"]);
                    pinned.extend(a);
                    pinned
                } else {
                    a
                }
            });
            plans.push(Plan {
                case: Case {
                    key: key.to_owned(),
                    table,
                    title: title.to_owned(),
                    pinned: pin,
                    goal,
                    rounds: Vec::new(),
                },
                argv,
                timeout,
                samples: (table == Table::ColdStart).then_some(s.cold_starts),
            });
        };
    let stdio = |drv: &str, inflight, server: &[&str]| {
        let mut a = vec![drv.to_owned(), "--stdio".into()];
        a.extend(load(inflight));
        a.push("--".into());
        a.extend(words(server));
        a
    };
    let http = |drv: &str, inflight, protocol: &str, server: &[&str]| {
        let mut a = vec![
            drv.to_owned(),
            "--http".into(),
            "--protocol".into(),
            protocol.into(),
        ];
        a.extend(load(inflight));
        a.push("--".into());
        a.extend(words(server));
        a
    };
    let limit_stdio_cmd = [limit_stdio.as_str()];
    let sdk_stdio: Vec<&str> = if own_stdio {
        vec![sdk_stdio_bin.as_str()]
    } else {
        vec![sdk.as_str(), "--stdio", "--threads", "0"]
    };
    let limit_stateful = [limit_http.as_str(), "--listen", "{addr}"];
    let limit_stateless = [limit_http.as_str(), "--listen", "{addr}", "--stateless"];
    let sdk_stateful = [sdk.as_str(), "--http", "{addr}"];
    let sdk_stateless = [sdk.as_str(), "--http", "{addr}", "--stateless"];

    add(
        "stdio-seq",
        Table::Server,
        "stdio, sequential, pinned",
        true,
        Goal::RatioAtLeast(0.8),
        [
            stdio(&driver, 1, &limit_stdio_cmd),
            stdio(&driver, 1, &sdk_stdio),
        ],
        run_timeout,
    );
    add(
        "stdio-32",
        Table::Server,
        "stdio, 32 in flight",
        false,
        Goal::RatioAtLeast(0.7),
        [
            stdio(&driver, 32, &limit_stdio_cmd),
            stdio(&driver, 32, &sdk_stdio),
        ],
        run_timeout,
    );
    add(
        "http-seq",
        Table::Server,
        "Streamable HTTP 2025-11-25 (session), sequential, pinned",
        true,
        Goal::RatioAtLeast(0.7),
        [
            http(&driver, 1, "2025-11-25", &limit_stateful),
            http(&driver, 1, "2025-11-25", &sdk_stateful),
        ],
        run_timeout,
    );
    add(
        "http-32",
        Table::Server,
        "Streamable HTTP 2025-11-25 (session), 32 in flight",
        false,
        Goal::RatioAtLeast(0.7),
        [
            http(&driver, 32, "2025-11-25", &limit_stateful),
            http(&driver, 32, "2025-11-25", &sdk_stateful),
        ],
        run_timeout,
    );
    add(
        "stateless-seq",
        Table::Server,
        "Streamable HTTP 2026-07-28 (stateless), sequential, pinned",
        true,
        Goal::RatioAtLeast(0.7),
        [
            http(&driver, 1, "2026-07-28", &limit_stateless),
            http(&driver, 1, "2026-07-28", &sdk_stateless),
        ],
        run_timeout,
    );
    add(
        "stateless-32",
        Table::Server,
        "Streamable HTTP 2026-07-28 (stateless), 32 in flight",
        false,
        Goal::RatioAtLeast(0.7),
        [
            http(&driver, 32, "2026-07-28", &limit_stateless),
            http(&driver, 32, "2026-07-28", &sdk_stateless),
        ],
        run_timeout,
    );

    // Not targets: the two HTTP rows with 32 in flight again, with the server on one core and
    // the driver on the other, so that neither preempts the other (the server's runtime then
    // has one worker). They compare the cost per request under concurrency, which the rows
    // above show only when the server keeps pace with the driver (see "How it is measured").
    if taskset {
        let split = |protocol: &str, server: &[&str]| {
            let server: Vec<&str> = ["taskset", "-c", "0"]
                .iter()
                .chain(server)
                .copied()
                .collect();
            let mut a = words(&["taskset", "-c", "1"]);
            a.extend(http(&driver, 32, protocol, &server));
            a
        };
        add(
            "http-32-split",
            Table::Server,
            "Streamable HTTP 2025-11-25 (session), 32 in flight; server and driver on a core each (experiment)",
            false,
            Goal::None,
            [
                split("2025-11-25", &limit_stateful),
                split("2025-11-25", &sdk_stateful),
            ],
            run_timeout,
        );
        add(
            "stateless-32-split",
            Table::Server,
            "Streamable HTTP 2026-07-28 (stateless), 32 in flight; server and driver on a core each (experiment)",
            false,
            Goal::None,
            [
                split("2026-07-28", &limit_stateless),
                split("2026-07-28", &sdk_stateless),
            ],
            run_timeout,
        );
    }

    // Not what the documentation shows for stdio: the same server on tokio's default
    // multi-threaded runtime (`#[tokio::main]`), in the binary that also serves HTTP; shows what
    // that runtime costs per call and at start-up.
    let sdk_multi_thread = [sdk.as_str(), "--stdio"];
    add(
        "stdio-seq-mt",
        Table::Server,
        "stdio, sequential, pinned; multi-threaded runtime (experiment)",
        true,
        Goal::None,
        [
            stdio(&driver, 1, &limit_stdio_cmd),
            stdio(&driver, 1, &sdk_multi_thread),
        ],
        run_timeout,
    );
    add(
        "stdio-32-mt",
        Table::Server,
        "stdio, 32 in flight; multi-threaded runtime (experiment)",
        false,
        Goal::None,
        [
            stdio(&driver, 32, &limit_stdio_cmd),
            stdio(&driver, 32, &sdk_multi_thread),
        ],
        run_timeout,
    );

    let sessions = |protocol: &str, server: &[&str]| {
        let mut a = vec![
            driver.clone(),
            "--http".into(),
            "--protocol".into(),
            protocol.into(),
        ];
        a.extend(["--sessions".into(), s.sessions.to_string(), "--".into()]);
        a.extend(words(server));
        a
    };
    add(
        "sessions",
        Table::Sessions,
        "stateful, 2025-11-25",
        false,
        Goal::BytesAtMost(10_000.0),
        [
            sessions("2025-11-25", &limit_stateful),
            sessions("2025-11-25", &sdk_stateful),
        ],
        300.0,
    );
    add(
        "sessions-stateless",
        Table::Sessions,
        "stateless, 2026-07-28",
        false,
        Goal::None,
        [
            sessions("2026-07-28", &limit_stateless),
            sessions("2026-07-28", &sdk_stateless),
        ],
        300.0,
    );

    let cold = |server: &[&str]| {
        let mut a = vec![
            driver.clone(),
            "--stdio".into(),
            // One start per run (after one unmeasured start of the same server): the rounds
            // alternate the two servers start by start (see `Plan::samples`).
            "--cold-start".into(),
            "1".into(),
            "--".into(),
        ];
        a.extend(words(server));
        a
    };
    add(
        "cold-start",
        Table::ColdStart,
        "stdio",
        false,
        Goal::RatioAtMost(1.2),
        [cold(&limit_stdio_cmd), cold(&sdk_stdio)],
        120.0,
    );
    add(
        "cold-start-mt",
        Table::ColdStart,
        "stdio, multi-threaded runtime, in the binary that also serves HTTP (experiment)",
        false,
        Goal::None,
        [cold(&limit_stdio_cmd), cold(&sdk_multi_thread)],
        120.0,
    );

    if have_client {
        add(
            "client-stdio-seq",
            Table::Client,
            "stdio, sequential, pinned",
            true,
            Goal::None,
            [
                stdio(&driver, 1, &limit_stdio_cmd),
                stdio(&client, 1, &limit_stdio_cmd),
            ],
            run_timeout,
        );
        add(
            "client-stdio-32",
            Table::Client,
            "stdio, 32 in flight",
            false,
            Goal::None,
            [
                stdio(&driver, 32, &limit_stdio_cmd),
                stdio(&client, 32, &limit_stdio_cmd),
            ],
            run_timeout,
        );
        add(
            "client-http-seq",
            Table::Client,
            "Streamable HTTP 2025-11-25, sequential, pinned",
            true,
            Goal::None,
            [
                http(&driver, 1, "2025-11-25", &limit_stateful),
                http(&client, 1, "2025-11-25", &limit_stateful),
            ],
            run_timeout,
        );
        add(
            "client-http-32",
            Table::Client,
            "Streamable HTTP 2025-11-25, 32 in flight",
            false,
            Goal::None,
            [
                http(&driver, 32, "2025-11-25", &limit_stateful),
                http(&client, 32, "2025-11-25", &limit_stateful),
            ],
            run_timeout,
        );
    }
    if s.otel {
        plans = with_telemetry_rows(plans);
    }
    if let Some(only) = &s.only {
        plans.retain(|p| only.contains(&p.case.key));
    }
    plans
}

/// The server rows that get telemetry rows beside them with `--otel`.
const TELEMETRY_ROWS: &[&str] = &[
    "stdio-seq",
    "stdio-32",
    "http-seq",
    "http-32",
    "stateless-seq",
    "stateless-32",
];

/// After each of [`TELEMETRY_ROWS`], the same row with the SDK server's telemetry on
/// (`KEY-otel-on`) and sampled out (`KEY-otel-sampled-out`): the server is started through
/// `env MCP_BENCH_OTEL=...`, the baseline unchanged.
fn with_telemetry_rows(plans: Vec<Plan>) -> Vec<Plan> {
    let mut out = Vec::with_capacity(plans.len() + 2 * TELEMETRY_ROWS.len());
    for plan in plans {
        let extra: Vec<Plan> = if TELEMETRY_ROWS.contains(&plan.case.key.as_str()) {
            [
                ("on", "telemetry on"),
                ("sampled-out", "telemetry sampled out"),
            ]
            .into_iter()
            .map(|(mode, what)| Plan {
                case: Case {
                    key: format!("{}-otel-{mode}", plan.case.key),
                    title: format!("{}; {what}", plan.case.title),
                    goal: Goal::None,
                    rounds: Vec::new(),
                    ..plan.case.clone()
                },
                argv: [
                    plan.argv[0].clone(),
                    with_server_env(&plan.argv[1], &format!("MCP_BENCH_OTEL={mode}")),
                ],
                timeout: plan.timeout,
                samples: plan.samples,
            })
            .collect()
        } else {
            Vec::new()
        };
        out.push(plan);
        out.extend(extra);
    }
    out
}

/// A driver command line whose server (the words after `--`) runs with `assignment` in its
/// environment, through `env`.
fn with_server_env(argv: &[String], assignment: &str) -> Vec<String> {
    let mut argv = argv.to_vec();
    if let Some(dashes) = argv.iter().position(|w| w == "--") {
        argv.splice(
            dashes + 1..dashes + 1,
            ["env".to_owned(), assignment.to_owned()],
        );
    }
    argv
}

/// Cold starts of both sides, one start at a time in turns, so the machine's drifts (these
/// machines have slow spells lasting a few hundred milliseconds, longer than a series of starts
/// of one server) hit both alike: the median and the fastest of `samples` starts per side.
fn alternating_cold_starts(plan: &Plan, order: [usize; 2], samples: usize) -> [Outcome; 2] {
    let mut times: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..samples {
        for side in order {
            match run_driver(&plan.argv[side], plan.timeout) {
                Ok(Report::ColdStart(r)) => times[side].push(r.median_ms),
                Ok(_) => return [Err("not a cold-start report".into()), Err("not run".into())],
                Err(e) => {
                    let mut failed: [Outcome; 2] = [Err("not run".into()), Err("not run".into())];
                    failed[side] = Err(e);
                    return failed;
                }
            }
        }
    }
    times.map(|t| {
        let median_ms = median(&t).ok_or_else(|| "no samples".to_owned())?;
        let min_ms = t.iter().copied().fold(f64::INFINITY, f64::min);
        Ok(Report::ColdStart(ColdStartReport {
            median_ms,
            min_ms,
            samples: t.len(),
        }))
    })
}

/// The servers the cold-start cases start (the word after the driver's `--`).
fn cold_start_programs(plans: &[Plan]) -> std::collections::BTreeSet<String> {
    plans
        .iter()
        .filter(|p| p.samples.is_some())
        .flat_map(|p| &p.argv)
        .filter_map(|argv| {
            let dashes = argv.iter().position(|w| w == "--")?;
            argv.get(dashes + 1).cloned()
        })
        .collect()
}

/// Drops `path` from the page cache, so its first start pages it in as a binary is paged in
/// after a reboot. How a binary's pages sit in the cache changes the cost of every page fault
/// of a start: a file written by `write(2)` (copied, installed) or read through sits in large
/// folios, one that a process paged in, or that the linker wrote through a mapping, in single
/// pages. Left to their history, the two servers could be in different states (and a cold
/// start's ratio moves by about 0.1 between them); this puts both in the same one.
fn uncache(path: &Path) -> std::io::Result<()> {
    let file = std::fs::File::open(path)?;
    // Dirty pages are not dropped: written out first.
    file.sync_data()?;
    rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed)?;
    Ok(())
}

/// Runs one driver command with a time limit and parses its report. The driver's stderr (and
/// its server's) goes to a file, passed through afterwards; a failure is reported with its last
/// lines.
fn run_driver(argv: &[String], timeout: f64) -> Outcome {
    let Some((program, args)) = argv.split_first() else {
        return Err("empty command".into());
    };
    let log_path = std::env::temp_dir().join(format!("mcp-bench-run-{}.log", std::process::id()));
    let log =
        std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs_f64(timeout);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!("timed out after {timeout:.0} s"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => break Err(e.to_string()),
        }
    };
    let stderr = std::fs::read_to_string(&log_path).unwrap_or_default();
    let _ = std::fs::remove_file(&log_path);
    eprint!("{stderr}");
    let status = status?;
    let mut stdout = String::new();
    if let Some(mut pipe) = child.stdout.take() {
        pipe.read_to_string(&mut stdout)
            .map_err(|e| e.to_string())?;
    }
    if !status.success() {
        // The driver's own message comes last; a server's complaint just before it.
        let mut last: Vec<&str> = stderr
            .lines()
            .rev()
            .filter(|l| !l.trim().is_empty())
            .take(2)
            .collect();
        last.reverse();
        return Err(format!("{status}: {}", last.join(" / ")));
    }
    let line = stdout.lines().last().unwrap_or("");
    serde_json::from_str::<Report>(line).map_err(|e| format!("bad driver output {line:?}: {e}"))
}

fn headline(outcome: &Outcome) -> String {
    match outcome {
        Ok(Report::Throughput(t)) => format!(
            "{} calls/s, p50 {:.1} µs, p99 {:.1} µs{}",
            report::thousands(t.summary.calls_per_s),
            t.summary.p50_us,
            t.summary.p99_us,
            if t.summary.errors > 0 {
                format!(", {} ERRORS", t.summary.errors)
            } else {
                String::new()
            }
        ),
        Ok(Report::Sessions(r)) => format!("{:.0} bytes/session", r.bytes_per_session),
        Ok(Report::ColdStart(r)) => format!("{:.2} ms", r.median_ms),
        Err(e) => format!("FAILED: {e}"),
    }
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program)
        .args(args)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// `YYYY-MM-DD HH:MM` (UTC) of a Unix time.
fn utc(secs: u64) -> String {
    let stamp = timestamp::rfc3339(UNIX_EPOCH + Duration::from_secs(secs));
    let (date, time) = stamp.split_once('T').unwrap_or((&stamp, ""));
    format!("{date} {}", time.get(..5).unwrap_or(time))
}

fn run_info(s: &Settings, pinning: bool) -> RunInfo {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")?
                .split_once(':')
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    RunInfo {
        command: s.command_line.clone(),
        date: utc(secs),
        revision: command_output("git", &["rev-parse", "--short", "HEAD"])
            .unwrap_or_else(|| "unknown".into()),
        cpus: command_output("nproc", &["--all"])
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from)),
        cpu_model,
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|k| k.trim().to_owned())
            .unwrap_or_else(|_| "unknown".into()),
        rustc: command_output("rustc", &["-V"]).unwrap_or_else(|| "unknown".into()),
        rounds: s.rounds,
        duration: s.duration,
        warmup: s.warmup,
        pinning,
        sessions: s.sessions,
        cold_starts: s.cold_starts,
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error(e)) => {
            eprintln!("bench-run: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let s = settings()?;
    let taskset = s.pin && command_output("taskset", &["-c", "0", "true"]).is_some();
    if s.pin && !taskset {
        eprintln!("bench-run: `taskset` (util-linux) not usable: pinned modes run unpinned");
    }
    let mut plans = plans(&s, taskset);
    if plans.is_empty() {
        return Err(fail!("no cases selected"));
    }
    for program in cold_start_programs(&plans) {
        if let Err(e) = uncache(Path::new(&program)) {
            eprintln!("bench-run: {program} stays in the page cache as it is: {e}");
        }
    }
    for round in 0..s.rounds {
        for plan in &mut plans {
            // Alternate which side goes first, so slow drifts of the machine hit both alike.
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            let mut outcomes: [Outcome; 2] = match plan.samples {
                Some(samples) => alternating_cold_starts(plan, order, samples),
                None => [Err("not run".into()), Err("not run".into())],
            };
            for side in order {
                let outcome = match plan.samples {
                    Some(_) => std::mem::replace(&mut outcomes[side], Err("not run".into())),
                    None => run_driver(&plan.argv[side], plan.timeout),
                };
                let who = match (plan.case.table, side) {
                    (Table::Client, 0) => "raw driver",
                    (Table::Client, _) => "SDK client",
                    (_, 0) => "limit",
                    _ => "SDK",
                };
                eprintln!(
                    "[round {}/{}] {:<20} {:<10} {}",
                    round + 1,
                    s.rounds,
                    plan.case.key,
                    who,
                    headline(&outcome)
                );
                outcomes[side] = outcome;
            }
            plan.case.rounds.push(outcomes);
        }
    }
    let cases: Vec<Case> = plans.into_iter().map(|p| p.case).collect();
    let mut markdown = report::markdown(&run_info(&s, taskset), &cases);
    if let Some(out) = &s.out {
        // The build-cost sections at the end (scripts/compile-cost): kept as they are.
        let kept = std::fs::read_to_string(out)
            .ok()
            .and_then(|old| report::compile_cost_section(&old).map(str::to_owned));
        if let Some(section) = kept {
            markdown = format!("{markdown}\n{section}\n");
        }
        std::fs::write(out, &markdown).map_err(|e| fail!("writing {}: {e}", out.display()))?;
        eprintln!("bench-run: wrote {}", out.display());
    }
    print!("{markdown}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(otel: bool) -> Settings {
        Settings {
            rounds: 1,
            duration: 1.0,
            warmup: 0.1,
            sessions: 10,
            cold_starts: 1,
            pin: false,
            only: None,
            bin_dir: PathBuf::from("/bench"),
            out: None,
            command_line: String::new(),
            otel,
        }
    }

    #[test]
    fn telemetry_rows_follow_their_rows_and_set_only_the_servers_environment() {
        let plain: Vec<String> = plans(&settings(false), false)
            .into_iter()
            .map(|p| p.case.key)
            .collect();
        let plans = plans(&settings(true), false);
        let keys: Vec<&str> = plans.iter().map(|p| p.case.key.as_str()).collect();
        assert_eq!(keys.len(), plain.len() + 2 * TELEMETRY_ROWS.len());
        for row in TELEMETRY_ROWS {
            let at = keys.iter().position(|k| k == row).expect("the row");
            assert_eq!(keys[at + 1], format!("{row}-otel-on"));
            assert_eq!(keys[at + 2], format!("{row}-otel-sampled-out"));
            let (off, on) = (&plans[at], &plans[at + 1]);
            assert_eq!(off.argv[0], on.argv[0], "the baseline is unchanged");
            assert!(on.case.title.ends_with("; telemetry on"));
            let dashes = on.argv[1].iter().position(|w| w == "--").expect("--");
            assert_eq!(
                on.argv[1][..dashes],
                off.argv[1][..dashes],
                "the driver too"
            );
            assert_eq!(
                on.argv[1][dashes + 1..dashes + 3],
                ["env", "MCP_BENCH_OTEL=on"]
            );
            assert_eq!(on.argv[1][dashes + 3..], off.argv[1][dashes + 1..]);
            assert_eq!(
                plans[at + 2].argv[1][dashes + 2],
                "MCP_BENCH_OTEL=sampled-out"
            );
        }
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00");
        assert_eq!(utc(1_798_761_599), "2026-12-31 23:59");
    }
}
