//! Driving a stdio server: blocking pipe I/O on the driver side (the cheapest way to talk to a
//! pipe), one thread when sequential, a writer and a reader thread when pipelining.

use std::io::{BufReader, Write};
use std::process::{ChildStdin, ChildStdout};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::{LoadOptions, MAX_INFLIGHT, ServerProcess};
use crate::fail;
use crate::lines::{Line, read_line};
use crate::load::{
    ColdStartReport, EchoCall, Protocol, Recorder, Reply, Result, Schedule, ThroughputReport,
};
use crate::procfs::Memory;
use crate::stats::median;

const READ_BUFFER: usize = 64 * 1024;
/// Server lines (notifications, say) skipped while waiting for the `initialize` answer.
const MAX_HANDSHAKE_LINES: usize = 100;

/// The `initialize` request the drivers send (id 0).
pub fn initialize_request(version: &str) -> Vec<u8> {
    let mut line = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": { "name": "mcp-bench-driver", "version": "0.1.0" }
        }
    })
    .to_string()
    .into_bytes();
    line.push(b'\n');
    line
}

/// The `notifications/initialized` line.
pub const INITIALIZED: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

/// Whether `message` is the successful answer to the `initialize` request with id 0.
pub fn is_initialize_answer(message: &[u8]) -> Result<bool> {
    let value: serde_json::Value = serde_json::from_slice(message)?;
    if value.get("method").is_some() || value.get("id") != Some(&serde_json::json!(0)) {
        return Ok(false);
    }
    match value.pointer("/result/protocolVersion") {
        Some(serde_json::Value::String(_)) => Ok(true),
        _ => Err(fail!("initialize failed: {value}")),
    }
}

fn handshake(
    stdin: &mut ChildStdin,
    reader: &mut BufReader<ChildStdout>,
    max_message: usize,
) -> Result<()> {
    stdin.write_all(&initialize_request(Protocol::Session.version()))?;
    let mut line = Vec::new();
    for _ in 0..MAX_HANDSHAKE_LINES {
        match read_line(reader, &mut line, max_message)? {
            Line::Eof => return Err(fail!("server closed stdout during initialize")),
            Line::TooLong => return Err(fail!("initialize answer exceeds {max_message} bytes")),
            Line::Line if line.is_empty() => {}
            Line::Line => {
                if is_initialize_answer(&line)? {
                    stdin.write_all(INITIALIZED)?;
                    return Ok(());
                }
            }
        }
    }
    Err(fail!(
        "no initialize answer within {MAX_HANDSHAKE_LINES} lines"
    ))
}

/// Starts `command` as a stdio server, runs the echo workload against it and reports.
pub fn throughput(command: &[String], options: &LoadOptions) -> Result<ThroughputReport> {
    if options.inflight == 0 || options.inflight > MAX_INFLIGHT {
        return Err(fail!("--inflight must be 1..={MAX_INFLIGHT}"));
    }
    let server = ServerProcess::spawn(command, true)?;
    let watchdog = server.watchdog(options.timeout);
    let (mut stdin, stdout) = server.take_pipes()?;
    let mut reader = BufReader::with_capacity(READ_BUFFER, stdout);
    let call = EchoCall::new(options.protocol, options.text_len);
    let result = (|| {
        if options.protocol == Protocol::Session {
            handshake(&mut stdin, &mut reader, options.max_message)?;
        }
        if options.inflight == 1 {
            sequential(stdin, reader, &call, options, &server)
        } else {
            pipelined(stdin, reader, &call, options, &server)
        }
    })();
    if watchdog.disarm() {
        return Err(fail!(
            "no answer within {:?}: server killed",
            options.timeout
        ));
    }
    let (recorder, memory) = result?;
    server.finish(Duration::from_secs(2));
    Ok(ThroughputReport::new(
        "stdio",
        options.protocol,
        options.inflight,
        recorder.summary(),
        memory,
    ))
}

