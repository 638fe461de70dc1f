//! Writing results: aligned tables, content blocks as text, JSON.

use std::io::{self, IsTerminal, Write};

use base64::Engine as _;
use serde::Serialize;
use serde_json::Value;

use crate::Fail;

/// Longest cell a text table shows on a terminal; longer ones are cut with `…`. Into a pipe or
/// a file every cell is written whole.
const MAX_CELL: usize = 80;

/// A text table with aligned columns.
#[derive(Debug)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    limit: Option<usize>,
}

impl Table {
    /// A table whose cells are shortened only when stdout is a terminal.
    pub fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
            limit: stdout_is_terminal().then_some(MAX_CELL),
        }
    }

    /// Shortens long cells to `limit` characters.
    #[cfg(test)]
    pub fn limited(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Keeps long cells whole.
    pub fn unlimited(mut self) -> Self {
        self.limit = None;
        self
    }

    /// Adds a row; newlines become spaces and long cells are shortened.
    pub fn row(&mut self, cells: Vec<String>) {
        let limit = self.limit;
        self.rows.push(
            cells
                .into_iter()
                .map(|cell| one_line(&cell, limit))
                .collect(),
        );
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn render(&self) -> String {
        let columns = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| width(h)).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(width(cell));
            }
        }
        let mut text = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate().take(columns) {
                line.push_str(cell);
                if i + 1 < columns {
                    let pad = widths[i] - width(cell) + 2;
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            text.push_str(line.trim_end());
            text.push('\n');
        }
        text
    }
}

fn width(text: &str) -> usize {
    text.chars().count()
}

fn one_line(text: &str, limit: Option<usize>) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.trim();
    if let Some(limit) = limit.filter(|l| width(flat) > *l) {
        let cut: String = flat.chars().take(limit.saturating_sub(1)).collect();
        format!("{}…", cut.trim_end())
    } else {
        flat.to_owned()
    }
}

/// The first line of a description.
pub fn first_line(text: Option<&str>) -> String {
    text.and_then(|t| t.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or_default()
        .to_owned()
}

/// Writes to stdout; a closed pipe (`mcp list | head`) is not an error.
pub fn print(text: &str) -> Result<(), Fail> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Fail::other(format!("cannot write the output: {e}"))),
    }
}

/// Writes raw bytes to stdout.
pub fn print_bytes(bytes: &[u8]) -> Result<(), Fail> {
    let mut out = io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Fail::other(format!("cannot write the output: {e}"))),
    }
}

/// Pretty JSON and a newline on stdout.
pub fn print_json(value: &impl Serialize) -> Result<(), Fail> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| Fail::other(format!("cannot encode the result: {e}")))?;
    print(&format!("{text}\n"))
}

/// Makes sure text ends with a newline.
pub fn line(text: &str) -> String {
    if text.is_empty() || text.ends_with('\n') {
        text.to_owned()
    } else {
        format!("{text}\n")
    }
}

/// Decoded size of base64 data, for summaries.
fn decoded_len(data: &str) -> usize {
    let data = data.trim_end_matches('=');
    data.len() * 3 / 4
}

/// A content block (`text`, `image`, `audio`, `resource_link`, `resource`) as text: text as it
/// is, everything else as a one-line summary in brackets.
pub fn content_block(block: &Value) -> String {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("?");
    match kind {
        "text" => line(
            block
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        ),
        "image" | "audio" => {
            let mime = block.get("mimeType").and_then(Value::as_str).unwrap_or("?");
            let size = block
                .get("data")
                .and_then(Value::as_str)
                .map_or(0, decoded_len);
            format!("[{kind} {mime}, {size} bytes]\n")
        }
        "resource_link" => {
            let uri = block.get("uri").and_then(Value::as_str).unwrap_or("?");
            match block.get("name").and_then(Value::as_str) {
                Some(name) => format!("[link {uri} ({name})]\n"),
                None => format!("[link {uri}]\n"),
            }
        }
        "resource" => match block.get("resource") {
            Some(resource) => resource_contents(resource, false),
            None => "[resource]\n".to_owned(),
        },
        other => format!("[{other} content]\n"),
    }
}

/// One entry of a `resources/read` result (or an embedded resource): text as it is, a blob as
/// a summary (its bytes go to stdout only through [`blob_bytes`]).
pub fn resource_contents(contents: &Value, bare: bool) -> String {
    let uri = contents.get("uri").and_then(Value::as_str).unwrap_or("?");
    let mime = contents.get("mimeType").and_then(Value::as_str);
    if let Some(text) = contents.get("text").and_then(Value::as_str) {
        if bare {
            return line(text);
        }
        return format!("[resource {uri}]\n{}", line(text));
    }
    let size = contents
        .get("blob")
        .and_then(Value::as_str)
        .map_or(0, decoded_len);
    format!(
        "[resource {uri}{}, {size} bytes]\n",
        mime.map(|m| format!(" {m}")).unwrap_or_default()
    )
}

/// The decoded bytes of a blob entry, if it is one.
pub fn blob_bytes(contents: &Value) -> Option<Result<Vec<u8>, Fail>> {
    let blob = contents.get("blob").and_then(Value::as_str)?;
    Some(
        base64::engine::general_purpose::STANDARD
            .decode(blob)
            .map_err(|e| Fail::other(format!("the server sent invalid base64: {e}"))),
    )
}

pub fn stdout_is_terminal() -> bool {
    io::stdout().is_terminal()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tables_align_and_shorten() {
        let mut table = Table::new(&["NAME", "DESCRIPTION"]).limited(MAX_CELL);
        table.row(vec!["echo".into(), "Echo the text back".into()]);
        table.row(vec!["countdown".into(), "line one\nline two".into()]);
        table.row(vec!["long".into(), "x".repeat(200)]);
        let text = table.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "NAME       DESCRIPTION");
        assert_eq!(lines[1], "echo       Echo the text back");
        assert_eq!(lines[2], "countdown  line one line two");
        assert_eq!(lines[3].chars().count(), 11 + MAX_CELL);
        assert!(lines[3].ends_with('…'));
    }

    #[test]
    fn content_blocks_render_as_text() {
        assert_eq!(
            content_block(&json!({"type": "text", "text": "hi"})),
            "hi\n"
        );
        assert_eq!(
            content_block(&json!({"type": "image", "mimeType": "image/png", "data": "AAAA"})),
            "[image image/png, 3 bytes]\n"
        );
        assert_eq!(
            content_block(&json!({"type": "resource_link", "uri": "a://b", "name": "b"})),
            "[link a://b (b)]\n"
        );
        assert_eq!(
            content_block(&json!({"type": "resource", "resource": {"uri": "a://b", "text": "x"}})),
            "[resource a://b]\nx\n"
        );
        assert_eq!(
            resource_contents(
                &json!({"uri": "a://b", "blob": "AAAA", "mimeType": "x/y"}),
                true
            ),
            "[resource a://b x/y, 3 bytes]\n"
        );
    }
}
