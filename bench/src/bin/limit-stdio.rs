//! The stdio "limit" echo server: blocking reads through a `BufReader`, `serde_json` into a small
//! borrowed struct, answers through a `BufWriter` that is flushed whenever no more input is
//! buffered (so pipelined requests are answered in one `write`).
//!
//! Usage: `limit-stdio [--max-line BYTES]`

use std::io::{BufReader, BufWriter, Write};
use std::process::ExitCode;

use mcp_bench::args::Args;
use mcp_bench::echo::{EchoServer, Outcome, Transport};
use mcp_bench::lines::{Line, read_line};

const BUFFER: usize = 64 * 1024;

fn main() -> ExitCode {
    let mut args = Args::from_env();
    let parsed = args.parsed("--max-line", 4usize << 20);
    let max_line = match parsed.and_then(|max_line| args.finish().map(|_| max_line)) {
        Ok(max_line) => max_line,
        Err(e) => return e.exit("limit-stdio"),
    };
    match serve(max_line) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("limit-stdio: {e}");
            ExitCode::FAILURE
        }
    }
}

fn serve(max_line: usize) -> std::io::Result<()> {
    let server = EchoServer::new();
    // The reader's buffer is larger than stdin's own, so reads bypass that one and
    // `reader.buffer()` tells exactly what is still pending.
    let mut reader = BufReader::with_capacity(BUFFER, std::io::stdin().lock());
    let mut writer = BufWriter::with_capacity(BUFFER, std::io::stdout().lock());
    let mut line = Vec::new();
    let mut out = Vec::with_capacity(1024);
    loop {
        match read_line(&mut reader, &mut line, max_line)? {
            Line::Eof => break,
            Line::TooLong => {
                let message = format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{{\"code\":-32600,\"message\":\"message exceeds {max_line} bytes\"}}}}\n"
                );
                writer.write_all(message.as_bytes())?;
            }
            Line::Line if line.trim_ascii().is_empty() => {}
            Line::Line => {
                out.clear();
                if let Outcome::Reply { .. } = server.handle(&line, Transport::Stdio, &mut out) {
                    out.push(b'\n');
                    writer.write_all(&out)?;
                }
            }
        }
        if reader.buffer().is_empty() {
            writer.flush()?;
        }
    }
    writer.flush()
}
