//! The command line.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};
use mcp_types::ProtocolVersion;

const AFTER_HELP: &str = "\
Servers:
  -- <command> [args]          a stdio server, started as a child process
  --url <url>                  a Streamable HTTP (or HTTP+SSE) server
  NAME, NAME:TOOL, --server N  a server of your MCP clients' configurations (mcp servers)
  --config <file> --server <n> an entry of an `mcpServers` or VS Code `servers` file
  (none)                       the bundled example server, in this process

Exit codes:
  0  success
  1  the server answered with an error, or something else failed
  2  usage error: bad arguments, unknown revision or type, unreadable configuration,
     or a call whose arguments do not fit the tool's schema
  3  the server could not be started or reached, or the connection broke
  4  the tool ran and reported an error (isError)

Examples:
  mcp list tools
  mcp describe tool add
  mcp call echo --arg text=hello
  mcp shell
  mcp list -- npx -y @modelcontextprotocol/server-everything
  mcp call add --arg a=1 --arg b=2 --url http://127.0.0.1:8080/mcp
  mcp servers
  mcp call weather:get_forecast --arg city=Paris
  mcp install weather --client cursor --dry-run -- node weather.js
  mcp login https://example.com/mcp
  mcp serve --http 127.0.0.1:8080
  mcp serve --skills ./skills
  mcp skill pdf-processing --file references/FORMS.md --url http://127.0.0.1:8080/mcp
  mcp schema 2025-11-25 Tool
  mcp completions bash

See docs/cli.md for every command.";

/// Talk to Model Context Protocol servers, serve the bundled example, bridge stdio and HTTP.
#[derive(Debug, Parser)]
#[command(
    name = "mcp",
    version,
    arg_required_else_help = true,
    after_help = AFTER_HELP,
    max_term_width = 100
)]
pub struct Cli {
    /// More diagnostics on stderr (-v, -vv, -vvv); RUST_LOG overrides
    #[arg(short, long, action = ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the server's tools, resources, resource templates and prompts
    List(ListArgs),
    /// Show one tool, resource, resource template or prompt in full: schemas, annotations, icons
    Describe(DescribeArgs),
    /// Call a tool and print its result
    Call(CallArgs),
    /// Read a resource and print its contents
    Read(ReadArgs),
    /// Get a prompt and print its messages
    Prompt(PromptArgs),
    /// Print a skill's manifest, or fetch one of its files verified (--file)
    Skill(SkillArgs),
    /// Keep one session open and type commands, with history and tab completion
    Shell(ShellArgs),
    /// Check that the server answers
    Ping(PingArgs),
    /// Show who the server is: revisions, capabilities, instructions
    Discover(PingArgs),
    /// The servers configured in the known MCP clients (Claude Desktop, Claude Code, Cursor,
    /// VS Code, Windsurf)
    Servers(ServersArgs),
    /// Add a server to an MCP client's configuration (--dry-run shows the change)
    Install(InstallArgs),
    /// Authorize this command with an HTTP server (OAuth); client commands then use the tokens
    Login(LoginArgs),
    /// Forget the tokens of an HTTP server
    Logout(LogoutArgs),
    /// Run the bundled example server on stdio, or on HTTP with --http
    Serve(ServeArgs),
    /// Expose a server over Streamable HTTP (--http), or on this process's stdio
    Proxy(ProxyArgs),
    /// Print the official JSON schema of a revision, or of one of its types
    Schema(SchemaArgs),
    /// The protocol revisions this SDK supports
    Revisions,
    /// Every method of the protocol, with its sender, types and revisions
    Methods {
        /// Only the methods of this revision
        #[arg(long, value_name = "REVISION", value_parser = parse_revision)]
        revision: Option<ProtocolVersion>,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// What `list` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListKind {
    /// Tools (`tools/list`)
    Tools,
    /// Resources (`resources/list`)
    Resources,
    /// Resource templates (`resources/templates/list`)
    Templates,
    /// Prompts (`prompts/list`)
    Prompts,
    /// Skills (`skills/list`, the Skills extension)
    Skills,
}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Readable text and aligned tables
    Text,
    /// The protocol's JSON
    Json,
}

