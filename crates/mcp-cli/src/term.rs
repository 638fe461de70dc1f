//! The terminal side of a session: progress lines and log messages on stderr, and the questions a
//! server asks (elicitation, sampling) answered at the prompt.
//!
//! Questions need a terminal on stdin; without one (a pipe, a file, CI) they are declined, as
//! they are when the user ends the input (Ctrl-D).

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mcp_client::elicit::{FieldKind, FormField, FormSchema};
use mcp_client::{
    ElicitationAnswer, ElicitationRequest, HandlerError, Progress, ServerNotification,
};
use mcp_types::{
    CreateMessageRequestParams, CreateMessageResult, LoggingMessageNotificationParams,
};
use serde_json::{Map, Number, Value, json};

/// Times a form is offered again after an answer that does not match it.
const FORM_ATTEMPTS: usize = 3;
/// Longest line read at the prompt.
const MAX_ANSWER: usize = 64 * 1024;

/// Where input comes from; a trait so tests can script the answers.
pub trait Input: Send + Sync + 'static {
    /// Whether questions can be asked at all.
    fn interactive(&self) -> bool;
    /// The next line without its line ending, or `None` at end of input.
    fn read_line(&self) -> impl std::future::Future<Output = Option<String>> + Send;
}

/// This process's stdin.
pub struct Stdin;

impl Input for Stdin {
    fn interactive(&self) -> bool {
        std::io::stdin().is_terminal()
    }

    async fn read_line(&self) -> Option<String> {
        let line = tokio::task::spawn_blocking(|| {
            use std::io::{BufRead, Read};
            let mut line = String::new();
            let stdin = std::io::stdin();
            let mut handle = stdin.lock().take(MAX_ANSWER as u64);
            match handle.read_line(&mut line) {
                Ok(0) | Err(_) => None,
                Ok(_) => Some(line),
            }
        })
        .await
        .ok()
        .flatten()?;
        Some(line.trim_end_matches(['\n', '\r']).to_owned())
    }
}

/// Shared by the session's callbacks and handlers.
pub struct Term<I = Stdin> {
    input: I,
    stderr_tty: bool,
    /// `--progress`: show progress even when stderr is not a terminal.
    force_progress: bool,
    progress_visible: AtomicBool,
    /// One question at a time.
    asking: tokio::sync::Mutex<()>,
    /// What the prompts write (stderr, or a buffer in tests).
    out: std::sync::Mutex<Box<dyn Write + Send>>,
    /// Show list changes and resource updates as they arrive (`mcp shell`).
    show_changes: AtomicBool,
    /// How many list changes arrived, so a cache can tell it is stale.
    changes: std::sync::atomic::AtomicU64,
}

