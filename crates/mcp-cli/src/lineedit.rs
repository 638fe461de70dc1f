//! A small line editor for `mcp shell`: editing keys, history, and tab completion, on a
//! terminal in raw mode (through rustix's termios). Lines that other tasks print while the
//! user types (log messages, resource updates) are written above the line being edited, which
//! is then drawn again.
//!
//! Without a terminal on stdin the editor reads plain lines, so a shell session can be piped.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

/// Most history entries kept.
const HISTORY: usize = 500;

/// Finds completions: given the text before the cursor, the byte offset where the word being
/// completed starts and the candidates for it.
pub type Completer = Arc<dyn Fn(&str) -> (usize, Vec<String>) + Send + Sync>;

/// What reading a line gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Input {
    /// A line (without its ending).
    Line(String),
    /// End of input (Ctrl-D on an empty line, or the end of a pipe).
    Eof,
    /// Ctrl-C on an empty line.
    Interrupted,
}

#[derive(Default)]
struct ScreenState {
    /// A line is being edited (and has to be drawn again after other output).
    active: bool,
    prompt: String,
    buffer: Vec<char>,
    cursor: usize,
}

/// The terminal's stderr, shared by the editor and everything else that prints to it.
#[derive(Default)]
pub struct Screen {
    state: Mutex<ScreenState>,
}

impl Screen {
    fn state(&self) -> std::sync::MutexGuard<'_, ScreenState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Prints `text` on stderr above the line being edited, if any.
    pub fn print(&self, text: &str) {
        let state = self.state();
        let mut err = std::io::stderr().lock();
        if state.active {
            let _ = err.write_all(b"\r\x1b[K");
            // Raw mode: a newline does not return the carriage.
            let _ = err.write_all(text.replace('\n', "\r\n").as_bytes());
            if text.ends_with('\n') {
                let _ = err.write_all(render(&state).as_bytes());
            }
        } else {
            let _ = err.write_all(text.as_bytes());
        }
        let _ = err.flush();
    }

    fn draw(&self) {
        let state = self.state();
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(render(&state).as_bytes());
        let _ = err.flush();
    }
}

/// The prompt and the buffer, with the cursor put back in place.
fn render(state: &ScreenState) -> String {
    let line: String = state.buffer.iter().collect();
    let mut text = format!("\r\x1b[K{}{line}", state.prompt);
    let back = state.buffer.len() - state.cursor;
    if back > 0 {
        text.push_str(&format!("\x1b[{back}D"));
    }
    text
}

/// A writer for the session's messages that goes through the [`Screen`].
pub struct ScreenWriter(pub Arc<Screen>);

impl Write for ScreenWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.print(&String::from_utf8_lossy(buf));
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The terminal in raw mode while this lives.
#[cfg(unix)]
struct RawMode {
    saved: rustix::termios::Termios,
}

#[cfg(unix)]
impl RawMode {
    fn enter() -> Option<RawMode> {
        let stdin = std::io::stdin();
        let saved = rustix::termios::tcgetattr(&stdin).ok()?;
        let mut raw = saved.clone();
        raw.make_raw();
        rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &raw).ok()?;
        Some(RawMode { saved })
    }
}

#[cfg(unix)]
impl Drop for RawMode {
    fn drop(&mut self) {
        let stdin = std::io::stdin();
        let _ =
            rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &self.saved);
    }
}

/// No raw mode here: the editor reads plain lines.
#[cfg(not(unix))]
struct RawMode;

#[cfg(not(unix))]
impl RawMode {
    fn enter() -> Option<RawMode> {
        None
    }
}

/// History and the file it is kept in.
pub struct Editor {
    history: Vec<String>,
    file: Option<PathBuf>,
    screen: Arc<Screen>,
}

impl Editor {
    /// An editor whose history is kept in `file` (read now, appended to as lines are entered).
    pub fn new(file: Option<PathBuf>, screen: Arc<Screen>) -> Editor {
        let history = file
            .as_ref()
            .and_then(|f| std::fs::read_to_string(f).ok())
            .map(|text| {
                let lines: Vec<String> = text
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(str::to_owned)
                    .collect();
                lines[lines.len().saturating_sub(HISTORY)..].to_vec()
            })
            .unwrap_or_default();
        Editor {
            history,
            file,
            screen,
        }
    }

    fn remember(&mut self, line: &str) {
        if line.trim().is_empty() || self.history.last().is_some_and(|l| l == line) {
            return;
        }
        self.history.push(line.to_owned());
        if self.history.len() > HISTORY {
            self.history.remove(0);
        }
        if let Some(file) = &self.file {
            if let Some(dir) = file.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let mut options = std::fs::OpenOptions::new();
            options.create(true).append(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(0o600);
            }
            if let Ok(mut f) = options.open(file) {
                let _ = writeln!(f, "{line}");
            }
        }
    }

