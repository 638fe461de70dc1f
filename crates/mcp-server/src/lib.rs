//! Model Context Protocol server SDK: register typed tools, resources and prompts once and serve
//! clients of every stateful protocol revision (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25)
//! over any transport.
//!
//! A tool is an ordinary async function whose argument type derives `Deserialize` and
//! `JsonSchema`; the input schema is generated from it, arguments are decoded into it straight
//! from the request (and checked by the JSON Schema validator, feature `validation`, when the
//! schema states constraints the type does not enforce; without the feature such a schema is
//! refused), and whatever the function returns is converted by [`IntoCallToolResult`]. Results
//! are projected to the client's negotiated revision, so handler code never branches on the
//! protocol version.
//!
//! Features: `stdio` (on by default) serves stdin/stdout and byte streams; `validation` holds the
//! JSON Schema validator that checks constraints types do not enforce and hand-written schemas
//! (see docs/server.md: without it a server refuses such schemas); `http`
//! checks the `Mcp-Param-*` headers of stateless Streamable HTTP requests; `tasks` serves tasks;
//! `skills` serves the Skills extension.
//!
//! With the feature `tasks`, a tool registered with `Tool::task_support` can answer a client of
//! the tasks extension (2026-07-28) or of 2025-11-25's tasks with a task handle and keep running
//! (see [`RequestContext::start_task`]); every other client gets the result of the same handler
//! as usual.
//!
//! The protocol types are those of `mcp-types` (re-exported as [`model`]), the same a client
//! built with `mcp-client` sees. Sessions run on the `mcp-jsonrpc` request engine over an
//! [`mcp_jsonrpc::Connection`]: [`Server::serve`] takes any connection, [`Server::serve_stdio`]
//! and [`Server::serve_io`] (feature `stdio`, on by default) build one from stdin/stdout or a
//! byte stream, [`Server::run_stdio`] serves stdin/stdout on a runtime of its own (a stdio
//! server's whole `main`), and [`Server::connection_handler`] plugs the server into the
//! Streamable HTTP service of `mcp-transport-http`.
//!
//! ```no_run
//! use mcp_server::{Server, Tool, ToolContext, model::Implementation};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Echo {
//!     /// The text to send back
//!     text: String,
//! }
//!
//! async fn echo(_cx: ToolContext, args: Echo) -> String {
//!     args.text
//! }
//!
//! fn main() -> std::io::Result<()> {
//!     let server = Server::builder(Implementation::new("echo-server", "1.0.0"))
//!         .tool(Tool::new("echo").description("Echo the text back"), echo)
//!         .build()
//!         .expect("valid server");
//!     server.run_stdio()?;
//!     Ok(())
//! }
//! ```
//!
//! See `docs/server.md` in the repository for the full guide.
#![deny(missing_docs)]

pub mod bus;
pub mod compat;
mod context;
mod dispatch;
mod error;
pub mod ext;
mod handler;
mod input;
#[cfg(feature = "otel")]
pub mod otel;
mod output;
mod registry;
mod schema;
mod server;
mod session;
#[cfg(feature = "skills")]
pub mod skills;
mod stateless;
#[cfg(feature = "tasks")]
mod tasks;
pub mod uri_template;
mod validate;

/// The protocol's types: the unified model of `mcp-types`, shared with `mcp-client`.
pub use mcp_types as model;

pub use bus::{ChangeBus, ServerChange};
pub use compat::LegacyMethods;
pub use context::{BoxFuture, Elicitation, RequestContext, ToolContext};
pub use error::{
    AskError, BuildError, NOT_INITIALIZED, ServeError, ToolError, resource_not_found, with_data,
};
pub use ext::{
    ContentBlockExt, CreateMessageRequestExt, CreateMessageResultExt, PromptMessageExt,
    ResourceContentsExt,
};
pub use handler::{Middleware, Next, Request, ServerHandler, completion};
pub use input::InputRequired;
pub use mcp_jsonrpc::{Connection, ErrorObject, Extensions, Id, RawJson};
pub use mcp_types::ProtocolVersion;
/// The JSON-RPC and MCP error codes (`mcp_types::error_codes`).
pub use mcp_types::error_codes as codes;
pub use mcp_types::wire::CacheHint;
pub use output::{IntoCallToolResult, IntoGetPromptResult, IntoReadResourceResult, Structured};
pub use registry::{NoArgs, Prompt, Resource, ResourceTemplate, Tool};
pub use server::{CacheHints, Server, ServerBuilder, ServerOptions};
pub use stateless::seal::{
    Binding, KeyError, RequestStateSealer, RequestStateSubject, SealError, SealedState, SealingKey,
    StateError,
};
#[cfg(feature = "tasks")]
pub use tasks::{
    LoadedTask, SharedTask, TaskBackend, TaskBackendError, TaskFuture, TaskOptions, TaskSignal,
    TaskSignalHandler, TaskSupport,
};
pub use uri_template::{TemplateVars, UriTemplate};

/// The `schemars` this crate derives schemas with (version 1), for naming its types
/// (`mcp_server::schemars::Schema`, `JsonSchema`).
///
/// The usual way to derive `JsonSchema` is a dependency of your own, `schemars = "1"`
/// (`0.8` derives the old crate's trait, which `.tool(..)` refuses with "the trait bound
/// `..: mcp_server::schemars::JsonSchema` is not satisfied"). To derive through this re-export instead, with no
/// `schemars` dependency, tell the derive where the crate is:
///
/// ```
/// #[derive(serde::Deserialize, mcp_server::schemars::JsonSchema)]
/// #[schemars(crate = "mcp_server::schemars")]
/// struct Greet {
///     name: String,
/// }
/// # let _ = mcp_server::Server::builder(mcp_server::model::Implementation::new("g", "1"))
/// #     .tool(mcp_server::Tool::new("greet"), |_cx: mcp_server::ToolContext, a: Greet| async move { a.name })
/// #     .build()
/// #     .unwrap();
/// ```
pub use schemars;
/// Re-exported for building JSON values and schemas.
pub use serde_json;

/// The extension traits that add constructors to the protocol types (`ContentBlock::image`,
/// `ResourceContentsKind::text`, `PromptMessage::user`, ...), and the names most handlers use.
///
/// ```
/// use mcp_server::prelude::*;
/// let block = ContentBlock::image([0x89, b'P', b'N', b'G'], "image/png");
/// # let _ = block;
/// ```
pub mod prelude {
    #[cfg(feature = "tasks")]
    pub use crate::TaskSupport;
    pub use crate::ext::{
        ContentBlockExt as _, CreateMessageRequestExt as _, CreateMessageResultExt as _,
        PromptMessageExt as _, ResourceContentsExt as _,
    };
    pub use crate::model::{
        CallToolResult, ContentBlock, CreateMessageRequestParams, Implementation, LoggingLevel,
        PromptMessage, ResourceContentsKind,
    };
    pub use crate::{
        Elicitation, NoArgs, Prompt, RequestContext, Resource, ResourceTemplate, Server,
        Structured, Tool, ToolContext, ToolError,
    };
}