impl Term<Stdin> {
    /// The terminal of this process; `force_progress` shows progress even off a terminal.
    pub fn new(force_progress: bool) -> Arc<Self> {
        Arc::new(Term {
            input: Stdin,
            stderr_tty: std::io::stderr().is_terminal(),
            force_progress,
            progress_visible: AtomicBool::new(false),
            asking: tokio::sync::Mutex::new(()),
            out: std::sync::Mutex::new(Box::new(std::io::stderr())),
            show_changes: AtomicBool::new(false),
            changes: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The terminal of `mcp shell`: messages through `out`, changes shown as they arrive.
    pub fn for_shell(out: Box<dyn Write + Send>) -> Arc<Self> {
        Arc::new(Term {
            input: Stdin,
            stderr_tty: std::io::stderr().is_terminal(),
            force_progress: false,
            progress_visible: AtomicBool::new(false),
            asking: tokio::sync::Mutex::new(()),
            out: std::sync::Mutex::new(out),
            show_changes: AtomicBool::new(true),
            changes: std::sync::atomic::AtomicU64::new(0),
        })
    }
}

impl<I: Input> Term<I> {
    fn write(&self, text: &str) {
        let mut out = self
            .out
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }

    /// Shows progress as one line that updates in place (only on a terminal); with
    /// `--progress` off a terminal, as one line per update.
    pub fn progress(&self, progress: &Progress) {
        if !self.stderr_tty && !self.force_progress {
            return;
        }
        let mut text = match progress.total {
            Some(total) if total > 0.0 => format!(
                "progress {}/{} ({:.0}%)",
                number(progress.progress),
                number(total),
                100.0 * progress.progress / total
            ),
            _ => format!("progress {}", number(progress.progress)),
        };
        if let Some(message) = &progress.message {
            text.push_str(": ");
            text.push_str(message);
        }
        if !self.stderr_tty {
            self.write(&format!("{text}\n"));
            return;
        }
        self.write(&format!("\r\x1b[K{text}"));
        self.progress_visible.store(true, Ordering::Relaxed);
    }

    /// Clears the progress line, if one is showing.
    pub fn end_progress(&self) {
        if self.progress_visible.swap(false, Ordering::Relaxed) {
            self.write("\r\x1b[K");
        }
    }

    /// Prints a line on stderr, below any progress line.
    pub fn say(&self, text: &str) {
        self.end_progress();
        self.write(&format!("{text}\n"));
    }

    /// Handles a notification the server sent outside a call's progress.
    pub fn notification(&self, notification: &ServerNotification) {
        match notification {
            ServerNotification::Log(log) => self.say(&log_line(log)),
            ServerNotification::Progress(params) => {
                if let Ok(progress) = serde_json::from_value::<Progress>(
                    serde_json::to_value(params).unwrap_or(Value::Null),
                ) {
                    self.progress(&progress);
                }
            }
            ServerNotification::ElicitationComplete { elicitation_id } => {
                self.say(&format!(
                    "(the server completed elicitation {elicitation_id})"
                ));
            }
            ServerNotification::ToolListChanged
            | ServerNotification::PromptListChanged
            | ServerNotification::ResourceListChanged => {
                self.changes.fetch_add(1, Ordering::Relaxed);
                if self.show_changes.load(Ordering::Relaxed) {
                    let what = match notification {
                        ServerNotification::ToolListChanged => "tool",
                        ServerNotification::PromptListChanged => "prompt",
                        _ => "resource",
                    };
                    self.say(&format!("(the server's {what} list changed)"));
                }
            }
            ServerNotification::ResourceUpdated(params) => {
                if self.show_changes.load(Ordering::Relaxed) {
                    self.say(&format!("(resource updated: {})", params.uri));
                }
            }
            other => tracing::debug!(notification = ?other, "server notification"),
        }
    }

    /// How many list changes have arrived.
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Relaxed)
    }

    /// Answers `elicitation/create` at the prompt.
    pub async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
        if !self.input.interactive() {
            self.say("mcp: the server asks for input, but stdin is not a terminal: declined");
            return ElicitationAnswer::Decline;
        }
        let _turn = self.asking.lock().await;
        self.end_progress();
        match request {
            ElicitationRequest::Form {
                message, schema, ..
            } => self.form(&message, &schema).await,
            ElicitationRequest::Url { message, url, .. } => {
                self.write(&format!("\nThe server asks: {message}\nOpen: {url}\n"));
                match self.ask("Continue once you are done? [y/N] ").await {
                    Some(answer) if yes(&answer) == Some(true) => {
                        ElicitationAnswer::Accept(Map::new())
                    }
                    _ => ElicitationAnswer::Decline,
                }
            }
            other => {
                tracing::debug!(request = ?other, "unknown elicitation mode");
                ElicitationAnswer::Decline
            }
        }
    }

    async fn ask(&self, prompt: &str) -> Option<String> {
        self.write(prompt);
        let line = self.input.read_line().await;
        if line.is_none() {
            self.write("\n");
        }
        line
    }

