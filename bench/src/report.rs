//! The orchestrator's results and the markdown it writes to `docs/performance.md`.

use std::fmt::Write as _;

use crate::load::Report;
use crate::stats::median;

/// Which table a case belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    /// Server throughput: SDK server against the limit server, driven by the raw driver.
    Server,
    /// Memory per idle session.
    Sessions,
    /// Spawn to `initialize` answer.
    ColdStart,
    /// Client throughput: the SDK's client against the raw driver, both on the limit server.
    Client,
}

/// The acceptance target of a case.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Goal {
    /// The subject's calls/s must be at least this fraction of the baseline's.
    RatioAtLeast(f64),
    /// The subject's figure must be at most this multiple of the baseline's.
    RatioAtMost(f64),
    /// The subject's bytes per session must be at most this.
    BytesAtMost(f64),
    /// No target; informational.
    None,
}

/// One measured comparison: a baseline (limit server, or the raw driver) and a subject (the SDK).
#[derive(Debug, Clone)]
pub struct Case {
    /// Short identifier, used in progress output and `--only`.
    pub key: String,
    /// The table it goes in.
    pub table: Table,
    /// Row title.
    pub title: String,
    /// Whether driver and server were pinned to one core.
    pub pinned: bool,
    /// The target.
    pub goal: Goal,
    /// Per round: the baseline's and the subject's report, or why the run failed.
    pub rounds: Vec<[Outcome; 2]>,
}

/// The result of one driver run.
pub type Outcome = Result<Report, String>;

impl Case {
    fn figures(&self, side: usize, figure: impl Fn(&Report) -> Option<f64>) -> Vec<f64> {
        self.rounds
            .iter()
            .filter_map(|round| round.get(side)?.as_ref().ok().and_then(&figure))
            .collect()
    }

    fn ratios(&self, figure: impl Fn(&Report) -> Option<f64>) -> Vec<f64> {
        self.rounds
            .iter()
            .filter_map(|[base, subject]| {
                let base = figure(base.as_ref().ok()?)?;
                let subject = figure(subject.as_ref().ok()?)?;
                (base > 0.0).then(|| subject / base)
            })
            .collect()
    }

    fn first_error(&self, side: usize) -> Option<&str> {
        self.rounds
            .iter()
            .find_map(|round| round.get(side)?.as_ref().err().map(String::as_str))
    }
}

fn calls_per_s(report: &Report) -> Option<f64> {
    match report {
        Report::Throughput(t) if t.summary.errors == 0 => Some(t.summary.calls_per_s),
        _ => None,
    }
}

fn p50(report: &Report) -> Option<f64> {
    match report {
        Report::Throughput(t) => Some(t.summary.p50_us),
        _ => None,
    }
}

fn p99(report: &Report) -> Option<f64> {
    match report {
        Report::Throughput(t) => Some(t.summary.p99_us),
        _ => None,
    }
}

fn peak_mb(report: &Report) -> Option<f64> {
    match report {
        Report::Throughput(t) => t.server_peak_rss_kb.map(|kb| kb as f64 / 1024.0),
        _ => None,
    }
}

fn per_session(report: &Report) -> Option<f64> {
    match report {
        Report::Sessions(s) => Some(s.bytes_per_session),
        _ => None,
    }
}

fn session_ids(report: &Report) -> Option<f64> {
    match report {
        Report::Sessions(s) => Some(s.session_ids as f64),
        _ => None,
    }
}

fn cold_ms(report: &Report) -> Option<f64> {
    match report {
        Report::ColdStart(c) => Some(c.median_ms),
        _ => None,
    }
}

fn errors(report: &Report) -> Option<f64> {
    match report {
        Report::Throughput(t) => Some(t.summary.errors as f64),
        _ => None,
    }
}

/// Formats a count with thousands separators, e.g. `97,900`.
///
/// ```
/// assert_eq!(mcp_bench::report::thousands(97_912.4), "97,912");
/// assert_eq!(mcp_bench::report::thousands(12.0), "12");
/// ```
pub fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn med(values: &[f64]) -> Option<f64> {
    median(values)
}

