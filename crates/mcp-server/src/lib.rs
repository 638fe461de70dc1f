//! Model Context Protocol server SDK: register typed tools, resources and prompts once and serve
//! clients of every stateful protocol revision (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25).
//!
//! A tool is an ordinary async function whose argument type derives `Deserialize` and
//! `JsonSchema`; the input schema is generated from it, arguments are validated against it, and
//! whatever the function returns is converted by [`IntoCallToolResult`]. Results are projected to
//! the client's negotiated revision, so handler code never branches on the protocol version.
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
//! #[tokio::main]
//! async fn main() -> std::io::Result<()> {
//!     let server = Server::builder(Implementation::new("echo-server", "1.0.0"))
//!         .tool(Tool::new("echo").description("Echo the text back"), echo)
//!         .build()
//!         .expect("valid server");
//!     server.serve_stdio().await
//! }
//! ```
//!
//! See `docs/server.md` in the repository for the full guide.
#![deny(missing_docs)]

pub mod compat;
mod context;
mod error;
mod handler;
pub mod model;
mod output;
mod project;
mod registry;
mod schema;
mod server;
mod session;
// Wired into request handling by the dual-era server; until then only the sealer is public.
#[allow(dead_code)]
mod stateless;
pub mod uri_template;
mod validate;

pub use compat::LegacyMethods;
pub use context::{BoxFuture, Extensions, RequestContext, ToolContext};
pub use error::{BuildError, CallError, ErrorData, ToolError, codes};
pub use handler::{
    CallToolParams, CompleteParams, CompletionArgument, CompletionContext, CompletionReference,
    GetPromptParams, Middleware, Next, Page, Request, ServerHandler, resource_not_found,
};
pub use output::{IntoCallToolResult, IntoGetPromptResult, IntoReadResourceResult, Structured};
pub use registry::{NoArgs, Prompt, Resource, ResourceTemplate, Tool};
pub use server::{Server, ServerBuilder, ServerOptions};
pub use stateless::mrtr::InputRequired;
pub use stateless::seal::{
    Binding, KeyError, RequestStateSealer, SealError, SealedState, SealingKey, StateError,
};
pub use uri_template::{TemplateVars, UriTemplate};

/// Re-exported so handler code can derive `JsonSchema` without naming the version.
pub use schemars;
/// Re-exported for building JSON values and schemas.
pub use serde_json;

impl Server {
    /// Serves one session over a reader and a writer carrying newline-delimited JSON-RPC (a pipe,
    /// a socket, an in-memory duplex). Returns when the reader reaches EOF, after in-flight
    /// requests were cancelled and queued messages flushed.
    pub async fn serve_io<R, W>(&self, reader: R, writer: W) -> std::io::Result<()>
    where
        R: tokio::io::AsyncRead + Unpin + Send,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        session::serve_io(self.clone(), reader, writer).await
    }

    /// Serves one session on this process's stdin and stdout. Log with `tracing` to stderr:
    /// stdout carries protocol messages only. EOF on stdin ends the session.
    pub async fn serve_stdio(&self) -> std::io::Result<()> {
        self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await
    }
}