    async fn form(&self, message: &str, schema: &FormSchema) -> ElicitationAnswer {
        self.write(&format!(
            "\nThe server asks: {message}\n(Enter keeps a default or skips an optional field; Ctrl-D declines.)\n"
        ));
        for _ in 0..FORM_ATTEMPTS {
            let mut content = Map::new();
            for field in schema.fields() {
                match self.field(field).await {
                    Some(Some(value)) => {
                        content.insert(field.name.clone(), value);
                    }
                    Some(None) => {}
                    None => return ElicitationAnswer::Decline,
                }
            }
            let mut checked = content.clone();
            schema.apply_defaults(&mut checked);
            match schema.validate(&checked) {
                Ok(()) => {}
                Err(problems) => {
                    self.write(&format!(
                        "{}\nLet's try again.\n",
                        problems.problems.join("\n")
                    ));
                    continue;
                }
            }
            return match self.ask("Send? [Y/n] ").await {
                None => ElicitationAnswer::Decline,
                Some(answer) if yes(&answer) == Some(false) => ElicitationAnswer::Decline,
                Some(_) => ElicitationAnswer::Accept(content),
            };
        }
        self.write("Giving up on this form.\n");
        ElicitationAnswer::Cancel
    }

    /// Asks for one field: `None` at end of input, `Some(None)` when skipped.
    async fn field(&self, field: &FormField) -> Option<Option<Value>> {
        let label = field.title.as_deref().unwrap_or(&field.name);
        if let Some(description) = field.description.as_deref().filter(|d| *d != label) {
            self.write(&format!("  {description}\n"));
        }
        if let FieldKind::Enum { options } | FieldKind::MultiEnum { options, .. } = &field.kind {
            for (i, option) in options.iter().enumerate() {
                match &option.title {
                    Some(title) => {
                        self.write(&format!("  {}) {title} [{}]\n", i + 1, option.value))
                    }
                    None => self.write(&format!("  {}) {}\n", i + 1, option.value)),
                }
            }
        }
        let prompt = format!("{label}{}: ", hint(field));
        loop {
            let answer = self.ask(&prompt).await?;
            let answer = answer.trim();
            if answer.is_empty() {
                if field.required && field.default.is_none() {
                    self.write("  (required)\n");
                    continue;
                }
                return Some(None);
            }
            match parse_field(&field.kind, answer) {
                Ok(value) => return Some(Some(value)),
                Err(problem) => self.write(&format!("  {problem}\n")),
            }
        }
    }

    /// Answers `sampling/createMessage` by letting the user write the reply.
    pub async fn sample(
        &self,
        request: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, HandlerError> {
        if !self.input.interactive() {
            self.say(
                "mcp: the server asks for a model reply, but stdin is not a terminal: declined",
            );
            return Err(HandlerError::rejected(
                "the user declined the sampling request",
            ));
        }
        let _turn = self.asking.lock().await;
        self.end_progress();
        let request = serde_json::to_value(&request).unwrap_or(Value::Null);
        let mut text = String::from("\nThe server asks for a model reply.\n");
        if let Some(system) = request.get("systemPrompt").and_then(Value::as_str) {
            text.push_str(&format!("system: {system}\n"));
        }
        for message in request
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let role = message.get("role").and_then(Value::as_str).unwrap_or("?");
            let blocks = match message.get("content") {
                Some(Value::Array(blocks)) => blocks.clone(),
                Some(block) => vec![block.clone()],
                None => Vec::new(),
            };
            for block in blocks {
                text.push_str(&format!("{role}: {}", crate::output::content_block(&block)));
            }
        }
        self.write(&text);
        match self
            .ask("Reply as the model (empty or Ctrl-D declines): ")
            .await
        {
            Some(reply) if !reply.trim().is_empty() => serde_json::from_value(json!({
                "role": "assistant",
                "content": {"type": "text", "text": reply},
                "model": "human-at-mcp-cli",
                "stopReason": "endTurn"
            }))
            .map_err(|e| HandlerError::internal(e.to_string())),
            _ => Err(HandlerError::rejected(
                "the user declined the sampling request",
            )),
        }
    }
}

/// `12` for whole numbers, `1.5` otherwise.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        value.to_string()
    }
}