#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Print JSON (the protocol's result) instead of text
    #[arg(long)]
    pub json: bool,
    /// Output format
    #[arg(short = 'o', long = "output", value_enum, value_name = "FORMAT")]
    pub output: Option<Format>,
}

impl OutputArgs {
    pub fn format(&self) -> Format {
        match (self.json, self.output) {
            (true, _) => Format::Json,
            (false, Some(format)) => format,
            (false, None) => Format::Text,
        }
    }
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// What to list (default: everything the server offers)
    #[arg(value_enum)]
    pub kind: Option<ListKind>,
    /// A server of the known client configurations, by name (see `mcp servers`)
    #[arg(value_name = "SERVER")]
    pub name: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub server: ServerArgs,
}

/// What `describe` describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DescribeKind {
    /// A tool, by name
    Tool,
    /// A resource, by URI or name
    Resource,
    /// A resource template, by URI template or name
    Template,
    /// A prompt, by name
    Prompt,
}

#[derive(Debug, Args)]
pub struct DescribeArgs {
    /// What to describe
    #[arg(value_enum)]
    pub kind: DescribeKind,
    /// Its name (or URI)
    pub name: String,
    /// A server of the known client configurations, by name (see `mcp servers`)
    #[arg(value_name = "SERVER")]
    pub server_name: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool's name; `SERVER:TOOL` picks a server of the known client configurations
    pub tool: String,
    /// An argument, KEY=VALUE, read by the tool's input schema: a string where it says string,
    /// yes/no for booleans, a bare value for an array is a one-element array (repeat --arg to
    /// add more); without a schema, JSON when it parses, else a string
    #[arg(short = 'a', long = "arg", value_name = "KEY=VALUE")]
    pub args: Vec<String>,
    /// With a value: every argument as one JSON object ('{"text":"hi"}'); --arg adds to it.
    /// Without a value: print the result as JSON
    #[arg(
        long = "json",
        value_name = "OBJECT",
        num_args = 0..=1,
        default_missing_value = "",
        action = ArgAction::Append
    )]
    pub json: Vec<String>,
    /// Output format
    #[arg(short = 'o', long = "output", value_enum, value_name = "FORMAT")]
    pub output: Option<Format>,
    /// Send the call without checking the tool's name and arguments against its schema first
    #[arg(long)]
    pub no_check: bool,
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Args)]
pub struct ReadArgs {
    /// The resource URI
    pub uri: String,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Args)]
pub struct PromptArgs {
    /// The prompt's name; `SERVER:PROMPT` picks a server of the known client configurations
    pub name: String,
    /// An argument, KEY=VALUE (prompt arguments are strings)
    #[arg(short = 'a', long = "arg", value_name = "KEY=VALUE")]
    pub args: Vec<String>,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Args)]
pub struct SkillArgs {
    /// The skill's name, or the URI of its SKILL.md
    pub name: String,
    /// Fetch this file of the skill (a path in the skill's directory, or its URI), checked
    /// against the manifest's size and digest, and print it
    #[arg(long, value_name = "PATH")]
    pub file: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Args)]
pub struct PingArgs {
    /// A server of the known client configurations, by name (see `mcp servers`)
    #[arg(value_name = "SERVER")]
    pub name: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Args)]
pub struct ShellArgs {
    /// A server of the known client configurations, by name (see `mcp servers`)
    #[arg(value_name = "SERVER")]
    pub name: Option<String>,
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Args)]
pub struct ServersArgs {
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// The server's name in the configuration
    pub name: String,
    /// The client whose configuration gets the server
    #[arg(long, value_enum)]
    pub client: crate::configs::ClientApp,
    /// Write to this file instead of the client's usual one
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A remote server's URL instead of a command
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub url: Option<String>,
    /// An HTTP header for --url, 'Name: value' (repeatable)
    #[arg(short = 'H', long = "header", value_name = "HEADER", requires = "url")]
    pub headers: Vec<String>,
    /// The server speaks the 2024-11-05 HTTP+SSE transport
    #[arg(long, requires = "url")]
    pub sse: bool,
    /// An environment variable for the command, KEY=VALUE (repeatable)
    #[arg(long = "env", value_name = "KEY=VALUE", conflicts_with = "url")]
    pub env: Vec<String>,
    /// Print the change instead of writing it
    #[arg(long)]
    pub dry_run: bool,
    /// Replace a server of the same name
    #[arg(long)]
    pub force: bool,
    /// The server's command and its arguments, after `--`
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The server's HTTP endpoint
    pub url: String,
    /// A scope to ask for (repeatable; default: what the server names)
    #[arg(long = "scope", value_name = "SCOPE")]
    pub scopes: Vec<String>,
    /// A client registered with the authorization server beforehand (default: dynamic
    /// registration)
    #[arg(long, value_name = "ID")]
    pub client_id: Option<String>,
    /// The secret of --client-id, for a confidential client
    #[arg(long, value_name = "SECRET", requires = "client_id")]
    pub client_secret: Option<String>,
    /// Print the authorization address without opening a browser
    #[arg(long)]
    pub no_browser: bool,
    /// The loopback port the browser returns to (0: any free port)
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    pub port: u16,
}

