//! The example MCP server: one of each feature of the protocol, written against `mcp-server`'s
//! public API. The `mcp` command serves it (`mcp serve`, and in process when no server is
//! given), `mcp-server`'s `everything` example serves it on stdio, and the SDK's cross-crate
//! tests drive it on every transport and revision.
//!
//! | kind | name | what it does |
//! |---|---|---|
//! | tool | `echo` | `{text}`: answers one text block with the same text |
//! | tool | `add` | `{a, b}`: the sum, as structured output with a text fallback |
//! | tool | `fail` | `{message?}`: always fails with `isError` |
//! | tool | `countdown` | `{steps?, delay_ms?}`: reports progress and logs at every step; cancellable |
//! | tool | `greet` | asks the user for a name and, optionally, a language (elicitation) |
//! | tool | `ask_model` | `{question}`: asks the client's model (sampling) |
//! | tool | `list_roots` | lists the client's roots, one URI a line |
//! | tool | `mixed` | answers with every kind of content (text, image, audio, resource, link) |
//! | tool | `add_tool` | registers the tool `late` at run time (`tools/list_changed`) |
//! | tool | `touch` | marks `example://readme` as updated (for subscribers) |
//! | resource | `example://readme` | a text document |
//! | resource | `example://pixel.png` | a one-pixel PNG (binary) |
//! | template | `example://items/{id}` | a JSON document per item id (with completion of `id`) |
//! | prompt | `greeting` | `{name}`: a one-message prompt (with completion of `name`) |
//! | prompt | `review` | `{code, language?}`: a two-message prompt embedding the code |
//! | prompt | `describe_pixel` | no arguments: a prompt with an image |
//!
//! It also answers the `mcp/`-prefixed legacy method names ([`mcp_server::LegacyMethods`]).
//!
//! ```
//! let server = mcp_example::server()?;
//! assert_eq!(server.info().name, mcp_example::NAME);
//! # Ok::<(), mcp_server::BuildError>(())
//! ```
#![deny(missing_docs)]

use std::time::Duration;

use mcp_server::prelude::*;
use mcp_server::{BuildError, LegacyMethods, ServerBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The server's name in its `serverInfo`.
pub const NAME: &str = "mcp-example";

/// Most steps `countdown` runs.
pub const MAX_STEPS: u32 = 100;
/// Longest delay between two `countdown` steps, in milliseconds.
pub const MAX_DELAY_MS: u64 = 10_000;
/// The `maxTokens` of the sampling request `ask_model` sends.
pub const ASK_MODEL_MAX_TOKENS: i64 = 200;

/// The text of `example://readme`.
pub const README: &str = "\
This is the example server bundled with the `mcp` command.

Try:
  mcp list
  mcp call echo --arg text=hello
  mcp call add --arg a=2 --arg b=3
  mcp call countdown --arg steps=5
  mcp read example://items/42
  mcp prompt greeting --arg name=Ada
";

/// A one-pixel PNG: `example://pixel.png`, and the image of `mixed` and `describe_pixel`.
pub const PIXEL: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0xF8, 0xCF, 0xC0, 0xF0,
    0x1F, 0x00, 0x05, 0x00, 0x01, 0xFF, 0x89, 0x99, 0x3D, 0x1D, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
];

/// The names `greeting`'s `name` argument completes to.
const NAMES: [&str; 4] = ["Ada", "Alan", "Grace", "Linus"];

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: f64,
    /// The second addend.
    b: f64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    /// `a + b`.
    sum: f64,
}

#[derive(Deserialize, JsonSchema)]
struct FailArgs {
    /// The error message (default: "this tool always fails").
    message: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct CountdownArgs {
    /// Number of steps (default 3, at most 100).
    steps: Option<u32>,
    /// Milliseconds between steps (default 200, at most 10000).
    delay_ms: Option<u64>,
}

#[derive(Deserialize, JsonSchema)]
struct QuestionArgs {
    /// What to ask the model.
    question: String,
}

/// The form `greet` asks the user to fill in.
#[derive(Deserialize, JsonSchema)]
struct Visitor {
    /// Your name
    name: String,
    /// Language of the greeting (default: English)
    language: Option<Language>,
}

#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Language {
    English,
    French,
    German,
}