fn or_dash(value: Option<String>) -> String {
    value.unwrap_or_else(|| "–".into())
}

fn us(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

fn verdict(pass: Option<bool>) -> &'static str {
    match pass {
        Some(true) => "met",
        Some(false) => "**missed**",
        None => "–",
    }
}

/// What the document header says about the run.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// The command line that produced it.
    pub command: String,
    /// UTC date and time.
    pub date: String,
    /// Commit of the tree measured.
    pub revision: String,
    /// `nproc`.
    pub cpus: usize,
    /// CPU model name.
    pub cpu_model: String,
    /// Kernel release.
    pub kernel: String,
    /// Compiler version.
    pub rustc: String,
    /// Rounds run.
    pub rounds: usize,
    /// Measured seconds per throughput run and warm-up seconds.
    pub duration: f64,
    /// Warm-up seconds per throughput run.
    pub warmup: f64,
    /// Whether pinned cases really ran under `taskset -c 0`.
    pub pinning: bool,
    /// Sessions opened per sessions run.
    pub sessions: u64,
    /// Cold starts per cold-start run.
    pub cold_starts: usize,
}

/// The build-cost part of `docs/performance.md`: from the line `<!-- compile-cost: begin ... -->`
/// (the section `scripts/compile-cost --write` owns, then the test command's figures) to the end,
/// so that a benchmark run keeps it.
pub fn compile_cost_section(doc: &str) -> Option<&str> {
    let start = doc.find("<!-- compile-cost: begin")?;
    Some(doc[start..].trim_end())
}

