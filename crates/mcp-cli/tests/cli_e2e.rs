//! The `mcp` command end to end: the real binary against the bundled example server (in
//! process, on stdio, over Streamable HTTP, through `mcp proxy`) and against the reference
//! `@modelcontextprotocol/server-everything` from npm (installed by `scripts/test`), checking
//! output and exit codes.
//!
//! The npm tests fail, never skip, when `node` or the modules are missing.

use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::cli::{Home, Listening, Run, mcp, run};
use serde_json::Value;

/// A local port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    drop(listener);
    port
}

/// The reference server-everything's script, checked once per test process.
fn everything_server() -> &'static str {
    static SCRIPT: OnceLock<String> = OnceLock::new();
    SCRIPT.get_or_init(|| {
        mcp_tests::interop::reference_server("server-everything")
            .to_string_lossy()
            .into_owned()
    })
}

/// `mcp call echo --arg text=TEXT server...` (the bundled server's `echo`, through the server
/// `server` names) prints `TEXT` and exits 0.
fn echoes(text: &str, server: &[&str]) {
    let arg = format!("text={text}");
    let mut args = vec!["call", "echo", "--arg", arg.as_str()];
    args.extend_from_slice(server);
    let echo = run(&args);
    echo.expect_code(0);
    assert_eq!(echo.stdout, format!("{text}\n"), "{args:?}");
}

/// `mcp call countdown` (two steps) at `url` exits 0 and logs its steps on stderr.
fn counts_down(url: &str) -> Run {
    let args = [
        "call",
        "countdown",
        "--arg",
        "steps=2",
        "--arg",
        "delay_ms=1",
        "--url",
        url,
    ];
    let countdown = run(&args);
    countdown.expect_code(0);
    assert!(
        countdown.stderr.contains("[info] step 2 of 2"),
        "log messages reach stderr: {countdown:?}"
    );
    countdown
}

/// `mcp args... -- node <server-everything>`: the reference server on stdio.
fn with(args: &[&str]) -> Run {
    let mut all: Vec<&str> = args.to_vec();
    all.extend_from_slice(&["--", "node", everything_server()]);
    run(&all)
}

#[test]
fn the_bundled_server_answers_out_of_the_box() {
    let list = run(&["list", "tools"]);
    list.expect_code(0);
    let lines: Vec<&str> = list.stdout.lines().collect();
    let echo = lines
        .iter()
        .position(|l| *l == "echo(text: string)")
        .unwrap_or_else(|| panic!("echo as a signature: {list:?}"));
    assert_eq!(lines.get(echo + 1).copied(), Some("    Echo the text back"));
    assert!(
        !list.stdout.contains('\x1b'),
        "no colour into a pipe: {list:?}"
    );

    echoes("hello", &[]);
    // Forced onto the stateless revision: per-request `_meta`, no `initialize`.
    echoes("stateless", &["--protocol", "2026-07-28"]);

    let json = run(&["call", "add", "--arg", "a=2", "--arg", "b=3", "--json"]);
    json.expect_code(0);
    assert_eq!(json.json()["structuredContent"]["sum"], 5.0);

    let read = run(&["read", "example://items/7"]);
    read.expect_code(0);
    let item: Value = serde_json::from_str(&read.stdout).expect("the item is JSON");
    assert_eq!(item["id"], "7");

    let prompt = run(&["prompt", "greeting", "--arg", "name=Ada"]);
    prompt.expect_code(0);
    assert!(prompt.stdout.starts_with("user: "), "{prompt:?}");
    assert!(prompt.stdout.contains("Ada"), "{prompt:?}");

    // The bundled example speaks 2026-07-28, which has no `ping`: liveness is checked with what
    // the revision offers (`server/discover`).
    let pong = run(&["ping"]);
    pong.expect_code(0);
    assert!(pong.stdout.starts_with("pong from "), "{pong:?}");
    assert!(pong.stdout.contains("2026-07-28"), "{pong:?}");

    let everything = run(&["list", "--json"]);
    everything.expect_code(0);
    let listed = everything.json();
    for key in ["tools", "prompts", "resources", "resourceTemplates"] {
        assert!(
            listed[key].as_array().is_some_and(|a| !a.is_empty()),
            "{key}: {listed}"
        );
    }
}

