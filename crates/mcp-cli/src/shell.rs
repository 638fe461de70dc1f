//! `mcp shell`: one session, many commands, with history and tab completion.

use std::sync::{Arc, Mutex, PoisonError};

use mcp_client::{ClientSession, Roots};
use mcp_types::{Era, LoggingLevel, SubscriptionFilter};
use serde_json::{Map, Value, json};

use crate::args::{DescribeKind, Format, ListKind, ServerArgs};
use crate::client::{self, CallInputs, Setup, call_failure, split_pair};
use crate::lineedit::{Completer, Editor, Input, Screen, ScreenWriter, split};
use crate::term::Term;
use crate::{Exit, Fail};

const COMMANDS: &[&str] = &[
    "call",
    "complete",
    "describe",
    "exit",
    "help",
    "list",
    "log",
    "ping",
    "prompt",
    "read",
    "roots",
    "subscribe",
    "unsubscribe",
];

const HELP: &str = "\
commands:
  list [tools|prompts|resources|templates]   what the server offers
  describe tool|prompt|resource|template NAME
  call TOOL [KEY=VALUE ...] | call TOOL {JSON}
  read URI
  prompt NAME [KEY=VALUE ...]
  complete prompt NAME ARGUMENT [PREFIX]     argument completions (completion/complete)
  complete template URI ARGUMENT [PREFIX]
  subscribe [URI]        resource updates (and list changes) shown as they arrive
  unsubscribe URI
  roots list | roots add PATH | roots remove PATH
  log LEVEL              debug, info, notice, warning, error, critical, alert, emergency
  ping
  exit                   (or Ctrl-D)
Tab completes commands, tool, prompt and resource names, and argument names.";

/// What tab completion knows about the server.
#[derive(Default)]
struct Known {
    tools: Vec<(String, Vec<String>)>,
    /// Each tool's arguments with an `enum` (or a boolean type), and their values.
    values: Vec<(String, String, Vec<String>)>,
    prompts: Vec<(String, Vec<String>)>,
    resources: Vec<String>,
    templates: Vec<String>,
    /// [`Term::changes`] when this was fetched.
    generation: u64,
}

/// `mcp shell`.
pub async fn run(args: ServerArgs, verbose: u8) -> Result<Exit, Fail> {
    let screen = Arc::new(Screen::default());
    let term = Term::for_shell(Box::new(ScreenWriter(Arc::clone(&screen))));
    let roots = Roots::new(
        args.roots
            .iter()
            .map(|p| client::root_of(p))
            .collect::<Result<Vec<_>, _>>()?,
    );
    let setup = Setup {
        term: Some(Arc::clone(&term)),
        roots: Some(roots.clone()),
        ..Setup::default()
    };
    client::with_session_setup(&args, verbose, setup, move |session, term| {
        repl(session, term, roots, screen)
    })
    .await
}