    /// Reads one line: edited on a terminal, plain otherwise. Blocking.
    pub fn read_line(&mut self, prompt: &str, completer: &Completer) -> Input {
        if !std::io::stdin().is_terminal() {
            let mut line = String::new();
            return match std::io::stdin().read_line(&mut line) {
                Ok(0) | Err(_) => Input::Eof,
                Ok(_) => {
                    let line = line.trim_end_matches(['\n', '\r']).to_owned();
                    self.remember(&line);
                    Input::Line(line)
                }
            };
        }
        let Some(raw) = RawMode::enter() else {
            // A terminal whose mode cannot be changed: plain lines.
            let mut line = String::new();
            return match std::io::stdin().read_line(&mut line) {
                Ok(0) | Err(_) => Input::Eof,
                Ok(_) => Input::Line(line.trim_end_matches(['\n', '\r']).to_owned()),
            };
        };
        {
            let mut state = self.screen.state();
            *state = ScreenState {
                active: true,
                prompt: prompt.to_owned(),
                buffer: Vec::new(),
                cursor: 0,
            };
        }
        self.screen.draw();
        let result = self.edit(completer);
        {
            let mut state = self.screen.state();
            state.active = false;
        }
        eprint!("\r\n");
        drop(raw);
        if let Input::Line(line) = &result {
            self.remember(line);
        }
        result
    }

