//! The `mcp` command.
//!
//! Today it describes the protocol this SDK speaks, straight from the generated tables of
//! `mcp-types`: the supported revisions and, per revision, every method with its direction and
//! its params and result types. The client commands (`list`, `call`, `read`, `prompt`, `serve`,
//! `proxy`) are tracked in the CLI issue.

use std::io::{self, Write};
use std::process::ExitCode;

use mcp_types::ProtocolVersion;
use mcp_types::methods::{self, MethodKind, Sender};

const USAGE: &str = "\
usage: mcp <command>

commands:
  revisions                 the protocol revisions this SDK supports, oldest first
  methods [--revision REV]  every method (of one revision, with --revision), its sender and types
  help                      this text
";

/// Exit code for a usage error.
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut out = io::stdout().lock();
    let result = match args.first().map(String::as_str) {
        None => write_revisions(&mut out).and_then(|()| write_methods(&mut out, None)),
        Some("revisions") if args.len() == 1 => write_revisions(&mut out),
        Some("methods") => match parse_revision_flag(&args[1..]) {
            Ok(rev) => write_methods(&mut out, rev),
            Err(msg) => return usage_error(&msg),
        },
        Some("help" | "-h" | "--help") => out.write_all(USAGE.as_bytes()),
        Some(other) => return usage_error(&format!("unknown command or argument `{other}`")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`mcp methods | head`) is not an error worth reporting.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("mcp: {msg}\n\n{USAGE}");
    ExitCode::from(EXIT_USAGE)
}

fn parse_revision_flag(args: &[String]) -> Result<Option<ProtocolVersion>, String> {
    match args {
        [] => Ok(None),
        [flag, value] if flag == "--revision" => value
            .parse::<ProtocolVersion>()
            .map(Some)
            .map_err(|e| e.to_string()),
        [flag] if flag == "--revision" => Err("--revision needs a value".into()),
        [other, ..] => Err(format!("unexpected argument `{other}`")),
    }
}

fn write_revisions(out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "revision    era        methods")?;
    for &rev in ProtocolVersion::ALL {
        let era = match rev.era() {
            mcp_types::Era::Session => "session",
            mcp_types::Era::Stateless => "stateless",
        };
        let count = methods::for_revision(rev).count();
        writeln!(out, "{:<11} {:<10} {count}", rev.as_str(), era)?;
    }
    writeln!(out)
}

fn write_methods(out: &mut impl Write, rev: Option<ProtocolVersion>) -> io::Result<()> {
    let rows: Vec<[String; 5]> = methods::all()
        .iter()
        .filter(|m| rev.is_none_or(|r| m.available_in(r)))
        .map(|m| {
            let kind = match m.kind {
                MethodKind::Request => "request",
                MethodKind::Notification => "notification",
            };
            let sender = match m.sender {
                Sender::Client => "client",
                Sender::Server => "server",
                Sender::Both => "both",
            };
            [
                m.name.to_owned(),
                format!("{kind} from {sender}"),
                m.params_type.to_owned(),
                m.result_type.unwrap_or("-").to_owned(),
                revision_span(m.revisions),
            ]
        })
        .collect();
    let header = ["method", "kind", "params", "result", "revisions"];
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |out: &mut dyn Write, cells: &[&str]| -> io::Result<()> {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<w$}  "));
            }
        }
        writeln!(out, "{}", text.trim_end())
    };
    line(out, &header)?;
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        line(out, &cells)?;
    }
    Ok(())
}

/// `2025-03-26 ..= 2026-07-28`, or a comma list when the revisions are not contiguous.
fn revision_span(revs: &[ProtocolVersion]) -> String {
    let (Some(first), Some(last)) = (revs.first(), revs.last()) else {
        return String::new();
    };
    let contiguous = last.index() - first.index() + 1 == revs.len();
    if revs.len() == 1 {
        first.as_str().to_owned()
    } else if contiguous {
        format!("{} ..= {}", first.as_str(), last.as_str())
    } else {
        revs.iter()
            .map(|r| r.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_name_the_revisions() {
        use ProtocolVersion::*;
        assert_eq!(revision_span(&[V2025_11_25]), "2025-11-25");
        assert_eq!(
            revision_span(&[V2025_06_18, V2025_11_25, V2026_07_28]),
            "2025-06-18 ..= 2026-07-28"
        );
        assert_eq!(
            revision_span(&[V2024_11_05, V2026_07_28]),
            "2024-11-05, 2026-07-28"
        );
    }

    #[test]
    fn method_table_follows_the_revision_filter() {
        let mut all = Vec::new();
        write_methods(&mut all, None).unwrap();
        let all = String::from_utf8(all).unwrap();
        assert!(all.contains("initialize"));
        assert!(all.contains("server/discover"));

        let mut stateless = Vec::new();
        write_methods(&mut stateless, Some(ProtocolVersion::V2026_07_28)).unwrap();
        let stateless = String::from_utf8(stateless).unwrap();
        assert!(stateless.contains("server/discover"));
        assert!(
            !stateless
                .lines()
                .any(|l| l.split_whitespace().next() == Some("initialize")),
            "2026-07-28 has no initialize"
        );
    }

    #[test]
    fn revision_flag_is_validated() {
        assert_eq!(parse_revision_flag(&[]).unwrap(), None);
        let ok = ["--revision".to_owned(), "2025-06-18".to_owned()];
        assert_eq!(
            parse_revision_flag(&ok).unwrap(),
            Some(ProtocolVersion::V2025_06_18)
        );
        let bad = ["--revision".to_owned(), "1999-01-01".to_owned()];
        assert!(parse_revision_flag(&bad).is_err());
    }
}