/// Renders the whole `docs/performance.md` but its build-cost part (see
/// [`compile_cost_section`]).
pub fn markdown(info: &RunInfo, cases: &[Case]) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Performance\n");
    let _ = writeln!(
        md,
        "Generated by `scripts/bench` (the `mcp-bench` workspace member, `bench/`), the build-cost \
         sections at the end by `scripts/compile-cost --write` and by hand; do not edit the rest by hand.\n\
         Each figure is the median over {} interleaved round(s). **Ratios** compare the SDK with a \
         baseline measured in the *same round* (the \"limit\" servers written with plain `serde_json` \
         and bare hyper, or the raw JSON-RPC driver) and are the median of the per-round ratios: \
         these machines are noisy, so absolute numbers mean little and ratios mean a lot.\n",
        info.rounds
    );
    let _ = writeln!(md, "## Run\n");
    let _ = writeln!(md, "| | |\n|---|---|");
    let _ = writeln!(md, "| command | `{}` |", info.command);
    let _ = writeln!(md, "| date (UTC) | {} |", info.date);
    let _ = writeln!(md, "| revision | `{}` |", info.revision);
    let _ = writeln!(
        md,
        "| machine | {} CPUs (`nproc`), {} |",
        info.cpus, info.cpu_model
    );
    let _ = writeln!(md, "| kernel | {} |", info.kernel);
    let _ = writeln!(md, "| compiler | {} |", info.rustc);
    let _ = writeln!(
        md,
        "| per throughput run | {:.1} s warm-up, {:.1} s measured; 100-byte text; {} |",
        info.warmup,
        info.duration,
        if info.pinning {
            "\"pinned\" = driver and server under `taskset -c 0`"
        } else {
            "**not pinned** (`taskset` unavailable or `--no-pin`)"
        }
    );
    let _ = writeln!(md);

    server_table(&mut md, cases);
    sessions_table(&mut md, cases, info);
    cold_start_table(&mut md, cases);
    client_table(&mut md, cases);
    failures(&mut md, cases);

    let _ = writeln!(md, "## How it is measured\n");
    let _ = writeln!(
        md,
        "- Servers: the SDK (`mcp-server`) with one typed tool `echo` (input `{{text}}`, output one \
         text content block), served the way the SDK's documentation shows: over stdio \
         `sdk-echo-stdio` (`bench/stdio`: `Server::run_stdio`, which runs the server on a \
         current-thread runtime of its own and reads stdin on a thread of its own that answers \
         requests where they are read, with `mcp-server`'s default features, in a binary of its \
         own), over HTTP `sdk-echo --http` (`StreamableHttpService` on `#[tokio::main]`'s \
         multi-threaded runtime). `limit-stdio` (blocking `BufReader`/`BufWriter`, `serde_json` \
         into borrowed structs, one flush per batch of pending input) and `limit-http` (bare hyper \
         1, HTTP/1.1 keep-alive, `TCP_NODELAY`, `application/json` answers, a session id per \
         `initialize`) do the same work with nothing else; their 2026-07-28 answers carry what \
         the specification asks of every stateless result, as the SDK's do (`resultType`, and \
         the server's identity in `_meta`).\n\
         - Rows marked \"(experiment)\" are not what the documentation shows. The multi-threaded \
         rows serve the same `Server` over stdio with `sdk-echo --stdio`: tokio's default \
         multi-threaded runtime (as `#[tokio::main]` builds it), in the binary that also links the \
         HTTP stack.\n\
         - Driver: `driver` speaks raw JSON-RPC and never uses the SDK, so it measures the server. \
         stdio: blocking pipe I/O (a writer and a reader thread when requests are in flight). \
         HTTP: hyper's client on one thread, one keep-alive connection per request in flight. Every \
         answer is checked (id and echoed text); runs with errors are not counted.\n\
         - HTTP with 32 requests in flight on 2 cores: the driver's thread and the server's two \
         workers share the cores, and the throughput turns on whether the server keeps pace with \
         the driver on about one core. A server that needs more wakes its second worker often, \
         which preempts the driver: `limit-http --extra-work-ns 250` (a quarter of a microsecond \
         more CPU time per request) loses about a fifth of the limit's throughput, \
         `--extra-work-ns 1000` about a third. The limit server itself lands on either side from \
         one run to the next, so these two ratios move by a tenth between runs. The rows \
         \"server and driver on a core each\" run the same load with the server under \
         `taskset -c 0` (its runtime then has one worker) and the driver under `taskset -c 1`: \
         they compare the cost per request under concurrency, as the pinned sequential rows do \
         for one request at a time.\n\
         - Sessions: after 20 warm-up sessions, 1000 sessions are opened (`initialize` + \
         `notifications/initialized`) and left idle; the figure is the server's `VmRSS` growth divided \
         by 1000. For 2026-07-28 (stateless) each \"session\" is the `server/discover` + `tools/call` a \
         fresh client sends.\n\
         - Cold start: spawn of the stdio server to its `initialize` answer, median of {} starts per \
         round; the limit and the SDK server take turns start by start (each start after an \
         unmeasured one of the same server), so a slow spell of the machine hits both.\n\
         - Peak RSS is the server's `VmHWM` at the end of the run.\n\
         - Telemetry (`scripts/bench --otel`): the SDK servers are built with their `otel` \
         feature (`mcp-server/otel` and the OpenTelemetry SDK) and, after each stdio and HTTP \
         server row, the same row runs with the server's telemetry installed (\"telemetry on\": \
         every span sampled, processed by the SDK's batch processor and handed to an exporter \
         that drops it, the duration histograms collected by the SDK's periodic reader for an \
         exporter that drops them) and with \
         a sampler that samples nothing (\"telemetry sampled out\"), chosen by `MCP_BENCH_OTEL` \
         (`on`, `sampled-out`) in the server's environment (`bench/src/otel.rs`). The plain rows \
         of such a run measure telemetry compiled in but not installed; compare them with a run \
         without `--otel` for the cost of the feature alone. Each row's own `--only` key gets \
         `-otel-on` and `-otel-sampled-out`: `scripts/bench --otel --only \
         stdio-seq,stdio-seq-otel-on,stdio-seq-otel-sampled-out`.\n",
        cases
            .iter()
            .find(|c| c.table == Table::ColdStart)
            .and_then(|c| c.rounds.iter().flatten().find_map(|o| match o {
                Ok(Report::ColdStart(r)) => Some(r.samples),
                _ => None,
            }))
            .unwrap_or(20)
    );
    let _ = writeln!(
        md,
        "## Reference figures from the issue (other implementations)\n"
    );
    let _ = writeln!(
        md,
        "Measured elsewhere on a 2-core machine of the same kind; for orientation only (compare ratios, \
         not absolute numbers).\n\n\
         | mode | limit | rmcp 3.9 | TypeScript SDK 1.32 |\n|---|---|---|---|\n\
         | stdio, sequential, pinned | 97,900 calls/s, p50 8 µs | 35,700/s, 24 µs | 16,700/s |\n\
         | stdio, 32 in flight | 134,000/s | 13,600/s | 32,300/s |\n\
         | Streamable HTTP, sequential, pinned | 38,500/s | 12,500/s | 1,500/s |\n\
         | Streamable HTTP, 32 in flight | 60,200/s | 26,000/s | 2,100/s |\n\
         | memory per idle stateful HTTP session | 0 (stateless) | 52 kB | 64 kB |\n\
         | stdio cold start | 2.8 ms | 3.4 ms | 340 ms |"
    );
    md
}