#[derive(Debug, Args)]
pub struct LogoutArgs {
    /// The server's HTTP endpoint
    #[arg(required_unless_present = "all")]
    pub url: Option<String>,
    /// Forget every stored token
    #[arg(long, conflicts_with = "url")]
    pub all: bool,
}

/// Which server a client command talks to, and how.
#[derive(Debug, Args, Clone, Default)]
pub struct ServerArgs {
    /// The server's HTTP endpoint (Streamable HTTP, falling back to HTTP+SSE)
    #[arg(long, value_name = "URL", conflicts_with_all = ["config", "command"])]
    pub url: Option<String>,
    /// An HTTP header for --url, 'Name: value' (repeatable)
    #[arg(short = 'H', long = "header", value_name = "HEADER", requires = "url")]
    pub headers: Vec<String>,
    /// Use the 2024-11-05 HTTP+SSE transport for --url
    #[arg(long, requires = "url")]
    pub sse: bool,
    /// A configuration file, in the `mcpServers` format or VS Code's `servers` format
    #[arg(long, value_name = "FILE", conflicts_with = "command")]
    pub config: Option<PathBuf>,
    /// The server to use from --config (needed when it names more than one); without --config,
    /// a server of the known client configurations (see `mcp servers`)
    #[arg(long, value_name = "NAME", conflicts_with_all = ["url", "command"])]
    pub server: Option<String>,
    /// An environment variable for a stdio server, KEY=VALUE (repeatable)
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Speak exactly this protocol revision
    #[arg(long, value_name = "REVISION", value_parser = parse_revision)]
    pub protocol: Option<ProtocolVersion>,
    /// Seconds to wait for each answer (0: forever)
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub timeout: u64,
    /// Ask the server for log messages at this level and above (debug, info, notice, warning,
    /// error, ...)
    #[arg(long, value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Offer this directory (or file) to the server as a root (repeatable)
    #[arg(long = "root", value_name = "PATH")]
    pub roots: Vec<PathBuf>,
    /// Show the progress line of long calls even when stderr is not a terminal (there one line
    /// per update)
    #[arg(long)]
    pub progress: bool,
    /// A stdio server: the command and its arguments, after `--`
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio (every revision on one
    /// endpoint); port 0 picks a free port, printed on stderr
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Also serve the skills in DIR (the Skills extension): every directory with a SKILL.md
    #[arg(long, value_name = "DIR")]
    pub skills: Option<PathBuf>,
    #[command(flatten)]
    pub http_options: HttpServeArgs,
    #[command(flatten)]
    pub replicas: crate::replicas::ReplicaArgs,
}

/// Options of the HTTP endpoint `serve` and `proxy` open.
#[derive(Debug, Args, Clone)]
pub struct HttpServeArgs {
    /// The endpoint's path
    #[arg(long, value_name = "PATH", default_value = "/mcp")]
    pub path: String,
    /// Most sessions at once
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub max_sessions: usize,
    /// Also serve the 2024-11-05 HTTP+SSE transport at /sse and /messages
    #[arg(long)]
    pub legacy_sse: bool,
}

#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// Listen for Streamable HTTP on ADDR (one upstream connection per session); without it,
    /// serve on this process's stdio
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    #[command(flatten)]
    pub http_options: HttpServeArgs,
    /// The upstream server (none: the bundled example)
    #[command(flatten)]
    pub upstream: ServerArgs,
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// The revision (see `mcp revisions`)
    #[arg(value_parser = parse_revision)]
    pub revision: ProtocolVersion,
    /// One type: prints it with every definition it refers to
    #[arg(value_name = "TYPE")]
    pub type_name: Option<String>,
    /// List the revision's type names instead
    #[arg(long, conflicts_with = "type_name")]
    pub list: bool,
    /// Where <revision>/schema.json live (default: $MCP_SCHEMA_DIR, ./schema, ../shared/schema)
    #[arg(long, value_name = "DIR")]
    pub schema_dir: Option<PathBuf>,
}