fn yes(answer: &str) -> Option<bool> {
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" | "true" | "1" | "on" => Some(true),
        "n" | "no" | "false" | "0" | "off" => Some(false),
        _ => None,
    }
}

/// `[level] logger: data`.
pub fn log_line(log: &LoggingMessageNotificationParams) -> String {
    let level = serde_json::to_value(log.level)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "log".to_owned());
    let data = match &log.data {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    match &log.logger {
        Some(logger) => format!("[{level}] {logger}: {data}"),
        None => format!("[{level}] {data}"),
    }
}

fn hint(field: &FormField) -> String {
    let mut parts = Vec::new();
    match &field.kind {
        FieldKind::String { format, .. } => {
            if let Some(format) = format {
                parts.push(format!("{format:?}").to_lowercase());
            }
        }
        FieldKind::Number { integer: true, .. } => parts.push("whole number".to_owned()),
        FieldKind::Number { .. } => parts.push("number".to_owned()),
        FieldKind::Boolean => parts.push("y/n".to_owned()),
        FieldKind::Enum { .. } => parts.push("number or value".to_owned()),
        FieldKind::MultiEnum { .. } => parts.push("numbers or values, comma-separated".to_owned()),
        _ => parts.push("JSON".to_owned()),
    }
    if let Some(default) = &field.default {
        parts.push(format!("default {default}"));
    } else if !field.required {
        parts.push("optional".to_owned());
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

fn choose(options: &[mcp_client::elicit::EnumOption], answer: &str) -> Result<String, String> {
    let answer = answer.trim();
    if let Ok(n) = answer.parse::<usize>() {
        if let Some(option) = n.checked_sub(1).and_then(|i| options.get(i)) {
            return Ok(option.value.clone());
        }
    }
    options
        .iter()
        .find(|o| {
            o.value.eq_ignore_ascii_case(answer)
                || o.title
                    .as_deref()
                    .is_some_and(|t| t.eq_ignore_ascii_case(answer))
        })
        .map(|o| o.value.clone())
        .ok_or_else(|| format!("`{answer}` is not one of the choices"))
}

/// Turns what the user typed into the field's JSON value.
fn parse_field(kind: &FieldKind, answer: &str) -> Result<Value, String> {
    match kind {
        FieldKind::String { .. } => Ok(Value::String(answer.to_owned())),
        FieldKind::Number { integer: true, .. } => answer
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "not a whole number".to_owned()),
        FieldKind::Number { .. } => answer
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| "not a number".to_owned()),
        FieldKind::Boolean => yes(answer)
            .map(Value::Bool)
            .ok_or_else(|| "answer y or n".to_owned()),
        FieldKind::Enum { options } => choose(options, answer).map(Value::String),
        FieldKind::MultiEnum { options, .. } => answer
            .split(',')
            .filter(|part| !part.trim().is_empty())
            .map(|part| choose(options, part).map(Value::String))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        _ => serde_json::from_str(answer).map_err(|e| format!("not JSON: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::sync::Mutex;

    /// Scripted answers; `None` in the script is end of input.
    struct Script(Mutex<VecDeque<Option<&'static str>>>, bool);

    impl Input for Script {
        fn interactive(&self) -> bool {
            self.1
        }

        async fn read_line(&self) -> Option<String> {
            self.0
                .lock()
                .expect("script")
                .pop_front()
                .flatten()
                .map(str::to_owned)
        }
    }

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("buffer").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn term(answers: &[Option<&'static str>], interactive: bool) -> (Term<Script>, Shared) {
        let out = Shared::default();
        let term = Term {
            input: Script(Mutex::new(answers.iter().copied().collect()), interactive),
            stderr_tty: false,
            force_progress: false,
            progress_visible: AtomicBool::new(false),
            asking: tokio::sync::Mutex::new(()),
            out: std::sync::Mutex::new(Box::new(out.clone())),
            show_changes: AtomicBool::new(false),
            changes: std::sync::atomic::AtomicU64::new(0),
        };
        (term, out)
    }

    /// A form as a server sends it: JSON text, its fields in an order of its choosing.
    fn form() -> ElicitationRequest {
        let text = r#"{
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Your name", "minLength": 1},
                "age": {"type": "integer", "minimum": 0},
                "language": {"type": "string", "enum": ["english", "french"]},
                "subscribe": {"type": "boolean", "default": false}
            },
            "required": ["name"]
        }"#;
        ElicitationRequest::Form {
            message: "Who are you?".into(),
            schema: FormSchema::parse_str(text).expect("valid form"),
            requested_schema: serde_json::from_str(text).expect("JSON"),
        }
    }

    #[tokio::test]
    async fn a_form_is_filled_field_by_field() {
        // Fields come in the server's order: name: empty first (required), then Ada; age: bad,
        // then 36; language: by number; subscribe: skipped (it has a default); then confirm.
        let (term, out) = term(
            &[
                Some(""),
                Some("Ada"),
                Some("old"),
                Some("36"),
                Some("2"),
                Some(""),
                Some("y"),
            ],
            true,
        );
        let answer = term.elicit(form()).await;
        let ElicitationAnswer::Accept(content) = answer else {
            panic!("expected accept, got {answer:?}")
        };
        assert_eq!(
            Value::Object(content),
            json!({"name": "Ada", "age": 36, "language": "french"})
        );
        let shown = String::from_utf8(out.0.lock().expect("buffer").clone()).expect("utf-8");
        assert!(shown.contains("Who are you?"), "{shown}");
        assert!(shown.contains("(required)"), "{shown}");
        assert!(shown.contains("not a whole number"), "{shown}");
        assert!(shown.contains("2) french"), "{shown}");
    }

    #[tokio::test]
    async fn end_of_input_declines() {
        let (term, _) = term(&[Some("Ada"), None], true);
        assert_eq!(term.elicit(form()).await, ElicitationAnswer::Decline);
    }

    #[tokio::test]
    async fn no_terminal_declines_without_asking() {
        let (term, out) = term(&[Some("Ada")], false);
        assert_eq!(term.elicit(form()).await, ElicitationAnswer::Decline);
        let shown = String::from_utf8(out.0.lock().expect("buffer").clone()).expect("utf-8");
        assert!(shown.contains("not a terminal"), "{shown}");
        let sample = term
            .sample(
                serde_json::from_value(json!({"messages": [], "maxTokens": 10})).expect("params"),
            )
            .await;
        assert!(sample.is_err());
    }

    #[tokio::test]
    async fn a_sampling_reply_is_typed_in() {
        let (term, out) = term(&[Some("Paris.")], true);
        let params: CreateMessageRequestParams = serde_json::from_value(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}],
            "maxTokens": 10
        }))
        .expect("params");
        let result = term.sample(params).await.expect("answered");
        let result = serde_json::to_value(result).expect("json");
        assert_eq!(result["content"]["text"], "Paris.");
        assert_eq!(result["role"], "assistant");
        let shown = String::from_utf8(out.0.lock().expect("buffer").clone()).expect("utf-8");
        assert!(shown.contains("user: Capital of France?"), "{shown}");
    }

    #[test]
    fn answers_are_parsed_by_kind() {
        assert_eq!(
            parse_field(
                &FieldKind::Number {
                    integer: false,
                    minimum: None,
                    maximum: None
                },
                "2.5"
            ),
            Ok(json!(2.5))
        );
        assert_eq!(parse_field(&FieldKind::Boolean, "Yes"), Ok(json!(true)));
        assert!(parse_field(&FieldKind::Boolean, "maybe").is_err());
    }

    #[test]
    fn log_lines_name_level_and_logger() {
        let log: LoggingMessageNotificationParams = serde_json::from_value(json!({
            "level": "warning", "logger": "db", "data": {"slow": true}
        }))
        .expect("params");
        assert_eq!(log_line(&log), r#"[warning] db: {"slow":true}"#);
    }
}