#[test]
fn exit_codes_tell_what_went_wrong() {
    let failed = run(&["call", "fail", "--arg", "message=boom"]);
    failed.expect_code(4);
    assert!(
        failed.stderr.contains("boom"),
        "the tool's error on stderr: {failed:?}"
    );
    assert!(failed.stdout.is_empty(), "{failed:?}");

    let failed_json = run(&["call", "fail", "--json"]);
    failed_json.expect_code(4);
    assert_eq!(failed_json.json()["isError"], true);

    let unknown = run(&["call", "no_such_tool"]);
    unknown.expect_code(2);
    assert!(unknown.stderr.contains("no_such_tool"), "{unknown:?}");
    // Unchecked, the server has the final say.
    run(&["call", "no_such_tool", "--no-check"]).expect_code(1);

    run(&["call"]).expect_code(2);
    run(&["call", "echo", "--arg", "no-equals-sign"]).expect_code(2);
    run(&["call", "echo", "--json", "[1, 2]"]).expect_code(2);
    run(&["list", "--protocol", "1999-01-01"]).expect_code(2);
    run(&["frobnicate"]).expect_code(2);

    let url = format!("http://127.0.0.1:{}/mcp", closed_port());
    let unreachable = run(&["ping", "--url", &url]);
    unreachable.expect_code(3);
    assert!(unreachable.stderr.contains(&url), "{unreachable:?}");

    let missing = run(&["ping", "--", "/nonexistent/mcp-server-binary"]);
    missing.expect_code(3);
    assert!(missing.stderr.contains("cannot start"), "{missing:?}");

    run(&["--help"]).expect_code(0).expect_stdout("Exit codes");
}

#[test]
fn stdio_servers_are_started_and_shut_down() {
    let mcp = mcp().to_string_lossy().into_owned();
    echoes("over stdio", &["--", &mcp, "serve"]);

    // A server that dies during the handshake: exit 3, with its stderr in the message.
    let dying = run(&[
        "ping",
        "--",
        "sh",
        "-c",
        "echo 'no such config' >&2; exit 1",
    ]);
    dying.expect_code(3);
    assert!(dying.stderr.contains("no such config"), "{dying:?}");
}

#[test]
fn reference_everything_server_over_stdio() {
    let tools = with(&["list", "tools"]);
    tools.expect_code(0);
    for name in ["echo", "get-sum", "get-tiny-image"] {
        assert!(
            tools
                .stdout
                .lines()
                .any(|l| l.starts_with(&format!("{name}("))),
            "{name} listed: {tools:?}"
        );
    }

    let echo = with(&["call", "echo", "--arg", "message=hi there"]);
    echo.expect_code(0);
    assert_eq!(echo.stdout.trim(), "Echo: hi there");

    // `message` is a string in the tool's schema: `123` stays the string "123".
    let digits = with(&["call", "echo", "--arg", "message=123"]);
    digits.expect_code(0);
    assert_eq!(digits.stdout.trim(), "Echo: 123");

    let sum = with(&["call", "get-sum", "--arg", "a=2", "--arg", "b=40", "--json"]);
    sum.expect_code(0);
    let text = sum.json()["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(text.contains("42"), "{sum:?}");

    let image = with(&["call", "get-tiny-image"]);
    image.expect_code(0);
    assert!(image.stdout.contains("[image image/png"), "{image:?}");

    let invalid = with(&["call", "get-sum", "--arg", "a=x", "--arg", "b=1"]);
    assert!(
        matches!(invalid.code, Some(1 | 4)),
        "bad arguments are an error (JSON-RPC or isError): {invalid:?}"
    );

    let unknown = with(&["call", "no-such-tool"]);
    unknown.expect_code(2);
    let unchecked = with(&["call", "no-such-tool", "--no-check"]);
    assert!(matches!(unchecked.code, Some(1 | 4)), "{unchecked:?}");

    let resources = with(&["list", "resources", "--json"]);
    resources.expect_code(0);
    let first = resources.json()[0]["uri"]
        .as_str()
        .expect("a resource uri")
        .to_owned();
    with(&["read", &first]).expect_code(0);

    let pong = with(&["ping"]);
    pong.expect_code(0);
    assert!(pong.stdout.starts_with("pong from "), "{pong:?}");

    let discovered = with(&["discover", "--json"]);
    discovered.expect_code(0);
    let info = discovered.json();
    assert!(
        info["serverInfo"]["name"].is_string() && info["capabilities"]["tools"].is_object(),
        "{info}"
    );

    // Every session revision, forced.
    for revision in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let forced = with(&["ping", "--protocol", revision]);
        forced.expect_code(0);
        assert!(forced.stdout.contains(revision), "{revision}: {forced:?}");
    }
}