fn server_table(md: &mut String, cases: &[Case]) {
    let rows = section(
        md,
        cases,
        Table::Server,
        "Server throughput (SDK server vs limit server, raw driver)",
        &[
            "mode",
            "limit calls/s",
            "limit p50 / p99 µs",
            "SDK calls/s",
            "SDK p50 / p99 µs",
            "SDK / limit",
            "target",
            "peak RSS limit / SDK (MB)",
        ],
    );
    if rows.is_empty() {
        return;
    }
    for case in rows {
        let (base_cps, base_lat) = throughput(case, 0);
        let (sdk_cps, sdk_lat) = throughput(case, 1);
        let ratio = med(&case.ratios(calls_per_s));
        let (target, pass) = goal_text(case.goal, ratio);
        let mem = match (
            med(&case.figures(0, peak_mb)),
            med(&case.figures(1, peak_mb)),
        ) {
            (Some(a), Some(b)) => format!("{a:.1} / {b:.1}"),
            (Some(a), None) => format!("{a:.1} / –"),
            (None, Some(b)) => format!("– / {b:.1}"),
            (None, None) => "–".into(),
        };
        let _ = writeln!(
            md,
            "| {} | {base_cps} | {base_lat} | {sdk_cps} | {sdk_lat} | {} | {target} {} | {mem} |",
            case.title,
            or_dash(ratio.map(|r| format!("{r:.2}x"))),
            verdict(pass)
        );
    }
    let _ = writeln!(md);
}

/// The cases of `table`; when there are any, the section's heading (`title`, which may carry
/// a paragraph after a blank line) and the head of its table with `columns`.
fn section<'a>(
    md: &mut String,
    cases: &'a [Case],
    table: Table,
    title: &str,
    columns: &[&str],
) -> Vec<&'a Case> {
    let rows: Vec<&Case> = cases.iter().filter(|c| c.table == table).collect();
    if !rows.is_empty() {
        let _ = writeln!(md, "## {title}\n");
        let _ = writeln!(md, "| {} |", columns.join(" | "));
        let _ = writeln!(md, "{}|", "|---".repeat(columns.len()));
    }
    rows
}

/// Side `i` (0 the baseline, 1 the SDK) of a throughput case: calls per second, and the p50 /
/// p99 latency in µs.
fn throughput(case: &Case, i: usize) -> (String, String) {
    let cps = med(&case.figures(i, calls_per_s)).map(thousands);
    let lat = med(&case.figures(i, p50))
        .zip(med(&case.figures(i, p99)))
        .map(|(a, b)| format!("{} / {}", us(a), us(b)));
    (or_dash(cps), or_dash(lat))
}