fn sequential(
    mut stdin: ChildStdin,
    mut reader: BufReader<ChildStdout>,
    call: &EchoCall,
    options: &LoadOptions,
    server: &ServerProcess,
) -> Result<(Recorder, Option<Memory>)> {
    let schedule = Schedule::new(options.warmup, options.stop);
    let mut recorder = Recorder::new(schedule.measure_start(), options.max_samples);
    let mut request = Vec::with_capacity(256 + options.text_len);
    let mut line = Vec::new();
    let mut id: u64 = 1;
    while let Some(sent) = schedule.next() {
        request.clear();
        call.encode(id, &mut request);
        request.push(b'\n');
        stdin.write_all(&request)?;
        loop {
            match read_line(&mut reader, &mut line, options.max_message)? {
                Line::Eof => return Err(fail!("server closed stdout")),
                Line::TooLong => {
                    return Err(fail!(
                        "server sent a line over {} bytes",
                        options.max_message
                    ));
                }
                Line::Line if line.is_empty() => continue,
                Line::Line => {}
            }
            match call.check(&line)? {
                Reply::Message => continue,
                Reply::Response { id: got, ok } => {
                    if got != Some(id) {
                        return Err(fail!("answer id {got:?}, expected {id}"));
                    }
                    recorder.record(sent, Instant::now(), ok);
                    break;
                }
            }
        }
        id += 1;
    }
    let memory = server.memory();
    drop(stdin);
    Ok((recorder, memory))
}

struct Slot {
    id: AtomicU64,
    sent_ns: AtomicU64,
}

const NO_ID: u64 = u64::MAX;

/// Keeps `inflight` requests outstanding: this thread writes (batching whatever slots came back
/// since the last write into one `write`), a reader thread matches answers to slots by id and
/// hands the slots back.
fn pipelined(
    mut stdin: ChildStdin,
    mut reader: BufReader<ChildStdout>,
    call: &EchoCall,
    options: &LoadOptions,
    server: &ServerProcess,
) -> Result<(Recorder, Option<Memory>)> {
    let n = options.inflight;
    let base = Instant::now();
    let slots: Arc<Vec<Slot>> = Arc::new(
        (0..n)
            .map(|_| Slot {
                id: AtomicU64::new(NO_ID),
                sent_ns: AtomicU64::new(0),
            })
            .collect(),
    );
    let (tx, rx) = mpsc::sync_channel::<usize>(n);
    let schedule = Schedule::new(options.warmup, options.stop);
    let measure_start = schedule.measure_start();

    let reader_thread = std::thread::spawn({
        let slots = Arc::clone(&slots);
        let call = call.clone();
        let max_message = options.max_message;
        let max_samples = options.max_samples;
        move || -> Result<Recorder> {
            let mut recorder = Recorder::new(measure_start, max_samples);
            let mut line = Vec::new();
            let mut tx = Some(tx);
            let mut failure = None;
            loop {
                let read = read_line(&mut reader, &mut line, max_message);
                let done = Instant::now();
                match read {
                    Err(e) => return Err(failure.unwrap_or_else(|| e.into())),
                    Ok(Line::Eof) => break,
                    Ok(_) if failure.is_some() => continue, // draining after an error
                    Ok(Line::TooLong) => {
                        failure = Some(fail!("server sent a line over {max_message} bytes"))
                    }
                    Ok(Line::Line) if line.is_empty() => {}
                    Ok(Line::Line) => match answer(&call, &line, &slots, base) {
                        Ok(None) => {}
                        Ok(Some((slot, sent, ok))) => {
                            recorder.record(sent, done, ok);
                            if let Some(tx) = &tx {
                                // The writer is gone only when it stopped early; keep draining.
                                let _ = tx.send(slot);
                            }
                        }
                        Err(e) => failure = Some(e),
                    },
                }
                if failure.is_some() {
                    // Wakes the writer; the server's output is drained until it exits so that it
                    // never blocks on a full pipe.
                    tx = None;
                }
            }
            match failure {
                Some(e) => Err(e),
                None => Ok(recorder),
            }
        }
    });

    let mut free: Vec<usize> = (0..n).rev().collect();
    let mut outstanding = 0usize;
    let mut sending = true;
    let mut seq: u64 = 1;
    let mut batch = Vec::with_capacity(n * (256 + options.text_len));
    let mut write_error = None;
    loop {
        if sending {
            batch.clear();
            while let Some(&slot) = free.last() {
                let Some(sent) = schedule.next() else {
                    sending = false;
                    break;
                };
                free.pop();
                let id = seq * MAX_INFLIGHT as u64 + slot as u64;
                seq += 1;
                let Some(entry) = slots.get(slot) else {
                    continue;
                };
                entry.id.store(id, Ordering::SeqCst);
                let nanos = u64::try_from(sent.duration_since(base).as_nanos()).unwrap_or(u64::MAX);
                entry.sent_ns.store(nanos, Ordering::SeqCst);
                call.encode(id, &mut batch);
                batch.push(b'\n');
                outstanding += 1;
            }
            if !batch.is_empty()
                && let Err(e) = stdin.write_all(&batch)
            {
                write_error = Some(e);
                break;
            }
        }
        if outstanding == 0 {
            break;
        }
        match rx.recv() {
            Ok(slot) => {
                free.push(slot);
                outstanding -= 1;
            }
            Err(_) => break, // the reader stopped: its error is reported below
        }
        while let Ok(slot) = rx.try_recv() {
            free.push(slot);
            outstanding -= 1;
        }
    }
    let memory = server.memory();
    drop(stdin);
    let recorder = reader_thread
        .join()
        .map_err(|_| fail!("stdio reader thread panicked"))??;
    if let Some(e) = write_error {
        return Err(fail!("writing to the server: {e}"));
    }
    Ok((recorder, memory))
}

