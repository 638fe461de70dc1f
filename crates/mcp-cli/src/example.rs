//! The bundled example server that `mcp serve` runs and that the client commands talk to when
//! no server is given.
//!
//! It shows one of each feature, written against `mcp-server`'s public API:
//!
//! | kind | name | what it does |
//! |---|---|---|
//! | tool | `echo` | `{text}`: answers one text block with the same text |
//! | tool | `add` | `{a, b}`: the sum, as structured output with a text fallback |
//! | tool | `fail` | `{message?}`: always fails with `isError` |
//! | tool | `countdown` | `{steps?, delay_ms?}`: reports progress and logs at every step |
//! | tool | `greet` | asks the user for a name and a language (elicitation) |
//! | tool | `ask_model` | `{question}`: asks the client's model (sampling) |
//! | resource | `example://readme` | a text document |
//! | resource | `example://pixel.png` | a one-pixel PNG (binary) |
//! | template | `example://items/{id}` | a JSON document per item id |
//! | prompt | `greeting` | `{name}`: a one-message prompt (with completion of `name`) |
//! | prompt | `review` | `{code, language?}`: a two-message prompt embedding the code |
//!
//! ```
//! let server = mcp_cli::example::server()?;
//! assert_eq!(server.info().name, "mcp-example");
//! # Ok::<(), mcp_server::BuildError>(())
//! ```

use std::time::Duration;

use mcp_server::LegacyMethods;
use mcp_server::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Most steps `countdown` runs.
pub const MAX_STEPS: u32 = 100;
/// Longest delay between two `countdown` steps, in milliseconds.
pub const MAX_DELAY_MS: u64 = 10_000;

/// A one-pixel PNG.
const PIXEL: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0xF8, 0xCF, 0xC0, 0xF0,
    0x1F, 0x00, 0x05, 0x00, 0x01, 0xFF, 0x89, 0x99, 0x3D, 0x1D, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
];

const README: &str = "\
This is the example server bundled with the `mcp` command.

Try:
  mcp list
  mcp call echo --arg text=hello
  mcp call add --arg a=2 --arg b=3
  mcp call countdown --arg steps=5
  mcp read example://items/42
  mcp prompt greeting --arg name=Ada
";

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
    /// Language of the greeting
    language: Language,
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
            let hello = match visitor.language {
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
    let request = CreateMessageRequestParams::user_text(args.question, 200);
    let answer = cx.sample("answer", request).await?;
    Ok(format!(
        "{} answered: {}",
        answer.model,
        answer.text().unwrap_or_default()
    ))
}

fn item(id: &str) -> String {
    serde_json::json!({ "id": id, "name": format!("item {id}") }).to_string()
}

/// Builds the example server. Every registration is static, so this fails only if the SDK
/// rejects one of them (the unit tests build it).
pub fn server() -> Result<Server, mcp_server::BuildError> {
    Server::builder(Implementation::new(
        "mcp-example",
        env!("CARGO_PKG_VERSION"),
    ))
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
    .prompt_completion("greeting", "name", |value, _context| async move {
        ["Ada", "Alan", "Grace", "Linus"]
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
    .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_server_builds() {
        let server = server().expect("valid registrations");
        assert_eq!(server.info().name, "mcp-example");
    }
}