#[derive(Deserialize, JsonSchema)]
struct GreetingArgs {
    /// Who to greet.
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct ReviewArgs {
    /// The code to review.
    code: String,
    /// Its programming language.
    language: Option<String>,
}

#[derive(Deserialize)]
struct ItemVars {
    id: String,
}

async fn echo(_cx: ToolContext, args: EchoArgs) -> String {
    args.text
}

async fn add(_cx: ToolContext, args: AddArgs) -> Structured<Sum> {
    Structured(Sum {
        sum: args.a + args.b,
    })
}

async fn fail(_cx: ToolContext, args: FailArgs) -> Result<String, ToolError> {
    Err(ToolError::execution(
        args.message
            .unwrap_or_else(|| "this tool always fails".to_owned()),
    ))
}

async fn countdown(cx: ToolContext, args: CountdownArgs) -> Result<String, ToolError> {
    let steps = args.steps.unwrap_or(3).min(MAX_STEPS);
    let delay = Duration::from_millis(args.delay_ms.unwrap_or(200).min(MAX_DELAY_MS));
    for done in 1..=steps {
        tokio::select! {
            () = cx.cancelled() => return Err(ToolError::execution("cancelled")),
            () = tokio::time::sleep(delay) => {}
        }
        let left = steps - done;
        let message = format!("{left} to go");
        cx.progress(f64::from(done), Some(f64::from(steps)), Some(&message))
            .await;
        cx.log(LoggingLevel::Info, format!("step {done} of {steps}"))
            .await;
    }
    Ok(format!("liftoff after {steps} steps"))
}

async fn greet(cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    match cx.elicit::<Visitor>("visitor", "Who is visiting?").await? {
        Elicitation::Accepted(visitor) => {
            let hello = match visitor.language.unwrap_or(Language::English) {
                Language::English => "Hello",
                Language::French => "Bonjour",
                Language::German => "Hallo",
            };
            Ok(format!("{hello}, {}!", visitor.name))
        }
        Elicitation::Declined => Ok("You declined to say who you are.".to_owned()),
        Elicitation::Cancelled => Ok("Greeting cancelled.".to_owned()),
    }
}

async fn ask_model(cx: ToolContext, args: QuestionArgs) -> Result<String, ToolError> {
    let request = CreateMessageRequestParams::user_text(args.question, ASK_MODEL_MAX_TOKENS);
    let answer = cx.sample("answer", request).await?;
    Ok(format!(
        "{} answered: {}",
        answer.model,
        answer.text().unwrap_or_default()
    ))
}

async fn list_roots(cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    let roots = cx.roots("roots").await?;
    Ok(roots
        .iter()
        .map(|root| root.uri.as_str())
        .collect::<Vec<_>>()
        .join("\n"))
}

async fn mixed(_cx: ToolContext, _args: NoArgs) -> Vec<ContentBlock> {
    vec![
        ContentBlock::text("an image, a sound, a resource and a link"),
        ContentBlock::image(PIXEL, "image/png"),
        ContentBlock::audio(b"RIFF\0\0\0\0WAVE", "audio/wav"),
        ContentBlock::embedded(
            ResourceContentsKind::text("example://readme", README).with_mime_type("text/plain"),
        ),
        ContentBlock::resource_link("example://readme", "readme"),
    ]
}

async fn add_tool(cx: ToolContext, _args: NoArgs) -> Result<&'static str, ToolError> {
    cx.server()
        .add_tool(
            Tool::new("late").description("Added at run time"),
            |_cx: ToolContext, _args: NoArgs| async { "late tool" },
        )
        .map_err(ToolError::execution)?;
    Ok("added tool `late`")
}

async fn touch(cx: ToolContext, _args: NoArgs) -> &'static str {
    cx.server().notify_resource_updated("example://readme");
    "touched example://readme"
}

