//! The client commands: `list`, `call`, `read`, `prompt`, `ping`, `discover`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_client::{CallError, Client, ClientSession, ConnectError};
use mcp_jsonrpc::{Engine, RequestOptions};
use mcp_types::{Era, Implementation, LoggingLevel, ProtocolVersion};
use serde_json::{Map, Value, json};

use crate::args::{CallArgs, Command, Format, ListKind, ServerArgs};
use crate::output::{self, Table, first_line, print, print_json};
use crate::target::{self, Guard, Target};
use crate::term::Term;
use crate::{Exit, Fail, chain};

/// How long `discover` waits for `server/discover` before falling back to `initialize`.
const DISCOVER_WAIT: Duration = Duration::from_secs(5);

pub async fn run(command: Command, verbose: u8) -> Result<Exit, Fail> {
    match command {
        Command::List(args) => {
            let format = args.output.format();
            with_session(&args.server, verbose, |s, _| list(s, args.kind, format)).await
        }
        Command::Call(args) => {
            let (arguments, format) = call_inputs(&args)?;
            let CallArgs { tool, server, .. } = args;
            with_session(&server, verbose, move |s, term| {
                call(s, term, tool, arguments, format)
            })
            .await
        }
        Command::Read(args) => {
            let format = args.output.format();
            let uri = args.uri;
            with_session(&args.server, verbose, move |s, term| {
                read(s, term, uri, format)
            })
            .await
        }
        Command::Prompt(args) => {
            let format = args.output.format();
            let pairs = args
                .args
                .iter()
                .map(|a| split_pair(a))
                .collect::<Result<Vec<_>, _>>()?;
            let name = args.name;
            with_session(&args.server, verbose, move |s, term| {
                prompt(s, term, name, pairs, format)
            })
            .await
        }
        Command::Skill(args) => {
            let format = args.output.format();
            let (name, file) = (args.name, args.file);
            with_session(&args.server, verbose, move |s, _| {
                crate::skills::skill(s, name, file, format)
            })
            .await
        }
        Command::Ping(args) => {
            let format = args.output.format();
            with_session(&args.server, verbose, move |s, _| ping(s, format)).await
        }
        Command::Discover(args) => discover(&args.server, args.output.format(), verbose).await,
        Command::Serve(_)
        | Command::Proxy(_)
        | Command::Schema(_)
        | Command::Revisions
        | Command::Methods { .. } => Err(Fail::other("not a client command")),
    }
}

/// The client this command presents to servers. Connecting may take `connect_budget`, by
/// default `--timeout`.
fn client(
    args: &ServerArgs,
    term: &Arc<Term>,
    connect_budget: Option<Duration>,
) -> Result<Client, Fail> {
    let timeout = (args.timeout > 0).then(|| Duration::from_secs(args.timeout));
    let elicit = Arc::clone(term);
    let sample = Arc::clone(term);
    let notes = Arc::clone(term);
    let mut builder = Client::builder(Implementation::new("mcp", env!("CARGO_PKG_VERSION")))
        .on_elicit(move |request| {
            let term = Arc::clone(&elicit);
            async move { Ok(term.elicit(request).await) }
        })
        .url_elicitation(true)
        .on_sample(move |request| {
            let term = Arc::clone(&sample);
            async move { term.sample(request).await }
        })
        .on_notification(move |notification| notes.notification(notification))
        .request_timeout(timeout)
        .initialize_timeout(
            connect_budget
                .or(timeout)
                .unwrap_or(Duration::from_secs(30)),
        );
    if let Some(version) = args.protocol {
        builder = builder
            .protocol_version(version)
            .min_protocol_version(version);
    }
    Ok(builder.build())
}

async fn connect_failure(error: &ConnectError, target: &Target, guard: Guard) -> Fail {
    let mut message = format!("cannot connect to {}: {}", target.describe(), chain(error));
    if let Some(tail) = guard.close_with_stderr().await {
        message.push_str("\nthe server's last words on stderr:\n");
        message.push_str(&tail);
    }
    Fail::connect(message)
}