/// A revision date, with the known ones in the error.
pub fn parse_revision(text: &str) -> Result<ProtocolVersion, String> {
    text.parse::<ProtocolVersion>().map_err(|_| {
        let known: Vec<&str> = ProtocolVersion::ALL.iter().map(|v| v.as_str()).collect();
        format!("unknown revision `{text}` (known: {})", known.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("mcp").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn call_json_takes_an_optional_object() {
        let cli = parse(&["call", "echo", "--json", r#"{"text":"hi"}"#]).expect("valid");
        let Command::Call(call) = cli.command else {
            panic!("not a call")
        };
        assert_eq!(call.json, vec![r#"{"text":"hi"}"#.to_owned()]);

        let cli = parse(&["call", "echo", "--arg", "text=hi", "--json"]).expect("valid");
        let Command::Call(call) = cli.command else {
            panic!("not a call")
        };
        assert_eq!(
            call.json,
            vec![String::new()],
            "a bare --json asks for JSON output"
        );
        assert_eq!(call.args, vec!["text=hi".to_owned()]);

        let cli = parse(&["call", "echo", "--json", "--", "node", "server.js"]).expect("valid");
        let Command::Call(call) = cli.command else {
            panic!("not a call")
        };
        assert_eq!(call.json, vec![String::new()]);
        assert_eq!(call.server.command, vec!["node", "server.js"]);
    }

    #[test]
    fn servers_are_chosen_one_way() {
        assert!(parse(&["list", "--url", "http://x/mcp", "--", "node"]).is_err());
        assert!(parse(&["list", "--config", "c.json", "--", "node"]).is_err());
        assert!(
            parse(&["list", "--server", "a", "--url", "http://x/mcp"]).is_err(),
            "a name or a URL, not both"
        );
        assert!(
            parse(&["list", "-H", "A: b"]).is_err(),
            "--header needs --url"
        );
        let cli = parse(&["list", "tools", "--", "npx", "-y", "pkg", "--flag"]).expect("valid");
        let Command::List(list) = cli.command else {
            panic!("not a list")
        };
        assert_eq!(list.kind, Some(ListKind::Tools));
        assert_eq!(list.server.command, vec!["npx", "-y", "pkg", "--flag"]);
    }

    #[test]
    fn skill_commands_parse() {
        let cli = parse(&["skill", "pdf", "--file", "a/b.md", "--json"]).expect("valid");
        let Command::Skill(skill) = cli.command else {
            panic!("not a skill")
        };
        assert_eq!(skill.name, "pdf");
        assert_eq!(skill.file.as_deref(), Some("a/b.md"));
        assert_eq!(skill.output.format(), Format::Json);
        let cli = parse(&["list", "skills"]).expect("valid");
        let Command::List(list) = cli.command else {
            panic!("not a list")
        };
        assert_eq!(list.kind, Some(ListKind::Skills));
        let cli = parse(&["serve", "--skills", "dir"]).expect("valid");
        let Command::Serve(serve) = cli.command else {
            panic!("not serve")
        };
        assert_eq!(serve.skills, Some(PathBuf::from("dir")));
    }

    #[test]
    fn revisions_are_checked() {
        assert!(parse(&["schema", "2025-06-18"]).is_ok());
        let error = parse(&["schema", "1999-01-01"]).expect_err("unknown");
        assert!(error.to_string().contains("2025-06-18"), "{error}");
        assert_eq!(error.exit_code(), 2);
    }
}