async fn repl(
    session: ClientSession,
    term: Arc<Term>,
    roots: Roots,
    screen: Arc<Screen>,
) -> Result<Exit, Fail> {
    let known = Arc::new(Mutex::new(Known::default()));
    refresh(&session, &term, &known).await;
    let history = crate::configs::config_dir().map(|d| d.join("mcp").join("history"));
    let editor = Arc::new(Mutex::new(Editor::new(history, Arc::clone(&screen))));
    let completer: Completer = {
        let known = Arc::clone(&known);
        Arc::new(move |before: &str| complete_line(before, &known))
    };
    let prompt = format!("{}> ", session.server_info().name);
    term.say(&format!(
        "connected to {} {} (protocol {}); `help` lists the commands",
        session.server_info().name,
        session.server_info().version,
        session.protocol_version()
    ));
    let mut subscriptions = Subscriptions::default();
    loop {
        let generation = known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .generation;
        if term.changes() != generation {
            refresh(&session, &term, &known).await;
        }
        let input = {
            let editor = Arc::clone(&editor);
            let completer = Arc::clone(&completer);
            let prompt = prompt.clone();
            tokio::task::spawn_blocking(move || {
                editor
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .read_line(&prompt, &completer)
            })
            .await
            .unwrap_or(Input::Eof)
        };
        let line = match input {
            Input::Eof => break,
            Input::Interrupted => continue,
            Input::Line(line) => line,
        };
        if session.is_closed() {
            return Err(Fail::connect("the server closed the session"));
        }
        let words = match split(&line) {
            Ok(words) => words,
            Err(problem) => {
                term.say(&format!("error: {problem}"));
                continue;
            }
        };
        let Some((command, rest)) = words.split_first() else {
            continue;
        };
        if matches!(command.as_str(), "exit" | "quit") {
            break;
        }
        let outcome = execute(
            &session,
            &term,
            &roots,
            &mut subscriptions,
            command,
            rest,
            &line,
        )
        .await;
        match outcome {
            Ok(()) => {}
            Err(fail) if fail.code() == crate::EXIT_CONNECT && session.is_closed() => {
                return Err(fail);
            }
            Err(fail) => term.say(&format!("error: {}", fail.message())),
        }
        if command == "list" {
            refresh(&session, &term, &known).await;
        }
    }
    subscriptions.stop();
    Ok(Exit::Ok)
}

/// Fetches what tab completion offers.
async fn refresh(session: &ClientSession, term: &Term, known: &Mutex<Known>) {
    let generation = term.changes();
    let mut fresh = Known {
        generation,
        ..Known::default()
    };
    if session.offers("tools") {
        if let Ok(tools) = session.list_all_tools().await {
            for tool in &tools {
                let schema = client::to_json(&tool.input_schema);
                let properties = schema.get("properties").and_then(Value::as_object);
                for (name, property) in properties.into_iter().flatten() {
                    let values: Vec<String> = match property.get("enum").and_then(Value::as_array) {
                        Some(values) => values
                            .iter()
                            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                            .collect(),
                        None if crate::check::types_of(Some(property)) == ["boolean"] => {
                            vec!["true".to_owned(), "false".to_owned()]
                        }
                        None => continue,
                    };
                    fresh.values.push((tool.name.clone(), name.clone(), values));
                }
            }
            fresh.tools = tools
                .iter()
                .map(|t| {
                    let schema = client::to_json(&t.input_schema);
                    (t.name.clone(), crate::sig::property_order(&schema))
                })
                .collect();
        }
    }
    if session.offers("prompts") {
        if let Ok(prompts) = session.list_all_prompts().await {
            fresh.prompts = prompts
                .iter()
                .map(|p| {
                    let value = client::to_json(p);
                    let names = value
                        .get("arguments")
                        .and_then(Value::as_array)
                        .map(|args| {
                            args.iter()
                                .filter_map(|a| a.get("name").and_then(Value::as_str))
                                .map(str::to_owned)
                                .collect()
                        })
                        .unwrap_or_default();
                    (p.name.clone(), names)
                })
                .collect();
        }
    }
    if session.offers("resources") {
        if let Ok(resources) = session.list_all_resources().await {
            fresh.resources = resources.iter().map(|r| r.uri.clone()).collect();
        }
        if let Ok(templates) = session.list_all_resource_templates().await {
            fresh.templates = templates.iter().map(|t| t.uri_template.clone()).collect();
        }
    }
    *known.lock().unwrap_or_else(PoisonError::into_inner) = fresh;
}