/// Connects, runs `body`, and closes the session and its server whatever happened.
async fn with_session<F, Fut>(args: &ServerArgs, verbose: u8, body: F) -> Result<Exit, Fail>
where
    F: FnOnce(ClientSession, Arc<Term>) -> Fut,
    Fut: std::future::Future<Output = Result<Exit, Fail>>,
{
    with_session_within(args, verbose, None, body).await
}

/// [`with_session`], connecting within `connect_budget` (default: `--timeout`).
async fn with_session_within<F, Fut>(
    args: &ServerArgs,
    verbose: u8,
    connect_budget: Option<Duration>,
    body: F,
) -> Result<Exit, Fail>
where
    F: FnOnce(ClientSession, Arc<Term>) -> Fut,
    Fut: std::future::Future<Output = Result<Exit, Fail>>,
{
    let target = target::resolve(args)?;
    // Log messages are shown at `info` and above unless asked otherwise. A stateless
    // (2026-07-28) server sends none unless the request names a level, so ask for one always.
    let explicit_level = args.log_level.is_some();
    let log_level = Some(args.log_level.as_deref().unwrap_or("info"))
        .map(|level| {
            serde_json::from_value::<LoggingLevel>(Value::String(level.to_owned())).map_err(|_| {
                Fail::usage(format!(
                    "unknown log level `{level}` (debug, info, notice, warning, error, critical, alert, emergency)"
                ))
            })
        })
        .transpose()?;
    let term = Term::new();
    let client = client(args, &term, connect_budget)?;
    let opened = target::open(&target, verbose).await?;
    let session = match client.connect(opened.connection).await {
        Ok(session) => session,
        Err(error) => return Err(connect_failure(&error, &target, opened.guard).await),
    };
    tracing::debug!(
        server = %session.server_info().name,
        version = %session.protocol_version(),
        "connected"
    );
    if let Some(level) = log_level {
        if session.offers("logging") {
            if let Err(error) = session.set_logging_level(level).await {
                term.say(&format!(
                    "mcp: could not set the log level: {}",
                    chain(&error)
                ));
            }
        } else if explicit_level {
            term.say("mcp: the server offers no logging; --log-level ignored");
        }
    }
    let result = body(session.clone(), Arc::clone(&term)).await;
    term.end_progress();
    session.close().await;
    let tail = opened.guard.close_with_stderr().await;
    result.map_err(|fail| match tail {
        Some(tail) if fail.code == crate::EXIT_CONNECT => Fail::connect(format!(
            "{}\nthe server's last words on stderr:\n{tail}",
            fail.message
        )),
        _ => fail,
    })
}

/// A failed call: the connection's failures exit 3, the server's errors 1.
pub(crate) fn call_failure(what: &str, error: &CallError) -> Fail {
    let message = format!("{what}: {}", chain(error));
    match error {
        CallError::Closed(_) | CallError::Transport(_) => Fail::connect(message),
        _ => Fail::other(message),
    }
}

fn split_pair(text: &str) -> Result<(String, String), Fail> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(Fail::usage(format!("--arg `{text}` is not KEY=VALUE"))),
    }
}

/// The arguments of `call` before the tool's schema is known, and the output format.
struct CallInputs {
    base: Map<String, Value>,
    pairs: Vec<(String, String)>,
}

fn call_inputs(args: &CallArgs) -> Result<(CallInputs, Format), Fail> {
    let mut format = args.output.unwrap_or(Format::Text);
    let mut base = None;
    for value in &args.json {
        if value.is_empty() {
            format = Format::Json;
            continue;
        }
        if base.is_some() {
            return Err(Fail::usage(
                "give the arguments object with --json only once",
            ));
        }
        match serde_json::from_str::<Value>(value) {
            Ok(Value::Object(map)) => base = Some(map),
            Ok(_) | Err(_) => {
                return Err(Fail::usage(format!(
                    "--json `{value}` is not a JSON object (for JSON output, write --json last \
                     or use -o json)"
                )));
            }
        }
    }
    let pairs = args
        .args
        .iter()
        .map(|a| split_pair(a))
        .collect::<Result<Vec<_>, _>>()?;
    let mut seen = std::collections::HashSet::new();
    for (key, _) in &pairs {
        if !seen.insert(key) {
            return Err(Fail::usage(format!("--arg `{key}` is given twice")));
        }
    }
    Ok((
        CallInputs {
            base: base.unwrap_or_default(),
            pairs,
        },
        format,
    ))
}

