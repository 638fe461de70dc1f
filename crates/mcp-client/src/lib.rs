//! Model Context Protocol client: sessions with version negotiation, typed calls, client-side
//! features (sampling, elicitation, roots) and a multi-server [`Host`].
//!
//! * [`Client::builder`] sets who the client is and which server requests it answers
//!   ([`ClientBuilder::on_sample`], [`ClientBuilder::on_elicit`], [`ClientBuilder::roots`]); the
//!   capabilities it declares follow from those.
//! * [`Client::connect`] negotiates over any [`mcp_jsonrpc::Connection`]: `server/discover` for
//!   a stateless (2026-07-28) session, falling back to `initialize` for older servers, and
//!   returns a [`ClientSession`] with typed calls for every server feature. On a stateless
//!   session every request carries its `_meta`, and `input_required` answers are resolved with
//!   the same handlers that answer a session-era server's requests.
//! * [`ClientSession::call_tool_as_task`] runs a tool call as a task, in the form of the
//!   negotiated revision (2025-11-25 task-augmented requests, or the 2026-07-28 tasks
//!   extension), followed with [`ClientSession::get_task`] and
//!   [`ClientSession::task_result`].
//! * [`Host`] keeps one session per server of an `mcpServers` configuration
//!   ([`config::HostConfig`]) and routes calls by collision-free names.
//!
//! See `docs/client.md` for a guide.
#![deny(missing_docs)]

mod cache;
mod client;
pub mod config;
pub mod elicit;
mod error;
mod handler;
mod host;
mod incoming;
mod lifecycle;
mod listen;
mod mrtr;
pub mod names;
mod notify;
#[cfg(feature = "otel")]
pub mod otel;
mod rpc;
mod session;
#[cfg(feature = "skills")]
pub mod skills;
mod tasks;

pub use client::{Client, ClientBuilder, latest_session_version};
pub use error::{CallError, ConnectError};
pub use handler::{
    BoxFuture, ElicitationAnswer, ElicitationHandler, ElicitationRequest, HandlerError, Roots,
    SamplingHandler,
};
pub use host::{
    Connector, DefaultConnector, Host, HostItem, Listing, ServerProcess, ServerStatus, Transport,
};
pub use listen::Subscription;
pub use mrtr::Outcome;
pub use notify::{Notifications, ServerNotification};
pub use rpc::Progress;
pub use session::ClientSession;
pub use tasks::{Task, TaskPage, TaskStart, TaskStatus};

/// The guide in `docs/client.md`, whose examples are compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/client.md")]
pub struct ClientGuide;