#[test]
fn the_bundled_server_over_http_and_through_proxies() {
    let served = Listening::start(&["serve", "--http", "127.0.0.1:0"]);
    let url = served.url.as_str();
    assert!(url.ends_with("/mcp"), "{url}");

    echoes("over http", &["--url", url]);
    run(&["call", "fail", "--url", url]).expect_code(4);
    let countdown = counts_down(url);
    assert!(
        countdown.stdout.contains("liftoff after 2 steps"),
        "{countdown:?}"
    );

    run(&["discover", "--url", url])
        .expect_code(0)
        .expect_stdout("mcp-example");

    // An HTTP server exposed on stdio, used as a stdio server.
    let mcp = mcp().to_string_lossy().into_owned();
    echoes("http on stdio", &["--", &mcp, "proxy", "--url", url]);

    // A stdio server exposed over HTTP, one child per session.
    let proxied = Listening::start(&["proxy", "--http", "127.0.0.1:0", "--", &mcp, "serve"]);
    echoes("stdio on http", &["--url", &proxied.url]);
    run(&["call", "fail", "--url", &proxied.url]).expect_code(4);
    counts_down(&proxied.url);
}

#[test]
fn schemas_and_tables_need_no_server() {
    run(&["revisions"])
        .expect_code(0)
        .expect_stdout("2026-07-28  stateless");

    let methods = run(&["methods", "--revision", "2024-11-05"]);
    methods.expect_code(0);
    assert!(methods.stdout.contains("initialize"), "{methods:?}");
    assert!(
        !methods.stdout.contains("elicitation/create"),
        "{methods:?}"
    );

    let tool = run(&["schema", "2025-11-25", "Tool"]);
    tool.expect_code(0);
    let schema = tool.json();
    assert_eq!(schema["title"], "Tool");
    assert!(schema["properties"]["inputSchema"].is_object(), "{schema}");
    assert!(
        schema["$defs"]["Icon"].is_object(),
        "referenced types come along"
    );

    let unknown = run(&["schema", "2025-11-25", "NoSuchType"]);
    unknown.expect_code(2);
}

/// The reference server-everything (the TypeScript SDK's server) on Streamable HTTP, on a free
/// port; killed on drop.
struct NodeHttp {
    child: Child,
    url: String,
}

