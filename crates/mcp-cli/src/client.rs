//! The client commands: `list`, `call`, `read`, `prompt`, `ping`, `discover`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_client::{CallError, Client, ClientSession, ConnectError, Roots};
use mcp_jsonrpc::{Engine, RequestOptions};
use mcp_types::{Era, Implementation, LoggingLevel, ProtocolVersion, Root};
use serde_json::{Map, Value, json};

use crate::args::{CallArgs, Command, Format, ListKind, ServerArgs};
use crate::output::{self, Table, first_line, print, print_json};
use crate::target::{self, Guard, Target};
use crate::term::Term;
use crate::{Exit, Fail, chain};

/// How long `discover` waits for `server/discover` before falling back to `initialize`.
const DISCOVER_WAIT: Duration = Duration::from_secs(5);

/// Picks the server `name` of the known client configurations, unless another is given.
pub(crate) fn by_name(server: &mut ServerArgs, name: Option<String>) -> Result<(), Fail> {
    let Some(name) = name else {
        return Ok(());
    };
    if server.url.is_some() || server.config.is_some() || !server.command.is_empty() {
        return Err(Fail::usage(format!(
            "give the server by name (`{name}`) or with --url, --config or `--`, not both"
        )));
    }
    if server.server.as_ref().is_some_and(|s| s != &name) {
        return Err(Fail::usage("two server names given"));
    }
    server.server = Some(name);
    Ok(())
}

/// `SERVER:NAME` for a tool or prompt: when no server is given otherwise and `SERVER` is one of
/// the known client configurations, the server by name and the bare name.
fn split_server(name: String, server: &mut ServerArgs) -> String {
    let no_server = server.url.is_none()
        && server.config.is_none()
        && server.command.is_empty()
        && server.server.is_none();
    if let Some((prefix, rest)) = name.split_once(':') {
        if no_server && !prefix.is_empty() && !rest.is_empty() && crate::configs::is_known(prefix) {
            server.server = Some(prefix.to_owned());
            return rest.to_owned();
        }
    }
    name
}