    fn edit(&mut self, completer: &Completer) -> Input {
        let mut stdin = std::io::stdin().lock();
        let mut browsing = self.history.len();
        let mut draft: Vec<char> = Vec::new();
        let mut pending: Vec<u8> = Vec::new();
        let mut byte = [0u8; 1];
        loop {
            match stdin.read(&mut byte) {
                Ok(0) | Err(_) => return Input::Eof,
                Ok(_) => {}
            }
            let key = match byte[0] {
                0x1b => {
                    // An escape sequence: ESC [ x, ESC O x, or ESC [ n ~.
                    let mut seq = Vec::new();
                    for _ in 0..4 {
                        if stdin.read(&mut byte).unwrap_or(0) == 0 {
                            break;
                        }
                        seq.push(byte[0]);
                        if byte[0].is_ascii_alphabetic() || byte[0] == b'~' {
                            break;
                        }
                    }
                    match seq.as_slice() {
                        [b'[' | b'O', b'A'] => Key::Up,
                        [b'[' | b'O', b'B'] => Key::Down,
                        [b'[' | b'O', b'C'] => Key::Right,
                        [b'[' | b'O', b'D'] => Key::Left,
                        [b'[' | b'O', b'H'] | [b'[', b'1', b'~'] => Key::Home,
                        [b'[' | b'O', b'F'] | [b'[', b'4', b'~'] => Key::End,
                        [b'[', b'3', b'~'] => Key::Delete,
                        _ => Key::None,
                    }
                }
                b'\r' | b'\n' => Key::Enter,
                b'\t' => Key::Tab,
                0x7f | 0x08 => Key::Backspace,
                0x01 => Key::Home,
                0x05 => Key::End,
                0x02 => Key::Left,
                0x06 => Key::Right,
                0x10 => Key::Up,
                0x0e => Key::Down,
                0x03 => Key::Interrupt,
                0x04 => Key::EndOfInput,
                0x15 => Key::KillLine,
                0x0b => Key::KillToEnd,
                0x17 => Key::KillWord,
                0x0c => Key::Redraw,
                b if b < 0x20 => Key::None,
                b => {
                    pending.push(b);
                    match std::str::from_utf8(&pending) {
                        Ok(text) => {
                            let chars: Vec<char> = text.chars().collect();
                            pending.clear();
                            Key::Insert(chars)
                        }
                        Err(e) if e.error_len().is_none() && pending.len() < 4 => continue,
                        Err(_) => {
                            pending.clear();
                            Key::None
                        }
                    }
                }
            };
            let mut state = self.screen.state();
            match key {
                Key::Enter => return Input::Line(state.buffer.iter().collect()),
                Key::Interrupt => {
                    if state.buffer.is_empty() {
                        return Input::Interrupted;
                    }
                    state.buffer.clear();
                    state.cursor = 0;
                }
                Key::EndOfInput => {
                    if state.buffer.is_empty() {
                        return Input::Eof;
                    }
                    let at = state.cursor;
                    if at < state.buffer.len() {
                        state.buffer.remove(at);
                    }
                }
                Key::Insert(chars) => {
                    for c in chars {
                        let at = state.cursor;
                        state.buffer.insert(at, c);
                        state.cursor += 1;
                    }
                }
                Key::Backspace => {
                    if state.cursor > 0 {
                        state.cursor -= 1;
                        let at = state.cursor;
                        state.buffer.remove(at);
                    }
                }
                Key::Delete => {
                    let at = state.cursor;
                    if at < state.buffer.len() {
                        state.buffer.remove(at);
                    }
                }
                Key::Left => state.cursor = state.cursor.saturating_sub(1),
                Key::Right => state.cursor = (state.cursor + 1).min(state.buffer.len()),
                Key::Home => state.cursor = 0,
                Key::End => state.cursor = state.buffer.len(),
                Key::KillLine => {
                    let at = state.cursor;
                    state.buffer.drain(..at);
                    state.cursor = 0;
                }
                Key::KillToEnd => {
                    let at = state.cursor;
                    state.buffer.truncate(at);
                }
                Key::KillWord => {
                    let mut start = state.cursor;
                    while start > 0 && state.buffer[start - 1] == ' ' {
                        start -= 1;
                    }
                    while start > 0 && state.buffer[start - 1] != ' ' {
                        start -= 1;
                    }
                    let end = state.cursor;
                    state.buffer.drain(start..end);
                    state.cursor = start;
                }
                Key::Up | Key::Down => {
                    if browsing == self.history.len() {
                        draft = state.buffer.clone();
                    }
                    browsing = if key == Key::Up {
                        browsing.saturating_sub(1)
                    } else {
                        (browsing + 1).min(self.history.len())
                    };
                    state.buffer = match self.history.get(browsing) {
                        Some(line) => line.chars().collect(),
                        None => draft.clone(),
                    };
                    state.cursor = state.buffer.len();
                }
                Key::Tab => {
                    let before: String = state.buffer[..state.cursor].iter().collect();
                    let (start, candidates) = completer(&before);
                    let word: String = before.get(start..).unwrap_or_default().to_owned();
                    let candidates: Vec<String> = candidates
                        .into_iter()
                        .filter(|c| c.starts_with(&word))
                        .collect();
                    let common = common_prefix(&candidates);
                    if common.chars().count() > word.chars().count() {
                        let mut insert: Vec<char> = common[word.len()..].chars().collect();
                        if candidates.len() == 1 && !common.ends_with(['=', '/', ':']) {
                            insert.push(' ');
                        }
                        for c in insert {
                            let at = state.cursor;
                            state.buffer.insert(at, c);
                            state.cursor += 1;
                        }
                    } else if candidates.len() > 1 {
                        let list = candidates.join("  ");
                        let mut err = std::io::stderr().lock();
                        let _ = write!(err, "\r\n{list}\r\n");
                    }
                }
                Key::Redraw => {
                    let mut err = std::io::stderr().lock();
                    let _ = err.write_all(b"\x1b[H\x1b[2J");
                }
                Key::None => {}
            }
            let text = render(&state);
            drop(state);
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(text.as_bytes());
            let _ = err.flush();
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Key {
    Insert(Vec<char>),
    Enter,
    Tab,
    Backspace,
    Delete,
    Left,
    Right,
    Home,
    End,
    Up,
    Down,
    Interrupt,
    EndOfInput,
    KillLine,
    KillToEnd,
    KillWord,
    Redraw,
    None,
}

/// The longest prefix all `words` share.
pub fn common_prefix(words: &[String]) -> String {
    let Some(first) = words.first() else {
        return String::new();
    };
    let mut prefix: &str = first;
    for word in &words[1..] {
        while !word.starts_with(prefix) {
            let mut chars = prefix.chars();
            chars.next_back();
            prefix = chars.as_str();
        }
    }
    prefix.to_owned()
}

/// Splits a command line into words: blanks separate, `'…'` and `"…"` quote, `\` escapes.
pub fn split(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' | '"' => {
                in_word = true;
                let mut closed = false;
                for q in chars.by_ref() {
                    if q == c {
                        closed = true;
                        break;
                    }
                    word.push(q);
                }
                if !closed {
                    return Err(format!("unclosed {c}"));
                }
            }
            '\\' => {
                in_word = true;
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            other => {
                in_word = true;
                word.push(other);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_like_a_shell() {
        assert_eq!(
            split(r#"call echo text="hello world" b='x y' c\ d"#).expect("valid"),
            vec!["call", "echo", "text=hello world", "b=x y", "c d"]
        );
        assert!(split("call 'open").is_err());
        assert_eq!(split("  ").expect("valid"), Vec::<String>::new());
    }

    #[test]
    fn completion_extends_to_the_common_prefix() {
        let words = vec![
            "read_file".to_owned(),
            "read_files".to_owned(),
            "read_dir".to_owned(),
        ];
        assert_eq!(common_prefix(&words), "read_");
        assert_eq!(common_prefix(&[]), "");
    }
}