impl NodeHttp {
    fn start() -> NodeHttp {
        let script = everything_server();
        let port = closed_port();
        let child = Command::new("node")
            .args([script, "streamableHttp"])
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start node");
        let server = NodeHttp {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "server-everything did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }
}

impl Drop for NodeHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_typescript_http_server_without_noise() {
    let server = NodeHttp::start();
    let url = server.url.as_str();
    // The discovery probe's refusal (an error without a request id, which answers the probe)
    // is expected: no warning.
    let tools = run(&["list", "tools", "--url", url]);
    tools.expect_code(0);
    assert!(tools.stdout.contains("get-sum("), "{tools:?}");
    assert!(
        !tools.stderr.contains("WARN") && !tools.stderr.contains("without a request id"),
        "no warning by default: {tools:?}"
    );
    let described = run(&["describe", "tool", "get-structured-content", "--url", url]);
    described.expect_code(0);
    assert!(
        described.stdout.starts_with(
            r#"get-structured-content(location: "New York"|"Chicago"|"Los Angeles") -> {"#
        ),
        "{described:?}"
    );
    for part in ["readOnlyHint: true", "input schema:", "output schema:"] {
        assert!(described.stdout.contains(part), "{part}: {described:?}");
    }
    // `-v` still shows it, as the probe's answer.
    let verbose = run(&["-v", "ping", "--url", url]);
    verbose.expect_code(0);
    assert!(
        verbose.stderr.contains("falling back to initialize")
            && verbose.stderr.contains("Server not initialized"),
        "-v shows the refusal: {verbose:?}"
    );
    // Forcing the stateless revision on a server that does not speak it: said in words, with
    // what the server offers instead.
    let forced = run(&["ping", "--url", url, "--protocol", "2026-07-28"]);
    forced.expect_code(3);
    assert!(
        forced.stderr.contains("does not speak 2026-07-28"),
        "{forced:?}"
    );
    assert!(forced.stderr.contains("it offers 2025-"), "{forced:?}");
    assert!(
        !forced.stderr.contains("-32"),
        "no JSON-RPC codes: {forced:?}"
    );
    assert!(
        !forced.stderr.contains("\\\""),
        "no escaped JSON: {forced:?}"
    );
}

#[test]
fn a_refused_connection_is_said_in_words() {
    let url = format!("http://127.0.0.1:{}/mcp", closed_port());
    for command in ["ping", "list"] {
        let refused = run(&[command, "--url", &url]);
        refused.expect_code(3);
        assert!(
            refused
                .stderr
                .contains(&format!("connection refused at {url}")),
            "{refused:?}"
        );
        assert!(!refused.stderr.contains("-32603"), "{refused:?}");
    }
}

#[test]
fn piped_lists_are_never_cut() {
    let script = everything_server();
    let listed = run(&["list", "tools", "--", "node", script]);
    listed.expect_code(0);
    let json = run(&["list", "tools", "--json", "--", "node", script]);
    json.expect_code(0);
    assert!(
        !listed.stdout.contains('…'),
        "nothing shortened: {listed:?}"
    );
    // Every description's first line appears whole, however long.
    let tools = json.json();
    let long = tools
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["description"].as_str())
        .map(|d| d.lines().next().unwrap_or_default().trim().to_owned())
        .filter(|d| d.chars().count() > 80)
        .collect::<Vec<_>>();
    assert!(
        !long.is_empty(),
        "the reference server has long descriptions"
    );
    for description in long {
        assert!(
            listed.stdout.contains(&description),
            "`{description}` whole: {listed:?}"
        );
    }
}

#[test]
fn tools_read_as_signatures_and_describe_shows_everything() {
    let tools = run(&["list", "tools"]);
    tools.expect_code(0);
    assert!(
        tools
            .stdout
            .lines()
            .any(|l| l == "add(a: number, b: number) -> {sum: number}"),
        "{tools:?}"
    );
    // Optional arguments in brackets.
    assert!(
        tools
            .stdout
            .lines()
            .any(|l| l.starts_with("fail([message: ")),
        "{tools:?}"
    );

    let add = run(&["describe", "tool", "add"]);
    add.expect_code(0);
    assert!(
        add.stdout
            .starts_with("add(a: number, b: number) -> {sum: number}\n"),
        "{add:?}"
    );
    for part in [
        "readOnlyHint: true",
        "input schema:",
        "output schema:",
        "The first addend.",
    ] {
        assert!(add.stdout.contains(part), "{part}: {add:?}");
    }
    let json = run(&["describe", "tool", "add", "--json"]);
    json.expect_code(0);
    assert_eq!(json.json()["outputSchema"]["required"][0], "sum");

    let prompt = run(&["describe", "prompt", "review"]);
    prompt.expect_code(0);
    assert!(
        prompt.stdout.starts_with("review(code, [language])\n"),
        "{prompt:?}"
    );
    assert!(prompt.stdout.contains("code (required)"), "{prompt:?}");

    run(&["describe", "resource", "example://readme"])
        .expect_code(0)
        .expect_stdout("text/plain");
    let template = run(&["describe", "template", "item"]);
    template.expect_code(0);
    assert!(
        template.stdout.starts_with("example://items/{id}\n"),
        "{template:?}"
    );

    let typo = run(&["describe", "tool", "ad"]);
    typo.expect_code(2);
    assert!(typo.stderr.contains("did you mean `add`?"), "{typo:?}");
}

#[test]
fn arguments_are_checked_before_the_call() {
    let typo = run(&["call", "ech", "--arg", "text=hi"]);
    typo.expect_code(2);
    assert!(
        typo.stderr.contains("no tool `ech`; did you mean `echo`?"),
        "{typo:?}"
    );
    let missing = run(&["call", "add", "--arg", "a=1"]);
    missing.expect_code(2);
    assert!(
        missing.stderr.contains("needs argument b: number"),
        "{missing:?}"
    );
    let misnamed = run(&["call", "echo", "--arg", "txt=hi"]);
    misnamed.expect_code(2);
    assert!(
        misnamed.stderr.contains("did you mean `text`?"),
        "{misnamed:?}"
    );
    // Numbers by the schema's type; a string argument keeps its digits as text.
    let sum = run(&["call", "add", "--arg", "a=2", "--arg", "b=0.5", "--json"]);
    sum.expect_code(0);
    assert_eq!(sum.json()["structuredContent"]["sum"], 2.5);
    echoes("007", &[]);
}

#[test]
fn reference_servers_get_checked_and_coerced_arguments() {
    // Enum values are checked, and the allowed ones named.
    let wrong = with(&["call", "get-annotated-message", "--arg", "messageType=info"]);
    wrong.expect_code(2);
    assert!(
        wrong
            .stderr
            .contains("allowed values: error, success, debug"),
        "{wrong:?}"
    );
    // `yes` is a boolean where the schema says so: the image comes along.
    let image = with(&[
        "call",
        "get-annotated-message",
        "--arg",
        "messageType=success",
        "--arg",
        "includeImage=yes",
    ]);
    image.expect_code(0);
    assert!(image.stdout.contains("[image image/png"), "{image:?}");
    // What the command does not check, the server does; its error is shown.
    let invalid = with(&["call", "get-sum", "--arg", "a=x", "--arg", "b=1"]);
    invalid.expect_code(4);
    assert!(invalid.stderr.contains("expected number"), "{invalid:?}");

    // A bare value for an array argument is a one-element array (server-filesystem's
    // `read_multiple_files(paths: string[])`).
    let filesystem = mcp_tests::interop::reference_server("server-filesystem");
    let dir = Home::new("coerce");
    let file = dir.write("note.txt", "coerced into an array");
    let fs_script = filesystem.to_string_lossy().into_owned();
    let dir_text = dir.path().to_string_lossy().into_owned();
    let paths = format!("paths={}", file.display());
    let read = run(&[
        "call",
        "read_multiple_files",
        "--arg",
        &paths,
        "--",
        "node",
        &fs_script,
        &dir_text,
    ]);
    drop(dir);
    read.expect_code(0);
    assert!(read.stdout.contains("coerced into an array"), "{read:?}");
}

#[test]
fn completion_scripts_and_forced_progress() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef mcp"),
        ("fish", "complete -c mcp"),
    ] {
        let script = run(&["completions", shell]);
        script.expect_code(0);
        assert!(script.stdout.contains(marker), "{shell}: {script:?}");
        assert!(script.stdout.contains("describe"), "{shell}: {script:?}");
    }
    run(&["completions", "tcsh"]).expect_code(2);

    let args = [
        "call",
        "countdown",
        "--arg",
        "steps=3",
        "--arg",
        "delay_ms=1",
    ];
    let quiet = run(&args);
    quiet.expect_code(0);
    assert!(!quiet.stderr.contains("progress "), "{quiet:?}");
    let mut forced: Vec<&str> = args.to_vec();
    forced.push("--progress");
    let forced = run(&forced);
    forced.expect_code(0);
    assert!(forced.stderr.contains("progress 3/3"), "{forced:?}");
    assert!(
        !forced.stderr.contains('\x1b'),
        "plain lines off a terminal: {forced:?}"
    );
}

