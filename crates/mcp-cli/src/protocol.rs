//! `mcp revisions` and `mcp methods`: the protocol as this SDK knows it, from the generated
//! tables of `mcp-types`.

use mcp_types::methods::{self, MethodKind, Sender};
use mcp_types::{Era, ProtocolVersion};

use crate::output::{Table, print};
use crate::{Exit, Fail};

pub fn revisions() -> Result<Exit, Fail> {
    print(&revisions_table())?;
    Ok(Exit::Ok)
}

pub fn methods(revision: Option<ProtocolVersion>) -> Result<Exit, Fail> {
    print(&methods_table(revision))?;
    Ok(Exit::Ok)
}

fn revisions_table() -> String {
    let mut table = Table::new(&["REVISION", "ERA", "METHODS"]);
    for &rev in ProtocolVersion::ALL {
        let era = match rev.era() {
            Era::Session => "session",
            Era::Stateless => "stateless",
        };
        table.row(vec![
            rev.as_str().to_owned(),
            era.to_owned(),
            methods::for_revision(rev).count().to_string(),
        ]);
    }
    table.render()
}

fn methods_table(revision: Option<ProtocolVersion>) -> String {
    let mut table = Table::new(&["METHOD", "KIND", "PARAMS", "RESULT", "REVISIONS"]);
    for m in methods::all()
        .iter()
        .filter(|m| revision.is_none_or(|r| m.available_in(r)))
    {
        let kind = match m.kind {
            MethodKind::Request => "request",
            MethodKind::Notification => "notification",
        };
        let sender = match m.sender {
            Sender::Client => "client",
            Sender::Server => "server",
            Sender::Both => "both",
        };
        table.row(vec![
            m.name.to_owned(),
            format!("{kind} from {sender}"),
            m.params_type.to_owned(),
            m.result_type.unwrap_or("-").to_owned(),
            revision_span(m.revisions),
        ]);
    }
    table.render()
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
        let all = methods_table(None);
        assert!(all.contains("initialize"));
        assert!(all.contains("server/discover"));

        let stateless = methods_table(Some(ProtocolVersion::V2026_07_28));
        assert!(stateless.contains("server/discover"));
        assert!(
            !stateless
                .lines()
                .any(|l| l.split_whitespace().next() == Some("initialize")),
            "2026-07-28 has no initialize"
        );
    }

    #[test]
    fn revisions_are_listed_with_their_era() {
        let table = revisions_table();
        assert!(table.starts_with("REVISION"));
        assert!(table.contains("2024-11-05  session"));
        assert!(table.contains("2026-07-28  stateless"));
    }
}