/// Completions for the word before the cursor.
fn complete_line(before: &str, known: &Mutex<Known>) -> (usize, Vec<String>) {
    let start = before.rfind(' ').map_or(0, |at| at + 1);
    let words: Vec<&str> = before[..start].split_whitespace().collect();
    let known = known.lock().unwrap_or_else(PoisonError::into_inner);
    // `call TOOL key=<Tab>`: the values an `enum` (or a boolean) allows.
    if let (["call", tool, ..], Some((key, _))) =
        (words.as_slice(), before[start..].split_once('='))
    {
        let values = known
            .values
            .iter()
            .find(|(t, k, _)| t == tool && k == key)
            .map(|(_, _, values)| values.iter().map(|v| format!("{key}={v}")).collect())
            .unwrap_or_default();
        return (start, values);
    }
    let owned = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let names = |list: &[(String, Vec<String>)]| list.iter().map(|(n, _)| n.clone()).collect();
    let arguments = |list: &[(String, Vec<String>)], name: &str| {
        list.iter()
            .find(|(n, _)| n == name)
            .map(|(_, args)| args.iter().map(|a| format!("{a}=")).collect())
            .unwrap_or_default()
    };
    let candidates = match words.as_slice() {
        [] => owned(COMMANDS),
        ["call"] => names(&known.tools),
        ["call", tool, ..] => arguments(&known.tools, tool),
        ["prompt"] => names(&known.prompts),
        ["prompt", name, ..] => arguments(&known.prompts, name),
        ["read" | "subscribe" | "unsubscribe"] => known.resources.clone(),
        ["list"] => owned(&["tools", "prompts", "resources", "templates"]),
        ["describe"] => owned(&["tool", "prompt", "resource", "template"]),
        ["describe", "tool"] => names(&known.tools),
        ["describe", "prompt"] => names(&known.prompts),
        ["describe", "resource"] => known.resources.clone(),
        ["describe", "template"] => known.templates.clone(),
        ["complete"] => owned(&["prompt", "template"]),
        ["complete", "prompt"] => names(&known.prompts),
        ["complete", "template"] => known.templates.clone(),
        ["complete", "prompt", name] => known
            .prompts
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, args)| args.clone())
            .unwrap_or_default(),
        ["complete", "template", uri] => template_variables(uri),
        ["roots"] => owned(&["list", "add", "remove"]),
        ["log"] => owned(&[
            "debug",
            "info",
            "notice",
            "warning",
            "error",
            "critical",
            "alert",
            "emergency",
        ]),
        _ => Vec::new(),
    };
    (start, candidates)
}

/// The `{name}` variables of a URI template.
fn template_variables(template: &str) -> Vec<String> {
    template
        .split('{')
        .skip(1)
        .filter_map(|part| part.split('}').next())
        .flat_map(|names| {
            names
                .trim_start_matches(['+', '#', '/', '?', '&', '.', ';'])
                .split(',')
        })
        .map(|name| name.trim_end_matches('*').to_owned())
        .collect()
}

/// The listener of a stateless session's subscriptions (`subscriptions/listen`).
#[derive(Default)]
struct Subscriptions {
    uris: Vec<String>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Subscriptions {
    fn stop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }

    /// Listens again with the current set of URIs, and every list change.
    async fn listen(&mut self, session: &ClientSession) -> Result<(), Fail> {
        self.stop();
        let filter: SubscriptionFilter = serde_json::from_value(json!({
            "resourceSubscriptions": self.uris,
            "toolsListChanged": true,
            "promptsListChanged": true,
            "resourcesListChanged": true,
        }))
        .map_err(|e| Fail::other(format!("subscriptions/listen: {e}")))?;
        let mut subscription = session
            .listen(filter)
            .await
            .map_err(|e| call_failure("subscriptions/listen", &e))?;
        // What arrives is shown by the session's notification handler; the stream is only
        // kept flowing here.
        self.task = Some(tokio::spawn(async move {
            while subscription.recv().await.is_some() {}
        }));
        Ok(())
    }
}