#[test]
fn servers_are_found_in_client_configs_and_used_by_name() {
    let home = Home::new("configs");
    let mcp = serde_json::to_string(&mcp().to_string_lossy()).expect("JSON string");
    // Cursor and Claude Desktop: `mcpServers`; VS Code: `servers` with `type`; Windsurf:
    // `serverUrl`; a project's `.mcp.json` (Claude Code).
    home.write(
        ".cursor/mcp.json",
        &format!(r#"{{"mcpServers": {{"bundled": {{"command": {mcp}, "args": ["serve"]}}}}}}"#),
    );
    home.write(
        ".config/Code/User/mcp.json",
        &format!(
            r#"{{"inputs": [], "servers": {{"from-vscode": {{"type": "stdio", "command": {mcp}, "args": ["serve"]}}}}}}"#
        ),
    );
    home.write(
        ".codeium/windsurf/mcp_config.json",
        r#"{"mcpServers": {"remote": {"serverUrl": "http://127.0.0.1:9/mcp"}}}"#,
    );
    home.write(
        ".config/Claude/claude_desktop_config.json",
        r#"{"mcpServers": {"desktop": {"command": "node", "args": ["weather.js"]}}}"#,
    );
    home.write(
        "project/.mcp.json",
        r#"{"mcpServers": {"local": {"command": "python", "args": ["-m", "srv"]}}}"#,
    );

    let servers = home.run(&["servers"]);
    servers.expect_code(0);
    for (name, client) in [
        ("bundled", "Cursor"),
        ("from-vscode", "VS Code"),
        ("remote", "Windsurf"),
        ("desktop", "Claude Desktop"),
        ("local", "Claude Code"),
    ] {
        assert!(
            servers
                .stdout
                .lines()
                .any(|l| l.starts_with(&format!("{name} ")) && l.contains(client)),
            "{name} from {client}: {servers:?}"
        );
    }
    let json = home.run(&["servers", "--json"]);
    json.expect_code(0);
    let remote = json
        .json()
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["name"] == "remote")
        .cloned()
        .expect("remote listed");
    assert_eq!(remote["target"], "http://127.0.0.1:9/mcp");
    assert_eq!(remote["transport"], "http");

    // Client commands take a server by name.
    home.run(&["list", "tools", "bundled"])
        .expect_code(0)
        .expect_stdout("echo(text: string)");
    let call = home.run(&["call", "from-vscode:echo", "--arg", "text=by name"]);
    call.expect_code(0);
    assert_eq!(call.stdout, "by name\n");
    let flag = home.run(&["ping", "--server", "bundled"]);
    flag.expect_code(0);
    let typo = home.run(&["ping", "bundeld"]);
    typo.expect_code(2);
    assert!(typo.stderr.contains("did you mean `bundled`?"), "{typo:?}");
}