fn goal_text(goal: Goal, ratio: Option<f64>) -> (String, Option<bool>) {
    match goal {
        Goal::RatioAtLeast(min) => (format!(">= {min}x"), ratio.map(|r| r >= min)),
        Goal::RatioAtMost(max) => (format!("<= {max}x"), ratio.map(|r| r <= max)),
        Goal::BytesAtMost(max) => (format!("<= {} kB", max / 1000.0), ratio.map(|r| r <= max)),
        Goal::None => (String::new(), None),
    }
}

fn sessions_table(md: &mut String, cases: &[Case], info: &RunInfo) {
    let rows = section(
        md,
        cases,
        Table::Sessions,
        &format!("Memory per idle HTTP session ({} sessions)", info.sessions),
        &[
            "mode",
            "limit bytes/session",
            "SDK bytes/session",
            "session ids issued (limit / SDK)",
            "target (SDK)",
        ],
    );
    if rows.is_empty() {
        return;
    }
    for case in rows {
        let base = med(&case.figures(0, per_session));
        let sdk = med(&case.figures(1, per_session));
        let ids = |i| med(&case.figures(i, session_ids)).map(|v| format!("{v:.0}"));
        let (target, pass) = match case.goal {
            Goal::BytesAtMost(max) => (format!("<= {:.0} kB", max / 1000.0), sdk.map(|s| s <= max)),
            _ => ("adds none".to_string(), sdk.map(|s| s <= 1024.0)),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} / {} | {target} {} |",
            case.title,
            or_dash(base.map(thousands_signed)),
            or_dash(sdk.map(thousands_signed)),
            or_dash(ids(0)),
            or_dash(ids(1)),
            verdict(pass)
        );
    }
    let _ = writeln!(
        md,
        "\n\"Adds none\" is read as at most 1 kB per request-sized client: RSS moves in 4 kB pages and \
         allocator caches, so a few hundred bytes per session are noise.\n"
    );
}

fn thousands_signed(value: f64) -> String {
    if value < 0.0 {
        format!("-{}", thousands(-value))
    } else {
        thousands(value)
    }
}

fn cold_start_table(md: &mut String, cases: &[Case]) {
    let rows = section(
        md,
        cases,
        Table::ColdStart,
        "stdio cold start (spawn to `initialize` answer)\n\n\
         Both servers' binaries are dropped from the page cache before the first round, so each \
         is paged in by its own starts, as after a reboot (a binary copied or installed just \
         before sits in larger page-cache folios, which makes every start's page faults \
         cheaper, more so for the larger binary).",
        &["server", "limit ms", "SDK ms", "SDK / limit", "target"],
    );
    if rows.is_empty() {
        return;
    }
    for case in rows {
        let ratio = med(&case.ratios(cold_ms));
        let (target, pass) = goal_text(case.goal, ratio);
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {target} {} |",
            case.title,
            or_dash(med(&case.figures(0, cold_ms)).map(|v| format!("{v:.2}"))),
            or_dash(med(&case.figures(1, cold_ms)).map(|v| format!("{v:.2}"))),
            or_dash(ratio.map(|r| format!("{r:.2}x"))),
            verdict(pass)
        );
    }
    let _ = writeln!(md);
}

fn client_table(md: &mut String, cases: &[Case]) {
    let rows = section(
        md,
        cases,
        Table::Client,
        "Client throughput (SDK client vs raw driver, against the limit servers)",
        &[
            "mode",
            "raw driver calls/s",
            "raw p50 / p99 µs",
            "SDK client calls/s",
            "SDK client p50 / p99 µs",
            "SDK / raw",
        ],
    );
    if rows.is_empty() {
        return;
    }
    for case in rows {
        let (a, b) = throughput(case, 0);
        let (c, d) = throughput(case, 1);
        let ratio = med(&case.ratios(calls_per_s));
        let _ = writeln!(
            md,
            "| {} | {a} | {b} | {c} | {d} | {} |",
            case.title,
            or_dash(ratio.map(|r| format!("{r:.2}x")))
        );
    }
    let _ = writeln!(md);
}