async fn execute(
    session: &ClientSession,
    term: &Arc<Term>,
    roots: &Roots,
    subscriptions: &mut Subscriptions,
    command: &str,
    rest: &[String],
    line: &str,
) -> Result<(), Fail> {
    let session = session.clone();
    match (command, rest) {
        ("help", _) => term.say(HELP),
        ("ping", []) => {
            client::ping(session, Format::Text).await?;
        }
        ("list", []) => {
            client::list(session, None, Format::Text).await?;
        }
        ("list", [kind]) => {
            let kind = match kind.as_str() {
                "tools" => ListKind::Tools,
                "prompts" => ListKind::Prompts,
                "resources" => ListKind::Resources,
                "templates" => ListKind::Templates,
                "skills" => ListKind::Skills,
                other => return Err(Fail::usage(format!("cannot list `{other}`"))),
            };
            client::list(session, Some(kind), Format::Text).await?;
        }
        ("describe", [kind, name]) => {
            let kind = match kind.as_str() {
                "tool" => DescribeKind::Tool,
                "prompt" => DescribeKind::Prompt,
                "resource" => DescribeKind::Resource,
                "template" => DescribeKind::Template,
                other => return Err(Fail::usage(format!("cannot describe a `{other}`"))),
            };
            crate::describe::describe(session, kind, name.clone(), Format::Text).await?;
        }
        ("call", [tool, arguments @ ..]) => {
            // `call TOOL {json}`: the rest of the line is one JSON object.
            let after = line
                .trim_start()
                .strip_prefix("call")
                .map(str::trim_start)
                .and_then(|l| l.strip_prefix(tool.as_str()))
                .map(str::trim)
                .unwrap_or_default();
            let inputs = if after.starts_with('{') {
                match serde_json::from_str::<Value>(after) {
                    Ok(Value::Object(base)) => CallInputs {
                        base,
                        pairs: Vec::new(),
                    },
                    _ => return Err(Fail::usage(format!("`{after}` is not a JSON object"))),
                }
            } else {
                CallInputs {
                    base: Map::new(),
                    pairs: arguments
                        .iter()
                        .map(|a| split_pair(a))
                        .collect::<Result<_, _>>()?,
                }
            };
            client::call(
                session,
                Arc::clone(term),
                tool.clone(),
                inputs,
                Format::Text,
                true,
            )
            .await?;
        }
        ("read", [uri]) => {
            client::read(session, Arc::clone(term), uri.clone(), Format::Text).await?;
        }
        ("prompt", [name, arguments @ ..]) => {
            let pairs = arguments
                .iter()
                .map(|a| split_pair(a))
                .collect::<Result<Vec<_>, _>>()?;
            client::prompt(session, Arc::clone(term), name.clone(), pairs, Format::Text).await?;
        }
        ("complete", [kind, name, argument, value @ ..]) if value.len() <= 1 => {
            let reference = match kind.as_str() {
                "prompt" => json!({"type": "ref/prompt", "name": name}),
                "template" => json!({"type": "ref/resource", "uri": name}),
                other => return Err(Fail::usage(format!("cannot complete a `{other}`"))),
            };
            let params = serde_json::from_value(json!({
                "ref": reference,
                "argument": {"name": argument, "value": value.first().cloned().unwrap_or_default()}
            }))
            .map_err(|e| Fail::other(format!("completion/complete: {e}")))?;
            let result = session
                .complete(params)
                .await
                .map_err(|e| call_failure("completion/complete", &e))?;
            let value = client::to_json(&result);
            let values: Vec<&str> = value
                .pointer("/completion/values")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut text = values.join("\n");
            if !text.is_empty() {
                text.push('\n');
            }
            if value.pointer("/completion/hasMore") == Some(&Value::Bool(true)) {
                text.push_str("(more)\n");
            }
            crate::output::print(&text)?;
        }
        ("subscribe" | "unsubscribe", uris) if uris.len() <= 1 => {
            let adding = command == "subscribe";
            if session.era() == Era::Stateless {
                if let Some(uri) = uris.first() {
                    if adding {
                        if !subscriptions.uris.contains(uri) {
                            subscriptions.uris.push(uri.clone());
                        }
                    } else {
                        subscriptions.uris.retain(|u| u != uri);
                    }
                }
                subscriptions.listen(&session).await?;
            } else if let Some(uri) = uris.first() {
                let result = if adding {
                    session.subscribe(uri.clone()).await
                } else {
                    session.unsubscribe(uri.clone()).await
                };
                result.map_err(|e| call_failure(command, &e))?;
            }
            term.say(&match (adding, uris.first()) {
                (true, Some(uri)) => format!("subscribed to {uri}; list changes are shown too"),
                (true, None) => "list changes are shown as they arrive".to_owned(),
                (false, Some(uri)) => format!("unsubscribed from {uri}"),
                (false, None) => String::new(),
            });
        }
        ("roots", [action, paths @ ..]) => match (action.as_str(), paths) {
            ("list", []) => {
                let list = roots.get();
                if list.is_empty() {
                    term.say("no roots");
                }
                let mut text = String::new();
                for root in list {
                    text.push_str(&root.uri);
                    text.push('\n');
                }
                crate::output::print(&text)?;
            }
            ("add", [path]) => {
                let root = client::root_of(std::path::Path::new(path))?;
                let mut list = roots.get();
                if !list.iter().any(|r| r.uri == root.uri) {
                    term.say(&format!("added {}", root.uri));
                    list.push(root);
                    roots.set(list);
                }
            }
            ("remove", [path]) => {
                let uri = client::root_of(std::path::Path::new(path))
                    .map(|r| r.uri)
                    .unwrap_or_else(|_| path.clone());
                let mut list = roots.get();
                let before = list.len();
                list.retain(|r| r.uri != uri && &r.uri != path);
                if list.len() == before {
                    return Err(Fail::usage(format!("{path} is not a root")));
                }
                roots.set(list);
                term.say(&format!("removed {uri}"));
            }
            _ => {
                return Err(Fail::usage(
                    "roots list | roots add PATH | roots remove PATH",
                ));
            }
        },
        ("log", [level]) => {
            let level: LoggingLevel = serde_json::from_value(Value::String(level.clone()))
                .map_err(|_| Fail::usage(format!("unknown log level `{level}`")))?;
            session
                .set_logging_level(level)
                .await
                .map_err(|e| call_failure("logging/setLevel", &e))?;
            term.say(&format!(
                "log level {}",
                client::to_json(&level).as_str().unwrap_or("?")
            ));
        }
        _ => {
            let hint = crate::check::suggestion(command, COMMANDS.iter().copied());
            if COMMANDS.contains(&command) {
                return Err(Fail::usage(format!(
                    "`{command}` needs other arguments; `help` shows them"
                )));
            }
            return Err(Fail::usage(format!("unknown command `{command}`{hint}")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> Mutex<Known> {
        Mutex::new(Known {
            tools: vec![
                ("echo".into(), vec!["text".into()]),
                ("add".into(), vec!["a".into(), "b".into()]),
            ],
            values: vec![(
                "paint".into(),
                "colour".into(),
                vec!["red".into(), "green".into()],
            )],
            prompts: vec![("greeting".into(), vec!["name".into()])],
            resources: vec!["example://readme".into()],
            templates: vec!["example://items/{id}".into()],
            generation: 0,
        })
    }

    #[test]
    fn completion_follows_the_command() {
        let known = known();
        let (start, first) = complete_line("ca", &known);
        assert_eq!(start, 0);
        assert!(first.contains(&"call".to_owned()));
        assert_eq!(
            complete_line("call e", &known),
            (5, vec!["echo".into(), "add".into()])
        );
        assert_eq!(complete_line("call add a=1 ", &known).1, vec!["a=", "b="]);
        assert_eq!(complete_line("read ex", &known).1, vec!["example://readme"]);
        assert_eq!(
            complete_line("complete template example://items/{id} ", &known).1,
            vec!["id"]
        );
        assert_eq!(complete_line("prompt greeting ", &known).1, vec!["name="]);
        assert_eq!(
            complete_line("call paint colour=r", &known),
            (11, vec!["colour=red".to_owned(), "colour=green".to_owned()])
        );
        assert!(complete_line("call echo text=", &known).1.is_empty());
    }
}
