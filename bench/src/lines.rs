//! Bounded line reading for newline-delimited JSON-RPC.

use std::io::{self, BufRead};

/// What [`read_line`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    /// A line (without its `\n` or `\r\n`) is in the buffer.
    Line,
    /// A line longer than the limit was skipped up to its end; the buffer is empty.
    TooLong,
    /// End of input; the buffer is empty.
    Eof,
}

/// Reads the next line into `buf` (cleared first), never holding more than `max` bytes of it.
/// A final line without a newline counts as a line.
///
/// ```
/// use mcp_bench::lines::{read_line, Line};
///
/// let mut input: &[u8] = b"short\nmuch too long\nok\r\nlast";
/// let mut buf = Vec::new();
/// assert_eq!(read_line(&mut input, &mut buf, 8).unwrap(), Line::Line);
/// assert_eq!(buf, b"short");
/// assert_eq!(read_line(&mut input, &mut buf, 8).unwrap(), Line::TooLong);
/// assert_eq!(read_line(&mut input, &mut buf, 8).unwrap(), Line::Line);
/// assert_eq!(buf, b"ok");
/// assert_eq!(read_line(&mut input, &mut buf, 8).unwrap(), Line::Line);
/// assert_eq!(buf, b"last");
/// assert_eq!(read_line(&mut input, &mut buf, 8).unwrap(), Line::Eof);
/// ```
pub fn read_line<R: BufRead + ?Sized>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<Line> {
    buf.clear();
    let mut overflow = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(if overflow {
                Line::TooLong
            } else if buf.is_empty() {
                Line::Eof
            } else {
                Line::Line
            });
        }
        // The driver's own start is not measured, so its search may detect the CPU's features.
        #[allow(clippy::disallowed_methods)]
        let (chunk, used, complete) = match memchr::memchr(b'\n', available) {
            Some(at) => (&available[..at], at + 1, true),
            None => (available, available.len(), false),
        };
        if !overflow {
            if buf.len() + chunk.len() > max {
                overflow = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        reader.consume(used);
        if complete {
            if overflow {
                return Ok(Line::TooLong);
            }
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(Line::Line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    #[test]
    fn lines_split_across_reads() {
        // A one-byte buffer makes every line span many reads.
        let data: &[u8] = b"{\"a\":1}\n\n{\"b\":2}\n";
        let mut reader = BufReader::with_capacity(1, data);
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut reader, &mut buf, 100).unwrap(), Line::Line);
        assert_eq!(buf, b"{\"a\":1}");
        assert_eq!(read_line(&mut reader, &mut buf, 100).unwrap(), Line::Line);
        assert!(buf.is_empty());
        assert_eq!(read_line(&mut reader, &mut buf, 100).unwrap(), Line::Line);
        assert_eq!(buf, b"{\"b\":2}");
        assert_eq!(read_line(&mut reader, &mut buf, 100).unwrap(), Line::Eof);
    }

    #[test]
    fn overlong_line_at_eof() {
        let mut input: &[u8] = b"0123456789";
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut input, &mut buf, 4).unwrap(), Line::TooLong);
        assert!(buf.is_empty());
        assert_eq!(read_line(&mut input, &mut buf, 4).unwrap(), Line::Eof);
    }
}
