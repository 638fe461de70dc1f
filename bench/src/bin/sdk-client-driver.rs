//! The SDK's client (`mcp-client`) as a load generator, for the client-side figures: the same
//! workload, schedule and report as `driver`, but every call goes through
//! `ClientSession::call_tool` over the SDK's stdio or Streamable HTTP transport. Run it against
//! the limit servers and compare with `driver` against the same server.
//!
//! ```text
//! sdk-client-driver --stdio [LOAD] -- SERVER-COMMAND...
//! sdk-client-driver --http  [LOAD] -- SERVER-COMMAND...   (`{addr}`/`{port}` substituted)
//!
//! LOAD: --inflight N (1)  --duration SECS (3) | --calls N  --warmup SECS (0.5)
//!       --protocol 2025-11-25  --text-len BYTES (100)  --timeout SECS  --threads N
//! ```
//! `--threads 0` runs the client on a single-threaded runtime; the default is tokio's
//! multi-threaded runtime with one worker per available core (what `#[tokio::main]` gives).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_bench::args::Args;
use mcp_bench::driver::{self, ServerProcess, http};
use mcp_bench::fail;
use mcp_bench::load::{
    DEFAULT_MAX_SAMPLES, EchoCall, Protocol, Recorder, Report, Result, Schedule, Stop,
    ThroughputReport,
};
use mcp_bench::procfs;
use mcp_client::{Client, ClientSession};
use mcp_transport_http::client::StreamableHttpClient;
use mcp_transport_stdio::{ServerCommand, StderrMode};
use mcp_types::{ContentBlock, Implementation};

struct Options {
    stdio: bool,
    inflight: usize,
    warmup: Duration,
    stop: Stop,
    text_len: usize,
    timeout: Duration,
    threads: usize,
    command: Vec<String>,
}

fn seconds(value: f64, name: &str) -> Result<Duration> {
    Duration::try_from_secs_f64(value).map_err(|e| fail!("{name}: {e}"))
}

fn options() -> Result<Options> {
    let mut args = Args::from_env();
    let stdio = args.flag("--stdio");
    let http = args.flag("--http");
    if stdio == http {
        return Err(fail!("give exactly one of --stdio and --http"));
    }
    let protocol: Protocol = args.parsed("--protocol", Protocol::Session)?;
    if protocol != Protocol::Session {
        return Err(fail!(
            "the SDK client is measured on 2025-11-25 sessions only"
        ));
    }
    let calls: Option<u64> = args.parsed_opt("--calls")?;
    let duration: f64 = args.parsed("--duration", 3.0)?;
    let warmup: f64 = args.parsed("--warmup", 0.5)?;
    let inflight: usize = args.parsed("--inflight", 1)?;
    if inflight == 0 || inflight > driver::MAX_INFLIGHT {
        return Err(fail!("--inflight must be 1..={}", driver::MAX_INFLIGHT));
    }
    let default_timeout = if calls.is_some() {
        300.0
    } else {
        warmup + duration + 60.0
    };
    let options = Options {
        stdio,
        inflight,
        warmup: seconds(warmup, "--warmup")?,
        stop: match calls {
            Some(calls) => Stop::Calls(calls),
            None => Stop::After(seconds(duration, "--duration")?),
        },
        text_len: args.parsed("--text-len", 100)?,
        timeout: seconds(args.parsed("--timeout", default_timeout)?, "--timeout")?,
        threads: args.parsed(
            "--threads",
            std::thread::available_parallelism().map_or(1, usize::from),
        )?,
        command: Vec::new(),
    };
    let command = args.finish()?;
    if command.is_empty() {
        return Err(fail!("no server command given (put it after `--`)"));
    }
    Ok(Options { command, ..options })
}