fn failures(md: &mut String, cases: &[Case]) {
    let mut lines = Vec::new();
    for case in cases {
        for side in 0..2 {
            if let Some(error) = case.first_error(side) {
                let who = if side == 0 { "baseline" } else { "SDK" };
                lines.push(format!(
                    "- {} ({who}): {}",
                    case.title,
                    error.replace('\n', " ")
                ));
            }
            let with_errors = case
                .figures(side, errors)
                .iter()
                .filter(|e| **e > 0.0)
                .count();
            if with_errors > 0 {
                let who = if side == 0 { "baseline" } else { "SDK" };
                lines.push(format!(
                    "- {} ({who}): {with_errors} round(s) had failed calls and were not counted",
                    case.title
                ));
            }
        }
    }
    if !lines.is_empty() {
        let _ = writeln!(md, "## Runs that failed\n");
        for line in lines {
            let _ = writeln!(md, "{line}");
        }
        let _ = writeln!(md);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{ColdStartReport, Protocol, Summary, ThroughputReport};

    fn throughput(cps: f64) -> Outcome {
        Ok(Report::Throughput(ThroughputReport {
            transport: "stdio".into(),
            protocol: Protocol::Session,
            inflight: 1,
            summary: Summary {
                calls: 100,
                errors: 0,
                secs: 1.0,
                calls_per_s: cps,
                p50_us: 8.0,
                p99_us: 120.0,
            },
            server_rss_kb: Some(2048),
            server_peak_rss_kb: Some(3072),
        }))
    }

    #[test]
    fn ratios_are_medians_of_same_round_ratios() {
        let case = Case {
            key: "stdio-seq".into(),
            table: Table::Server,
            title: "stdio, sequential, pinned".into(),
            pinned: true,
            goal: Goal::RatioAtLeast(0.8),
            // Per-round ratios 0.5, 0.9, 0.8: median 0.8 (a median of the absolute numbers would
            // give 90,000 / 100,000 = 0.9).
            rounds: vec![
                [throughput(200_000.0), throughput(100_000.0)],
                [throughput(100_000.0), throughput(90_000.0)],
                [throughput(50_000.0), throughput(40_000.0)],
            ],
        };
        let md = markdown(
            &RunInfo {
                rounds: 3,
                ..Default::default()
            },
            &[case],
        );
        assert!(md.contains("| stdio, sequential, pinned | 100,000 | 8.0 / 120 | 90,000 | 8.0 / 120 | 0.80x | >= 0.8x met | 3.0 / 3.0 |"), "{md}");
        assert!(md.contains("## Server throughput (SDK server vs limit server, raw driver)\n\n| mode | limit calls/s | limit p50 / p99 µs | SDK calls/s | SDK p50 / p99 µs | SDK / limit | target | peak RSS limit / SDK (MB) |\n|---|---|---|---|---|---|---|---|\n"), "{md}");
        assert!(!md.contains("## Client throughput"), "{md}");
    }

    #[test]
    fn failures_and_missed_targets_are_visible() {
        let case = Case {
            key: "cold".into(),
            table: Table::ColdStart,
            title: "stdio".into(),
            pinned: false,
            goal: Goal::RatioAtMost(1.2),
            rounds: vec![
                [
                    Ok(Report::ColdStart(ColdStartReport {
                        median_ms: 2.0,
                        min_ms: 1.0,
                        samples: 20,
                    })),
                    Ok(Report::ColdStart(ColdStartReport {
                        median_ms: 3.0,
                        min_ms: 1.0,
                        samples: 20,
                    })),
                ],
                [
                    Ok(Report::ColdStart(ColdStartReport {
                        median_ms: 2.0,
                        min_ms: 1.0,
                        samples: 20,
                    })),
                    Err("sdk-echo: no".into()),
                ],
            ],
        };
        let md = markdown(&RunInfo::default(), &[case]);
        assert!(
            md.contains("larger binary).\n\n| server | limit ms | SDK ms | SDK / limit | target |\n|---|---|---|---|---|\n| stdio | 2.00 | 3.00 | 1.50x | <= 1.2x **missed** |"),
            "{md}"
        );
        assert!(md.contains("- stdio (SDK): sdk-echo: no"), "{md}");
    }
}