/// Matches an answer to its slot: `(slot, send time, ok)`, or `None` for a server message.
fn answer(
    call: &EchoCall,
    line: &[u8],
    slots: &[Slot],
    base: Instant,
) -> Result<Option<(usize, Instant, bool)>> {
    let (id, ok) = match call.check(line)? {
        Reply::Message => return Ok(None),
        Reply::Response { id: Some(id), ok } => (id, ok),
        Reply::Response { id: None, .. } => {
            return Err(fail!(
                "answer without a numeric id: {}",
                String::from_utf8_lossy(line)
            ));
        }
    };
    let slot = usize::try_from(id % MAX_INFLIGHT as u64).unwrap_or(usize::MAX);
    let entry = slots
        .get(slot)
        .ok_or_else(|| fail!("answer for unknown id {id}"))?;
    if entry
        .id
        .compare_exchange(id, NO_ID, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        return Err(fail!("answer for an id not in flight: {id}"));
    }
    let sent = base + Duration::from_nanos(entry.sent_ns.load(Ordering::SeqCst));
    Ok(Some((slot, sent, ok)))
}

/// Spawn to `initialize` answer: one unmeasured run (so the binary is in the page cache), then
/// the median of `samples` runs.
/// Each start must answer within `timeout`.
pub fn cold_start(
    command: &[String],
    samples: usize,
    max_message: usize,
    timeout: Duration,
) -> Result<ColdStartReport> {
    if samples == 0 {
        return Err(fail!("--cold-start needs at least one sample"));
    }
    let mut times = Vec::with_capacity(samples);
    for round in 0..=samples {
        let started = Instant::now();
        let server = ServerProcess::spawn(command, true)?;
        let watchdog = server.watchdog(timeout);
        let (mut stdin, stdout) = server.take_pipes()?;
        let mut reader = BufReader::with_capacity(READ_BUFFER, stdout);
        stdin.write_all(&initialize_request(Protocol::Session.version()))?;
        let mut line = Vec::new();
        let mut answered = false;
        for _ in 0..MAX_HANDSHAKE_LINES {
            match read_line(&mut reader, &mut line, max_message)? {
                Line::Eof => return Err(fail!("server closed stdout during initialize")),
                Line::TooLong => {
                    return Err(fail!("initialize answer exceeds {max_message} bytes"));
                }
                Line::Line if line.is_empty() => {}
                Line::Line => {
                    if is_initialize_answer(&line)? {
                        answered = true;
                        break;
                    }
                }
            }
        }
        let elapsed = started.elapsed();
        if watchdog.disarm() {
            return Err(fail!(
                "no initialize answer within {timeout:?}: server killed"
            ));
        }
        if !answered {
            return Err(fail!("no initialize answer"));
        }
        drop(stdin);
        server.finish(Duration::from_secs(2));
        if round > 0 {
            times.push(elapsed.as_secs_f64() * 1000.0);
        }
    }
    Ok(ColdStartReport {
        median_ms: median(&times).unwrap_or(0.0),
        min_ms: times.iter().copied().fold(f64::INFINITY, f64::min),
        samples,
    })
}