#[test]
fn install_writes_one_entry_and_dry_run_only_shows_it() {
    let home = Home::new("install");
    let cursor = home.write(
        ".cursor/mcp.json",
        r#"{"zeta": true, "mcpServers": {"old": {"command": "old-server"}}, "alpha": [1, 2]}"#,
    );
    let before = std::fs::read_to_string(&cursor).expect("read");

    let dry = home.run(&[
        "install",
        "weather",
        "--client",
        "cursor",
        "--dry-run",
        "--env",
        "KEY=v",
        "--",
        "node",
        "weather.js",
    ]);
    dry.expect_code(0);
    assert!(
        dry.stdout
            .contains(&format!("would add `weather` in {}", cursor.display())),
        "{dry:?}"
    );
    assert!(dry.stdout.contains("+   \"command\": \"node\","), "{dry:?}");
    assert_eq!(
        std::fs::read_to_string(&cursor).expect("read"),
        before,
        "a dry run writes nothing"
    );

    home.run(&[
        "install",
        "weather",
        "--client",
        "cursor",
        "--env",
        "KEY=v",
        "--",
        "node",
        "weather.js",
    ])
    .expect_code(0);
    let after = std::fs::read_to_string(&cursor).expect("read");
    let value: Value = serde_json::from_str(&after).expect("still JSON");
    assert_eq!(value["mcpServers"]["weather"]["command"], "node");
    assert_eq!(value["mcpServers"]["weather"]["args"][0], "weather.js");
    assert_eq!(value["mcpServers"]["weather"]["env"]["KEY"], "v");
    assert_eq!(value["mcpServers"]["old"]["command"], "old-server");
    // The other members stay where they were.
    let order: Vec<usize> = ["\"zeta\"", "\"mcpServers\"", "\"alpha\""]
        .iter()
        .map(|k| after.find(k).expect("member kept"))
        .collect();
    assert!(order[0] < order[1] && order[1] < order[2], "{after}");

    // Installing over an existing name needs --force.
    home.run(&["install", "weather", "--client", "cursor", "--", "other"])
        .expect_code(2);

    // VS Code's format, a remote server; then found by `mcp servers`.
    home.run(&[
        "install",
        "web",
        "--client",
        "vscode",
        "--url",
        "http://127.0.0.1:9/mcp",
    ])
    .expect_code(0);
    let vscode: Value = serde_json::from_str(
        &std::fs::read_to_string(home.path().join(".config/Code/User/mcp.json")).expect("created"),
    )
    .expect("JSON");
    assert_eq!(vscode["servers"]["web"]["type"], "http");
    let listed = home.run(&["servers"]);
    assert!(
        listed
            .stdout
            .lines()
            .any(|l| l.starts_with("web ") && l.contains("VS Code")),
        "{listed:?}"
    );
    assert!(
        listed.stdout.lines().any(|l| l.starts_with("weather ")),
        "{listed:?}"
    );
}

#[test]
fn roots_are_offered_with_root() {
    let dir = std::env::temp_dir()
        .canonicalize()
        .expect("canonical temp dir");
    let dir_text = dir.to_string_lossy().into_owned();
    let none = run(&["call", "list_roots"]);
    assert!(
        !none.stdout.contains(&format!("file://{dir_text}")),
        "no roots unless asked: {none:?}"
    );
    let listed = run(&["call", "list_roots", "--root", &dir_text]);
    listed.expect_code(0);
    assert!(
        listed.stdout.contains(&format!("file://{dir_text}")),
        "{listed:?}"
    );
    run(&["call", "list_roots", "--root", "/no/such/dir/anywhere"]).expect_code(2);
}