pub async fn run(command: Command, verbose: u8) -> Result<Exit, Fail> {
    match command {
        Command::List(mut args) => {
            let format = args.output.format();
            by_name(&mut args.server, args.name.take())?;
            with_session(&args.server, verbose, |s, _| list(s, args.kind, format)).await
        }
        Command::Describe(mut args) => {
            let format = args.output.format();
            by_name(&mut args.server, args.server_name.take())?;
            let (kind, name) = (args.kind, args.name);
            with_session(&args.server, verbose, move |s, _| {
                crate::describe::describe(s, kind, name, format)
            })
            .await
        }
        Command::Call(args) => {
            let (arguments, format) = call_inputs(&args)?;
            let CallArgs {
                tool,
                mut server,
                no_check,
                ..
            } = args;
            let tool = split_server(tool, &mut server);
            with_session(&server, verbose, move |s, term| {
                call(s, term, tool, arguments, format, !no_check)
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
        Command::Prompt(mut args) => {
            let format = args.output.format();
            let name = std::mem::take(&mut args.name);
            args.name = split_server(name, &mut args.server);
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
        Command::Shell(mut args) => {
            by_name(&mut args.server, args.name.take())?;
            crate::shell::run(args.server, verbose).await
        }
        Command::Ping(mut args) => {
            let format = args.output.format();
            by_name(&mut args.server, args.name.take())?;
            with_session(&args.server, verbose, move |s, _| ping(s, format)).await
        }
        Command::Discover(mut args) => {
            by_name(&mut args.server, args.name.take())?;
            discover(&args.server, args.output.format(), verbose).await
        }
        Command::Serve(_)
        | Command::Proxy(_)
        | Command::Schema(_)
        | Command::Revisions
        | Command::Completions { .. }
        | Command::Servers(_)
        | Command::Install(_)
        | Command::Login(_)
        | Command::Logout(_)
        | Command::Methods { .. } => Err(Fail::other("not a client command")),
    }
}

/// The client this command presents to servers. Connecting may take `connect_budget`, by
/// default `--timeout`.
fn client(
    args: &ServerArgs,
    term: &Arc<Term>,
    connect_budget: Option<Duration>,
    roots: Option<Roots>,
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
    if let Some(roots) = roots {
        builder = builder.roots(roots);
    }
    if let Some(version) = args.protocol {
        builder = builder
            .protocol_version(version)
            .min_protocol_version(version);
    }
    Ok(builder.build())
}

async fn connect_failure(
    error: &ConnectError,
    target: &Target,
    guard: Guard,
    forced: Option<ProtocolVersion>,
    verbose: u8,
) -> Fail {
    // The server's stderr first: the child is gone before any follow-up check runs.
    let tail = guard.close_with_stderr().await;
    let mut message = crate::diagnose::connect_message(error, target, forced, verbose).await;
    if let Some(tail) = tail {
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

/// What a session is set up with besides the command line.
#[derive(Default)]
pub(crate) struct Setup {
    /// How long connecting may take (default: `--timeout`).
    pub connect_budget: Option<Duration>,
    /// The terminal side (default: stderr and stdin).
    pub term: Option<Arc<Term>>,
    /// The roots offered to the server (default: those of `--root`, if any).
    pub roots: Option<Roots>,
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
    let setup = Setup {
        connect_budget,
        ..Setup::default()
    };
    with_session_setup(args, verbose, setup, body).await
}

/// A root for a local path: its `file://` URI, named after its last component.
pub(crate) fn root_of(path: &std::path::Path) -> Result<Root, Fail> {
    let absolute = std::fs::canonicalize(path)
        .map_err(|e| Fail::usage(format!("root {}: {e}", path.display())))?;
    let mut uri = String::from("file://");
    for c in absolute.to_string_lossy().chars() {
        match c {
            ' ' => uri.push_str("%20"),
            '%' => uri.push_str("%25"),
            '#' => uri.push_str("%23"),
            '?' => uri.push_str("%3F"),
            '\\' => uri.push('/'),
            other => uri.push(other),
        }
    }
    let name = absolute
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    serde_json::from_value(json!({"uri": uri, "name": name}))
        .map_err(|e| Fail::other(format!("root {}: {e}", path.display())))
}

/// [`with_session`] with a [`Setup`].
pub(crate) async fn with_session_setup<F, Fut>(
    args: &ServerArgs,
    verbose: u8,
    setup: Setup,
    body: F,
) -> Result<Exit, Fail>
where
    F: FnOnce(ClientSession, Arc<Term>) -> Fut,
    Fut: std::future::Future<Output = Result<Exit, Fail>>,
{
    let connect_budget = setup.connect_budget;
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
    let term = setup.term.unwrap_or_else(|| Term::new(args.progress));
    let roots = match setup.roots {
        Some(roots) => Some(roots),
        None if args.roots.is_empty() => None,
        None => Some(Roots::new(
            args.roots
                .iter()
                .map(|p| root_of(p))
                .collect::<Result<Vec<_>, _>>()?,
        )),
    };
    let client = client(args, &term, connect_budget, roots)?;
    let opened = target::open(&target, verbose).await?;
    let session = match client.connect(opened.connection).await {
        Ok(session) => session,
        Err(error) => {
            return Err(
                connect_failure(&error, &target, opened.guard, args.protocol, verbose).await,
            );
        }
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
    let message = format!("{what}: {}", crate::diagnose::short(&chain(error)));
    match error {
        CallError::Closed(_) | CallError::Transport(_) => Fail::connect(message),
        _ => Fail::other(message),
    }
}

pub(crate) fn split_pair(text: &str) -> Result<(String, String), Fail> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(Fail::usage(format!("--arg `{text}` is not KEY=VALUE"))),
    }
}

/// The arguments of `call` before the tool's schema is known, and the output format.
pub(crate) struct CallInputs {
    pub base: Map<String, Value>,
    pub pairs: Vec<(String, String)>,
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
    Ok((
        CallInputs {
            base: base.unwrap_or_default(),
            pairs,
        },
        format,
    ))
}

pub(crate) fn to_json(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn str_field<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

pub(crate) async fn list(
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
            let table = Listing::of(*kind, &items);
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

/// How a kind of item is listed as text: tools and prompts as signatures, one per line with
/// the description's first line below; the rest as tables.
enum Listing {
    Signatures(Vec<(String, String)>),
    Table(Table),
}

impl Listing {
    fn of(kind: ListKind, items: &[Value]) -> Listing {
        let style = crate::sig::Style::new(crate::sig::stdout_colour());
        match kind {
            ListKind::Tools | ListKind::Prompts => Listing::Signatures(
                items
                    .iter()
                    .map(|item| {
                        let signature = if kind == ListKind::Tools {
                            crate::sig::tool(item, style)
                        } else {
                            crate::sig::prompt(item, style)
                        };
                        (signature, first_line(str_field(item, "description")))
                    })
                    .collect(),
            ),
            ListKind::Skills => Listing::Table(crate::skills::table(items)),
            ListKind::Resources | ListKind::Templates => {
                let mut table = if kind == ListKind::Resources {
                    Table::new(&["URI", "NAME", "MIME TYPE", "DESCRIPTION"])
                } else {
                    Table::new(&["URI TEMPLATE", "NAME", "MIME TYPE", "DESCRIPTION"])
                };
                let uri_key = if kind == ListKind::Resources {
                    "uri"
                } else {
                    "uriTemplate"
                };
                for item in items {
                    table.row(vec![
                        str_field(item, uri_key).unwrap_or_default().to_owned(),
                        str_field(item, "name").unwrap_or_default().to_owned(),
                        str_field(item, "mimeType").unwrap_or_default().to_owned(),
                        first_line(str_field(item, "description")),
                    ]);
                }
                Listing::Table(table)
            }
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Listing::Signatures(lines) => lines.is_empty(),
            Listing::Table(table) => table.is_empty(),
        }
    }

    fn render(&self) -> String {
        match self {
            Listing::Table(table) => table.render(),
            Listing::Signatures(lines) => {
                let mut text = String::new();
                for (signature, description) in lines {
                    text.push_str(signature);
                    text.push('\n');
                    if !description.is_empty() {
                        text.push_str("    ");
                        text.push_str(description);
                        text.push('\n');
                    }
                }
                text
            }
        }
    }
}

pub(crate) async fn call(
    session: ClientSession,
    term: Arc<Term>,
    tool: String,
    inputs: CallInputs,
    format: Format,
    check: bool,
) -> Result<Exit, Fail> {
    // The tool's input schema decides how `--arg` values are read and what is checked before
    // the call is sent; listing also lets the session check the result against the tool's
    // output schema.
    let tools = match session.list_all_tools().await {
        Ok(tools) => Some(tools),
        Err(error) => {
            tracing::debug!(error = %chain(&error), "tools/list failed; the arguments are not checked");
            None
        }
    };
    let input_schema = tools
        .as_ref()
        .and_then(|tools| tools.iter().find(|t| t.name == tool))
        .map(|t| to_json(&t.input_schema));
    if let (Some(tools), None, true) = (&tools, &input_schema, check) {
        let names = tools.iter().map(|t| t.name.as_str());
        return Err(Fail::usage(format!(
            "the server has no tool `{tool}`{}",
            crate::check::suggestion(&tool, names)
        )));
    }
    let arguments = crate::check::build(inputs.base, inputs.pairs, input_schema.as_ref())
        .map_err(Fail::usage)?;
    if let (Some(schema), true) = (&input_schema, check) {
        let problems = crate::check::problems(&tool, &arguments, schema);
        if !problems.is_empty() {
            return Err(Fail::usage(format!(
                "{}\n(--no-check sends the call as it is)",
                problems.join("\n")
            )));
        }
    }
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

pub(crate) async fn read(
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

pub(crate) async fn prompt(
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

pub(crate) async fn ping(session: ClientSession, format: Format) -> Result<Exit, Fail> {
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
    let protocol = str_field(init, "protocolVersion").unwrap_or("?").to_owned();
    describe_server(
        init,
        init.get("serverInfo"),
        ("protocol", protocol),
        "initialize",
    )
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
    describe_server(
        result,
        info,
        ("supported revisions", versions),
        "server/discover",
    )
}

/// The server as `initialize` or `server/discover` (`method`) describes it in `result`: its
/// `info`, the revisions row, its capabilities and its instructions.
fn describe_server(
    result: &Value,
    info: Option<&Value>,
    (revisions, versions): (&str, String),
    method: &str,
) -> String {
    let mut table = Table::new(&["", ""]).unlimited();
    table.row(vec!["server".into(), server_line(info)]);
    table.row(vec![revisions.into(), versions]);
    table.row(vec!["negotiated with".into(), method.into()]);
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
    fn call_arguments_merge_json_and_pairs() {
        let args = CallArgs {
            tool: "t".into(),
            args: vec!["b=2".into(), "c=x".into()],
            json: vec![r#"{"a":1,"b":1}"#.into(), String::new()],
            output: None,
            no_check: false,
            server: ServerArgs::default(),
        };
        let (inputs, format) = call_inputs(&args).expect("valid");
        assert_eq!(format, Format::Json, "a bare --json asks for JSON output");
        let arguments = crate::check::build(inputs.base, inputs.pairs, None).expect("valid");
        assert_eq!(Value::Object(arguments), json!({"a": 1, "b": 2, "c": "x"}));
    }

    #[test]
    fn json_arguments_must_be_an_object() {
        let args = CallArgs {
            tool: "t".into(),
            args: vec![],
            json: vec!["[1]".into()],
            output: None,
            no_check: false,
            server: ServerArgs::default(),
        };
        let fail = call_inputs(&args).err().expect("not an object");
        assert_eq!(fail.code, crate::EXIT_USAGE);
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

    #[test]
    fn initialize_is_described() {
        let text = describe_initialize(&json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"prompts": {}},
            "serverInfo": {"name": "demo", "version": "2.0"}
        }));
        assert!(text.contains("server           demo 2.0"), "{text}");
        assert!(text.contains("protocol         2025-06-18"), "{text}");
        assert!(text.contains("negotiated with  initialize"), "{text}");
        assert!(text.contains("capabilities     prompts"), "{text}");
        assert!(text.ends_with("prompts\n"), "{text}");
    }
}