/// The JSON types a schema property allows (`type` as a string or a list).
fn schema_types(property: Option<&Value>) -> Vec<String> {
    match property.and_then(|p| p.get("type")) {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `--arg k=v`: JSON when `v` parses as JSON, else a string; a string whenever the property's
/// schema allows strings but not the parsed value's type (so `--arg zip=02134` stays a string).
fn coerce(value: &str, property: Option<&Value>) -> Value {
    let parsed = serde_json::from_str::<Value>(value).ok();
    let types = schema_types(property);
    match parsed {
        None => Value::String(value.to_owned()),
        Some(parsed) if types.is_empty() => parsed,
        Some(parsed) => {
            let kind = json_type(&parsed);
            let fits = types
                .iter()
                .any(|t| t == kind || (t == "number" && kind == "integer"));
            if !fits && types.iter().any(|t| t == "string") {
                Value::String(value.to_owned())
            } else {
                parsed
            }
        }
    }
}

fn build_arguments(inputs: CallInputs, input_schema: Option<&Value>) -> Map<String, Value> {
    let properties = input_schema.and_then(|s| s.get("properties"));
    let mut arguments = inputs.base;
    for (key, value) in inputs.pairs {
        let property = properties.and_then(|p| p.get(&key));
        arguments.insert(key, coerce(&value, property));
    }
    arguments
}

/// `name, other?` from an input schema: the properties, optional ones marked.
fn argument_list(schema: &Value) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .keys()
                .map(|k| {
                    if required.contains(&k.as_str()) {
                        k.clone()
                    } else {
                        format!("{k}?")
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

pub(crate) fn to_json(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn str_field<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

async fn list(
    session: ClientSession,
    kind: Option<ListKind>,
    format: Format,
) -> Result<Exit, Fail> {
    let kinds: Vec<ListKind> = match kind {
        Some(kind) => vec![kind],
        None => {
            let mut kinds = Vec::new();
            if session.offers("tools") {
                kinds.push(ListKind::Tools);
            }
            if session.offers("prompts") {
                kinds.push(ListKind::Prompts);
            }
            if session.offers("resources") {
                kinds.push(ListKind::Resources);
                kinds.push(ListKind::Templates);
            }
            if session.skills().is_ok() {
                kinds.push(ListKind::Skills);
            }
            kinds
        }
    };
    let explicit = kind.is_some();
    let mut json = Map::new();
    let mut text = String::new();
    for kind in &kinds {
        let (key, items) = match list_kind(&session, *kind).await {
            Ok(listed) => listed,
            Err(CallError::MissingCapability { capability, .. }) if explicit => {
                eprintln!("mcp: the server offers no {capability}");
                (key_of(*kind), Vec::new())
            }
            Err(error) => return Err(call_failure(&format!("listing {}", key_of(*kind)), &error)),
        };
        if format == Format::Text {
            let table = table_of(*kind, &items);
            if kinds.len() > 1 {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&format!("{} ({})\n", title_of(*kind), items.len()));
            }
            if table.is_empty() {
                if kinds.len() == 1 {
                    eprintln!("mcp: the server lists no {}", key_of(*kind));
                }
            } else {
                text.push_str(&table.render());
            }
        }
        json.insert(key.to_owned(), Value::Array(items));
    }
    match format {
        Format::Json if kinds.len() == 1 => {
            let items = json.into_iter().next().map(|(_, v)| v).unwrap_or_default();
            print_json(&items)?;
        }
        Format::Json => print_json(&Value::Object(json))?,
        Format::Text => print(&text)?,
    }
    Ok(Exit::Ok)
}

fn key_of(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Tools => "tools",
        ListKind::Resources => "resources",
        ListKind::Templates => "resourceTemplates",
        ListKind::Prompts => "prompts",
        ListKind::Skills => "skills",
    }
}

fn title_of(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Tools => "TOOLS",
        ListKind::Resources => "RESOURCES",
        ListKind::Templates => "RESOURCE TEMPLATES",
        ListKind::Prompts => "PROMPTS",
        ListKind::Skills => "SKILLS",
    }
}

async fn list_kind(
    session: &ClientSession,
    kind: ListKind,
) -> Result<(&'static str, Vec<Value>), CallError> {
    let items: Vec<Value> = match kind {
        ListKind::Tools => session
            .list_all_tools()
            .await?
            .iter()
            .map(to_json)
            .collect(),
        ListKind::Resources => session
            .list_all_resources()
            .await?
            .iter()
            .map(to_json)
            .collect(),
        ListKind::Templates => session
            .list_all_resource_templates()
            .await?
            .iter()
            .map(to_json)
            .collect(),
        ListKind::Prompts => session
            .list_all_prompts()
            .await?
            .iter()
            .map(to_json)
            .collect(),
        ListKind::Skills => crate::skills::list_all(session)
            .await?
            .iter()
            .map(to_json)
            .collect(),
    };
    Ok((key_of(kind), items))
}

fn table_of(kind: ListKind, items: &[Value]) -> Table {
    let mut table = match kind {
        ListKind::Tools => Table::new(&["NAME", "ARGUMENTS", "DESCRIPTION"]),
        ListKind::Prompts => Table::new(&["NAME", "ARGUMENTS", "DESCRIPTION"]),
        ListKind::Resources => Table::new(&["URI", "NAME", "MIME TYPE", "DESCRIPTION"]),
        ListKind::Templates => Table::new(&["URI TEMPLATE", "NAME", "MIME TYPE", "DESCRIPTION"]),
        // A manifest per row: a table of its own.
        ListKind::Skills => return crate::skills::table(items),
    };
    for item in items {
        let name = str_field(item, "name").unwrap_or_default().to_owned();
        let description = first_line(str_field(item, "description"));
        let row = match kind {
            ListKind::Tools => vec![
                name,
                item.get("inputSchema")
                    .map(argument_list)
                    .unwrap_or_default(),
                description,
            ],
            ListKind::Prompts => {
                let arguments = item
                    .get("arguments")
                    .and_then(Value::as_array)
                    .map(|args| {
                        args.iter()
                            .filter_map(|a| {
                                let name = str_field(a, "name")?;
                                let required = a.get("required").and_then(Value::as_bool);
                                Some(if required == Some(true) {
                                    name.to_owned()
                                } else {
                                    format!("{name}?")
                                })
                            })
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default();
                vec![name, arguments, description]
            }
            ListKind::Skills => continue,
            ListKind::Resources | ListKind::Templates => {
                let uri_key = if kind == ListKind::Resources {
                    "uri"
                } else {
                    "uriTemplate"
                };
                vec![
                    str_field(item, uri_key).unwrap_or_default().to_owned(),
                    name,
                    str_field(item, "mimeType").unwrap_or_default().to_owned(),
                    description,
                ]
            }
        };
        table.row(row);
    }
    table
}

async fn call(
    session: ClientSession,
    term: Arc<Term>,
    tool: String,
    inputs: CallInputs,
    format: Format,
) -> Result<Exit, Fail> {
    // The tool's input schema decides how `--arg` values are read; listing also lets the
    // session check the result against the tool's output schema.
    let input_schema = if inputs.pairs.is_empty() {
        None
    } else {
        match session.list_all_tools().await {
            Ok(tools) => tools
                .iter()
                .find(|t| t.name == tool)
                .map(|t| to_json(&t.input_schema)),
            Err(error) => {
                tracing::debug!(error = %chain(&error), "tools/list failed; --arg values are not checked against the schema");
                None
            }
        }
    };
    let arguments = build_arguments(inputs, input_schema.as_ref());
    let progress = Arc::clone(&term);
    let result = session
        .with_progress(move |p| progress.progress(&p))
        .call_tool(tool.clone(), Value::Object(arguments))
        .await;
    term.end_progress();
    let result = result.map_err(|e| call_failure(&format!("calling `{tool}`"), &e))?;
    let is_error = result.is_error == Some(true);
    let value = to_json(&result);
    match format {
        Format::Json => print_json(&value)?,
        Format::Text => {
            let mut text = String::new();
            let blocks = value.get("content").and_then(Value::as_array);
            for block in blocks.into_iter().flatten() {
                text.push_str(&output::content_block(block));
            }
            if blocks.is_none_or(|b| b.is_empty()) {
                if let Some(structured) = value.get("structuredContent") {
                    text.push_str(&output::line(
                        &serde_json::to_string_pretty(structured).unwrap_or_default(),
                    ));
                }
            }
            if is_error {
                eprint!(
                    "{}",
                    if text.is_empty() {
                        "the tool failed\n"
                    } else {
                        &text
                    }
                );
            } else {
                print(&text)?;
            }
        }
    }
    Ok(if is_error { Exit::ToolError } else { Exit::Ok })
}

async fn read(
    session: ClientSession,
    term: Arc<Term>,
    uri: String,
    format: Format,
) -> Result<Exit, Fail> {
    let progress = Arc::clone(&term);
    let result = session
        .with_progress(move |p| progress.progress(&p))
        .read_resource(uri.clone())
        .await;
    term.end_progress();
    let result = result.map_err(|e| call_failure(&format!("reading {uri}"), &e))?;
    let value = to_json(&result);
    if format == Format::Json {
        print_json(&value)?;
        return Ok(Exit::Ok);
    }
    let contents: Vec<Value> = value
        .get("contents")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let single = contents.len() == 1;
    for entry in &contents {
        match output::blob_bytes(entry) {
            // One binary resource into a pipe or file: its bytes, so `> file.png` works.
            Some(bytes) if single && !output::stdout_is_terminal() => {
                output::print_bytes(&bytes?)?;
            }
            Some(_) => {
                print(&output::resource_contents(entry, true))?;
                if single {
                    eprintln!("mcp: binary contents; redirect stdout to a file to save them");
                }
            }
            None => print(&output::resource_contents(entry, single))?,
        }
    }
    Ok(Exit::Ok)
}

async fn prompt(
    session: ClientSession,
    term: Arc<Term>,
    name: String,
    arguments: Vec<(String, String)>,
    format: Format,
) -> Result<Exit, Fail> {
    let progress = Arc::clone(&term);
    let result = session
        .with_progress(move |p| progress.progress(&p))
        .get_prompt(name.clone(), arguments)
        .await;
    term.end_progress();
    let result = result.map_err(|e| call_failure(&format!("getting prompt `{name}`"), &e))?;
    let value = to_json(&result);
    if format == Format::Json {
        print_json(&value)?;
        return Ok(Exit::Ok);
    }
    let mut text = String::new();
    if let Some(description) = str_field(&value, "description") {
        text.push_str(&format!("# {description}\n"));
    }
    for message in value
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = str_field(message, "role").unwrap_or("?");
        let content = message
            .get("content")
            .map(output::content_block)
            .unwrap_or_default();
        text.push_str(&format!("{role}: {content}"));
    }
    print(&text)?;
    Ok(Exit::Ok)
}

async fn ping(session: ClientSession, format: Format) -> Result<Exit, Fail> {
    let started = Instant::now();
    session.ping().await.map_err(|e| call_failure("ping", &e))?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    match format {
        Format::Json => print_json(&json!({"ok": true, "ms": ms}))?,
        Format::Text => print(&format!(
            "pong from {} {} ({ms:.1} ms, protocol {})\n",
            session.server_info().name,
            session.server_info().version,
            session.protocol_version()
        ))?,
    }
    Ok(Exit::Ok)
}

/// `server/discover` (2026-07-28) when the server answers it, else what `initialize` tells.
async fn discover(args: &ServerArgs, format: Format, verbose: u8) -> Result<Exit, Fail> {
    let target = target::resolve(args)?;
    let stateless = args
        .protocol
        .is_none_or(|version| version.era() == Era::Stateless);
    // The probe and the fallback share `--timeout`: the probe gets at most half of it, and
    // connecting what the probe left.
    let started = Instant::now();
    let budget = (args.timeout > 0).then(|| Duration::from_secs(args.timeout));
    if stateless {
        let version = args.protocol.unwrap_or(ProtocolVersion::LATEST);
        let wait = budget.map_or(DISCOVER_WAIT, |b| DISCOVER_WAIT.min(b / 2));
        match server_discover(&target, version, verbose, wait).await {
            Ok(result) => {
                match format {
                    Format::Json => print_json(&result)?,
                    Format::Text => print(&describe_discovery(&result))?,
                }
                return Ok(Exit::Ok);
            }
            Err(fail) if args.protocol.is_some() => return Err(fail),
            Err(fail) => {
                tracing::debug!(reason = %fail.message, "server/discover failed; trying initialize");
            }
        }
    }
    let left = budget.map(|b| b.saturating_sub(started.elapsed()));
    with_session_within(args, verbose, left, move |session, _| async move {
        let init = to_json(session.initialize_result());
        match format {
            Format::Json => print_json(&init)?,
            Format::Text => print(&describe_initialize(&init))?,
        }
        Ok(Exit::Ok)
    })
    .await
}

async fn server_discover(
    target: &Target,
    version: ProtocolVersion,
    verbose: u8,
    wait: Duration,
) -> Result<Value, Fail> {
    let opened = target::open(target, verbose).await?;
    let (peer, driver) = Engine::builder().spawn(opened.connection, ());
    let params = json!({
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": version.as_str(),
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "mcp", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let result = peer
        .call::<Value, Value>(
            "server/discover",
            &params,
            RequestOptions::new().timeout(Some(wait)),
        )
        .await;
    peer.close();
    let _ = driver.await;
    opened.guard.close().await;
    result.map_err(|e| Fail::other(format!("server/discover: {}", chain(&e))))
}

fn capability_names(capabilities: Option<&Value>) -> String {
    capabilities
        .and_then(Value::as_object)
        .map(|caps| {
            caps.iter()
                .map(|(name, value)| {
                    let flags: Vec<&str> = value
                        .as_object()
                        .map(|o| {
                            o.iter()
                                .filter(|(_, v)| v.as_bool() == Some(true))
                                .map(|(k, _)| k.as_str())
                                .collect()
                        })
                        .unwrap_or_default();
                    if flags.is_empty() {
                        name.clone()
                    } else {
                        format!("{name} ({})", flags.join(", "))
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

fn server_line(info: Option<&Value>) -> String {
    match info {
        Some(info) => format!(
            "{} {}",
            str_field(info, "name").unwrap_or("?"),
            str_field(info, "version").unwrap_or("")
        ),
        None => "?".to_owned(),
    }
}

fn describe_initialize(init: &Value) -> String {
    let mut table = Table::new(&["", ""]).unlimited();
    table.row(vec!["server".into(), server_line(init.get("serverInfo"))]);
    table.row(vec![
        "protocol".into(),
        str_field(init, "protocolVersion").unwrap_or("?").to_owned(),
    ]);
    table.row(vec!["negotiated with".into(), "initialize".into()]);
    table.row(vec![
        "capabilities".into(),
        capability_names(init.get("capabilities")),
    ]);
    let mut text = table
        .render()
        .lines()
        .skip(1)
        .collect::<Vec<_>>()
        .join("\n");
    text.push('\n');
    if let Some(instructions) = str_field(init, "instructions") {
        text.push_str(&format!("\n{}", output::line(instructions)));
    }
    text
}

fn describe_discovery(result: &Value) -> String {
    let versions = result
        .get("supportedVersions")
        .and_then(Value::as_array)
        .map(|v| {
            v.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let info = result
        .get("serverInfo")
        .or_else(|| result.pointer("/_meta/io.modelcontextprotocol~1serverInfo"));
    let mut table = Table::new(&["", ""]).unlimited();
    table.row(vec!["server".into(), server_line(info)]);
    table.row(vec!["supported revisions".into(), versions]);
    table.row(vec!["negotiated with".into(), "server/discover".into()]);
    table.row(vec![
        "capabilities".into(),
        capability_names(result.get("capabilities")),
    ]);
    let mut text = table
        .render()
        .lines()
        .skip(1)
        .collect::<Vec<_>>()
        .join("\n");
    text.push('\n');
    if let Some(instructions) = str_field(result, "instructions") {
        text.push_str(&format!("\n{}", output::line(instructions)));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arg_values_follow_the_schema() {
        let schema = json!({"properties": {
            "text": {"type": "string"},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "either": {"type": ["string", "null"]},
            "free": {}
        }});
        let props = schema.get("properties");
        let p = |k: &str| props.and_then(|p| p.get(k));
        assert_eq!(
            coerce("123", p("text")),
            json!("123"),
            "the schema says string"
        );
        assert_eq!(coerce("true", p("text")), json!("true"));
        assert_eq!(coerce("hello", p("text")), json!("hello"));
        assert_eq!(coerce("3", p("count")), json!(3));
        assert_eq!(coerce("3", p("ratio")), json!(3), "an integer is a number");
        assert_eq!(coerce("null", p("either")), Value::Null);
        assert_eq!(coerce("7", p("either")), json!("7"));
        assert_eq!(coerce(r#"{"a":1}"#, p("free")), json!({"a": 1}));
        assert_eq!(
            coerce("[1,2]", None),
            json!([1, 2]),
            "no schema: JSON when it parses"
        );
        assert_eq!(coerce("hi there", None), json!("hi there"));
    }

    #[test]
    fn call_arguments_merge_json_and_pairs() {
        let args = CallArgs {
            tool: "t".into(),
            args: vec!["b=2".into(), "c=x".into()],
            json: vec![r#"{"a":1,"b":1}"#.into(), String::new()],
            output: None,
            server: ServerArgs::default(),
        };
        let (inputs, format) = call_inputs(&args).expect("valid");
        assert_eq!(format, Format::Json, "a bare --json asks for JSON output");
        let arguments = build_arguments(inputs, None);
        assert_eq!(Value::Object(arguments), json!({"a": 1, "b": 2, "c": "x"}));

        let twice = CallArgs {
            args: vec!["a=1".into(), "a=2".into()],
            json: vec![],
            ..args
        };
        assert_eq!(
            call_inputs(&twice).err().map(|f| f.code),
            Some(crate::EXIT_USAGE)
        );
    }

    #[test]
    fn json_arguments_must_be_an_object() {
        let args = CallArgs {
            tool: "t".into(),
            args: vec![],
            json: vec!["[1]".into()],
            output: None,
            server: ServerArgs::default(),
        };
        let fail = call_inputs(&args).err().expect("not an object");
        assert_eq!(fail.code, crate::EXIT_USAGE);
    }

    #[test]
    fn tool_arguments_show_which_are_optional() {
        let schema = json!({
            "properties": {"a": {}, "b": {}, "c": {}},
            "required": ["a", "c"]
        });
        assert_eq!(argument_list(&schema), "a, b?, c");
    }

    #[test]
    fn discovery_is_described() {
        let text = describe_discovery(&json!({
            "supportedVersions": ["2025-11-25", "2026-07-28"],
            "capabilities": {"tools": {"listChanged": true}, "logging": {}},
            "serverInfo": {"name": "demo", "version": "1.0"},
            "instructions": "Be nice."
        }));
        assert!(text.contains("server               demo 1.0"), "{text}");
        assert!(text.contains("2025-11-25, 2026-07-28"), "{text}");
        assert!(text.contains("logging, tools (listChanged)"), "{text}");
        assert!(text.ends_with("Be nice.\n"), "{text}");
    }
}
