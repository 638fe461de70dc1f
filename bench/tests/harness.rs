//! The harness end to end: the driver against the limit servers (and the SDK's stdio server) in
//! every mode, with a fixed number of calls. No timing is asserted; only that every call was
//! answered correctly and the reports are complete.

use std::process::Command;

use mcp_bench::load::{Protocol, Report, SessionsReport, ThroughputReport};

fn bin(name: &str) -> String {
    match name {
        "driver" => env!("CARGO_BIN_EXE_driver"),
        "limit-stdio" => env!("CARGO_BIN_EXE_limit-stdio"),
        "limit-http" => env!("CARGO_BIN_EXE_limit-http"),
        "sdk-echo" => env!("CARGO_BIN_EXE_sdk-echo"),
        "bench-run" => env!("CARGO_BIN_EXE_bench-run"),
        "sdk-client-driver" => env!("CARGO_BIN_EXE_sdk-client-driver"),
        other => panic!("unknown binary {other}"),
    }
    .to_owned()
}

fn driver(args: &[&str]) -> Report {
    run_driver("driver", args)
}

fn run_driver(name: &str, args: &[&str]) -> Report {
    let output = Command::new(bin(name)).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "driver {args:?} failed: {}{}",
        stdout,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap()
}

/// The raw driver's arguments: `driver_args` (split at spaces), then the server command
/// `server` after `--`.
fn driver_command<'a>(driver_args: &'a str, server: &[&'a str]) -> Vec<&'a str> {
    let mut args: Vec<&str> = driver_args.split_whitespace().collect();
    args.push("--");
    args.extend_from_slice(server);
    args
}

/// The raw driver's sessions report with `driver_args` against the server command `server`.
fn sessions(driver_args: &str, server: &[&str]) -> SessionsReport {
    match driver(&driver_command(driver_args, server)) {
        Report::Sessions(report) => report,
        other => panic!("not a sessions report: {other:?}"),
    }
}

fn throughput(args: &[&str]) -> ThroughputReport {
    client_throughput("driver", args)
}

/// The raw driver's report with `driver_args` (split at spaces) against the server command
/// `server`.
fn drive(driver_args: &str, server: &[&str]) -> ThroughputReport {
    throughput(&driver_command(driver_args, server))
}

fn client_throughput(name: &str, args: &[&str]) -> ThroughputReport {
    match run_driver(name, args) {
        Report::Throughput(report) => report,
        other => panic!("not a throughput report: {other:?}"),
    }
}

fn assert_all_answered(report: &ThroughputReport, calls: u64) {
    assert_eq!(report.summary.errors, 0, "{report:?}");
    assert_eq!(report.summary.calls, calls, "{report:?}");
    assert!(report.summary.calls_per_s > 0.0, "{report:?}");
    assert!(report.summary.p99_us >= report.summary.p50_us, "{report:?}");
    assert!(
        report.server_peak_rss_kb.is_some_and(|kb| kb > 0),
        "{report:?}"
    );
}

/// The raw driver's 300 calls over stdio, `inflight` at a time, to the server command
/// `server`, every one answered.
fn stdio_calls_answered(inflight: &str, server: &[&str]) -> ThroughputReport {
    let report = drive(
        &format!("--stdio --inflight {inflight} --calls 300 --warmup 0"),
        server,
    );
    assert_all_answered(&report, 300);
    report
}

#[test]
fn stdio_limit_server_sequential_and_pipelined() {
    let limit = bin("limit-stdio");
    for inflight in ["1", "8"] {
        let report = stdio_calls_answered(inflight, &[&limit]);
        assert_eq!(report.transport, "stdio");
    }
    let report = drive(
        "--stdio --protocol 2026-07-28 --inflight 4 --calls 100 --warmup 0",
        &[&limit],
    );
    assert_eq!(report.protocol, Protocol::Stateless);
    assert_all_answered(&report, 100);
}

#[test]
fn http_limit_server_stateful_and_stateless() {
    let limit = bin("limit-http");
    let report = drive(
        "--http --inflight 4 --calls 200 --warmup 0",
        &[&limit, "--listen", "{addr}"],
    );
    assert_eq!(report.transport, "http");
    assert_all_answered(&report, 200);
    let report = drive(
        "--http --protocol 2026-07-28 --calls 100 --warmup 0",
        &[
            &limit,
            "--listen",
            "{addr}",
            "--stateless",
            "--threads",
            "0",
        ],
    );
    assert_all_answered(&report, 100);
}

#[test]
fn sessions_are_counted() {
    let limit = bin("limit-http");
    let report = sessions("--http --sessions 50", &[&limit, "--listen", "{addr}"]);
    assert_eq!(report.sessions, 50);
    assert_eq!(report.session_ids, 50);
    assert!(report.rss_after_kb > 0);
    let report = sessions(
        "--http --protocol 2026-07-28 --sessions 50",
        &[&limit, "--listen", "{addr}", "--stateless"],
    );
    assert_eq!(report.session_ids, 0);
}

#[test]
fn cold_start_of_both_stdio_servers() {
    for server in [bin("limit-stdio"), bin("sdk-echo")] {
        let mut args = vec!["--stdio", "--cold-start", "3", "--", &server];
        if server.ends_with("sdk-echo") {
            args.push("--stdio");
        }
        match driver(&args) {
            Report::ColdStart(report) => {
                assert_eq!(report.samples, 3);
                assert!(
                    report.median_ms >= report.min_ms && report.min_ms > 0.0,
                    "{report:?}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn sdk_stdio_server_answers_every_call() {
    let sdk = bin("sdk-echo");
    for inflight in ["1", "16"] {
        stdio_calls_answered(inflight, &[&sdk, "--stdio"]);
    }
}

#[test]
fn a_server_that_never_answers_fails_the_run_instead_of_hanging() {
    // `cat` echoes each request back: a message with a `method`, never an answer.
    let output = Command::new(bin("driver"))
        .args([
            "--stdio",
            "--calls",
            "5",
            "--warmup",
            "0",
            "--timeout",
            "1",
            "--",
            "cat",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("driver:"), "{stderr}");
}

#[test]
fn wrong_answers_are_errors_not_calls() {
    // A "server" answering every line with an error.
    let script = r#"while read -r line; do echo '{"jsonrpc":"2.0","id":'"$(echo "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')"',"error":{"code":-1,"message":"no"}}'; done"#;
    let report = drive(
        "--stdio --protocol 2026-07-28 --calls 5 --warmup 0",
        &["sh", "-c", script],
    );
    assert_eq!(report.summary.calls, 0);
    assert_eq!(report.summary.errors, 5);
}

#[test]
fn bench_run_writes_the_report() {
    let dir = std::env::temp_dir().join(format!("mcp-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("performance.md");
    let bin_dir = std::path::Path::new(&bin("driver"))
        .parent()
        .unwrap()
        .to_owned();
    let output = Command::new(bin("bench-run"))
        .args([
            "--rounds",
            "2",
            "--duration",
            "0.2",
            "--warmup",
            "0",
            "--cold-starts",
            "2",
            "--sessions",
            "20",
        ])
        .args([
            "--only",
            "stdio-seq,stdio-32,cold-start",
            "--command-line",
            "test run",
        ])
        .arg("--bin-dir")
        .arg(&bin_dir)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let md = std::fs::read_to_string(&out).unwrap();
    assert_eq!(md, String::from_utf8_lossy(&output.stdout));
    assert!(md.contains("| command | `test run` |"), "{md}");
    for row in [
        "| stdio, sequential, pinned |",
        "| stdio, 32 in flight |",
        "## stdio cold start",
    ] {
        assert!(md.contains(row), "{row} missing:\n{md}");
    }
    assert!(!md.contains("## Runs that failed"), "{md}");
    // Both servers' starts, taken in turns, are counted per round.
    assert!(md.contains("median of 2 starts per round"), "{md}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sdk_client_driver_against_both_limit_servers() {
    let stdio = bin("limit-stdio");
    let http = bin("limit-http");
    for inflight in ["1", "8"] {
        let load = [
            "--inflight",
            inflight,
            "--calls",
            "200",
            "--warmup",
            "0",
            "--",
        ];
        let mut args = vec!["--stdio"];
        args.extend(load);
        args.push(&stdio);
        assert_all_answered(&client_throughput("sdk-client-driver", &args), 200);
        let mut args = vec!["--http"];
        args.extend(load);
        args.extend([http.as_str(), "--listen", "{addr}"]);
        let report = client_throughput("sdk-client-driver", &args);
        assert_eq!(report.transport, "http");
        assert_all_answered(&report, 200);
    }
}