fn main() -> ExitCode {
    let result = options().and_then(|options| {
        let runtime = mcp_bench::runtime::build(Some(options.threads))?;
        runtime.block_on(async {
            tokio::time::timeout(options.timeout, run(&options))
                .await
                .map_err(|_| fail!("run not over within {:?}", options.timeout))?
        })
    });
    match result.and_then(|report| Ok(serde_json::to_string(&report)?)) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("sdk-client-driver: {e}");
            ExitCode::FAILURE
        }
    }
}

fn client() -> Client {
    Client::builder(Implementation::new(
        "mcp-bench-sdk-client",
        env!("CARGO_PKG_VERSION"),
    ))
    .max_concurrent_requests(driver::MAX_INFLIGHT)
    .build()
}

async fn run(options: &Options) -> Result<Report> {
    let call = Arc::new(EchoCall::new(Protocol::Session, options.text_len));
    if options.stdio {
        let Some((program, args)) = options.command.split_first() else {
            return Err(fail!("no server command given"));
        };
        let (connection, child) = ServerCommand::new(program)
            .args(args)
            .stderr(StderrMode::Inherit)
            .spawn()?;
        let pid = child.id();
        let session = client().connect(connection).await?;
        let recorder = load(&session, &call, options).await?;
        let memory = pid.and_then(|pid| procfs::memory(pid).ok());
        session.close().await;
        let _ = child.shutdown().await;
        Ok(report("stdio", options, recorder, memory))
    } else {
        let addr = driver::free_local_addr()?;
        let server = ServerProcess::spawn(&driver::substitute(&options.command, addr), false)?;
        let wait = || http::wait_listening(addr, &server, Duration::from_secs(10));
        // Blocking: on the single-threaded runtime nothing else runs yet.
        match tokio::runtime::Handle::current().runtime_flavor() {
            tokio::runtime::RuntimeFlavor::CurrentThread => wait(),
            _ => tokio::task::block_in_place(wait),
        }?;
        let transport = StreamableHttpClient::builder(format!("http://{addr}/mcp"))
            .max_in_flight(options.inflight)
            .build()?;
        let (connection, handle) = transport.connect().await?;
        let session = client().connect(connection).await?;
        let recorder = load(&session, &call, options).await?;
        let memory = server.memory();
        session.close().await;
        handle.close().await;
        server.check_running()?;
        Ok(report("http", options, recorder, memory))
    }
}

fn report(
    transport: &str,
    options: &Options,
    recorder: Recorder,
    memory: Option<procfs::Memory>,
) -> Report {
    Report::Throughput(ThroughputReport::new(
        transport,
        Protocol::Session,
        options.inflight,
        recorder.summary(),
        memory,
    ))
}

/// `inflight` tasks, each calling `echo` back to back on the shared session.
async fn load(
    session: &ClientSession,
    call: &Arc<EchoCall>,
    options: &Options,
) -> Result<Recorder> {
    let schedule = Arc::new(Schedule::new(options.warmup, options.stop));
    let tasks: Vec<_> = (0..options.inflight)
        .map(|_| {
            let session = session.clone();
            let call = Arc::clone(call);
            let schedule = Arc::clone(&schedule);
            tokio::spawn(async move {
                let mut recorder = Recorder::new(schedule.measure_start(), DEFAULT_MAX_SAMPLES);
                let arguments = serde_json::json!({ "text": call.text() });
                while let Some(sent) = schedule.next() {
                    let result = session.call_tool("echo", &arguments).await;
                    let done = Instant::now();
                    let ok = result.is_ok_and(|result| {
                        result.is_error != Some(true)
                            && matches!(
                                result.content.as_slice(),
                                [ContentBlock::Text(text)] if text.text == call.text()
                            )
                    });
                    recorder.record(sent, done, ok);
                }
                recorder
            })
        })
        .collect();
    let mut total = Recorder::new(schedule.measure_start(), DEFAULT_MAX_SAMPLES);
    for task in tasks {
        total.merge(task.await.map_err(|e| fail!("load task: {e}"))?);
    }
    Ok(total)
}