fn item(id: &str) -> String {
    serde_json::json!({ "id": id, "name": format!("item {id}") }).to_string()
}

/// Builds the example server. Every registration is static, so this fails only if the SDK
/// rejects one of them (the tests build it).
pub fn server() -> Result<Server, BuildError> {
    builder().build()
}

/// The example server's builder, with everything registered: add to it (`mcp serve --skills`
/// adds skills) before building.
pub fn builder() -> ServerBuilder {
    Server::builder(Implementation::new(NAME, env!("CARGO_PKG_VERSION")))
        .instructions("The example server bundled with the `mcp` command: one of each feature.")
        .middleware(LegacyMethods)
        .tool(
            Tool::new("echo")
                .description("Echo the text back")
                .read_only(),
            echo,
        )
        .tool(
            Tool::new("add")
                .title("Add")
                .description("Add two numbers (structured output)")
                .read_only(),
            add,
        )
        .tool(
            Tool::new("fail").description("Always fails with isError"),
            fail,
        )
        .tool(
            Tool::new("countdown").description("Counts down, reporting progress and logging"),
            countdown,
        )
        .tool(
            Tool::new("greet").description("Asks who you are, then greets you (elicitation)"),
            greet,
        )
        .tool(
            Tool::new("ask_model").description("Asks the client's model a question (sampling)"),
            ask_model,
        )
        .tool(
            Tool::new("list_roots").description("Lists the client's roots"),
            list_roots,
        )
        .tool(
            Tool::new("mixed").description("Answers with every kind of content"),
            mixed,
        )
        .tool(
            Tool::new("add_tool").description("Registers the tool `late` at run time"),
            add_tool,
        )
        .tool(
            Tool::new("touch").description("Marks example://readme as updated"),
            touch,
        )
        .resource(
            Resource::new("example://readme", "readme")
                .description("What this server offers")
                .mime_type("text/plain"),
            |_cx| async { README },
        )
        .resource(
            Resource::new("example://pixel.png", "pixel")
                .description("A one-pixel PNG")
                .mime_type("image/png"),
            |_cx| async { PIXEL.to_vec() },
        )
        .resource_template(
            ResourceTemplate::new("example://items/{id}", "item")
                .description("An item by id")
                .mime_type("application/json"),
            |_cx, vars: ItemVars| async move { item(&vars.id) },
        )
        .prompt(
            Prompt::new("greeting").description("Greets someone"),
            |_cx, args: GreetingArgs| async move {
                format!("Write a short, warm greeting for {}.", args.name)
            },
        )
        .prompt(
            Prompt::new("review").description("Asks for a code review"),
            |_cx, args: ReviewArgs| async move {
                let language = args.language.unwrap_or_else(|| "the".to_owned());
                vec![
                    PromptMessage::user(ContentBlock::text(format!(
                        "Review this {language} code for bugs and style:"
                    ))),
                    PromptMessage::user(ContentBlock::embedded(
                        ResourceContentsKind::text("example://review/code", args.code)
                            .with_mime_type("text/plain"),
                    )),
                ]
            },
        )
        .prompt(
            Prompt::new("describe_pixel").description("Asks to describe an image"),
            |_cx, _args: NoArgs| async {
                vec![
                    PromptMessage::user(ContentBlock::image(PIXEL, "image/png")),
                    PromptMessage::user(ContentBlock::text("Describe this image.")),
                ]
            },
        )
        .prompt_completion("greeting", "name", |value, _context| async move {
            NAMES
                .into_iter()
                .filter(|name| name.to_lowercase().starts_with(&value.to_lowercase()))
                .map(str::to_owned)
                .collect()
        })
        .template_completion("example://items/{id}", "id", |value, _context| async move {
            (1..=5)
                .map(|n| n.to_string())
                .filter(|id| id.starts_with(&value))
                .collect()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_server_builds() {
        let server = server().expect("valid registrations");
        assert_eq!(server.info().name, NAME);
    }
}
