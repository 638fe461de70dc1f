//! JSON-RPC 2.0 as the Model Context Protocol restricts it: messages, framing codecs, batches and
//! the transport-agnostic request engine shared by clients and servers.
//!
//! # Layers
//!
//! - **Messages** ([`Message`], [`Request`], [`Notification`], [`Response`], [`Id`],
//!   [`ErrorObject`], [`codes`]): ids are strings or integers (never `null`), a response carries
//!   exactly one of a result or an error. Params, results and error data stay raw JSON
//!   ([`RawValue`](serde_json::value::RawValue), and [`RawJson`] for results) until a handler
//!   asks for a typed value ([`Request::params_as`], [`from_raw`]), and decoding a frame is one
//!   pass of `serde_json`. A handler's result is serialized once ([`RawJson::serialize`]) and
//!   copied into its frame.
//! - **Frames** ([`Inbound`], [`Frame`], [`FrameError`]): a frame is one message or a batch
//!   (2025-03-26). Bad input becomes a recoverable [`FrameError`] that carries its answer
//!   (`-32700` for bad JSON, `-32600` for JSON that is not a message, `id: null` unless the id
//!   was readable).
//! - **Codecs** ([`codec`]): newline-delimited, `Content-Length`, auto-detecting and SSE, all
//!   `tokio_util::codec` pairs with a bounded frame size and resynchronisation after bad frames.
//! - **Connections** ([`Connection`], [`memory_pair`]): what transports hand to the engine, a
//!   stream of [`Incoming`] frames and a sink of [`Outbound`] frames. Outbound frames name the
//!   inbound request they belong to, so the HTTP transport can route them.
//! - **Engine** ([`Engine`], [`Peer`], [`Handler`]): id allocation, the pending-request map,
//!   timeouts reset by progress, cancellation in both directions, bounded concurrency with
//!   backpressure, wire-order notifications, the batch policy of the negotiated revision, and
//!   shutdown that fails pending calls with the transport's reason. Every request reaches its
//!   handler through the engine, whether the engine read it or a transport serving requests
//!   in its own task handed it over ([`Inlet`]).
//!
//! # Example: a client and a server in memory
//!
//! ```
//! use mcp_jsonrpc::{
//!     Engine, ErrorObject, Handler, NotificationContext, Notification, Request, RequestContext,
//!     RawJson, RequestOptions, memory_pair,
//! };
//! use serde_json::json;
//!
//! struct Server;
//!
//! impl Handler for Server {
//!     async fn handle_request(
//!         &self,
//!         req: Request,
//!         cx: RequestContext,
//!     ) -> Result<RawJson, ErrorObject> {
//!         match req.method.as_str() {
//!             "tools/call" => {
//!                 #[derive(serde::Deserialize)]
//!                 struct Args { name: String }
//!                 let args: Args = req.params_as()?;
//!                 // Notifications sent through the context's peer are tagged with this request.
//!                 cx.peer()
//!                     .notify_with("notifications/message", &json!({"level": "info", "data": "called"}))
//!                     .await
//!                     .map_err(ErrorObject::internal_error)?;
//!                 RawJson::serialize(&json!({"content": [{"type": "text", "text": format!("hi {}", args.name)}]}))
//!                     .map_err(ErrorObject::internal_error)
//!             }
//!             other => Err(ErrorObject::method_not_found(other)),
//!         }
//!     }
//! }
//!
//! struct Client;
//!
//! impl Handler for Client {
//!     async fn handle_notification(&self, n: Notification, _cx: NotificationContext) {
//!         assert_eq!(n.method, "notifications/message");
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let (client_side, server_side) = memory_pair(32);
//! let (_server, server_task) = Engine::builder().spawn(server_side, Server);
//! let (client, _client_task) = Engine::builder().spawn(client_side, Client);
//!
//! let result: serde_json::Value = client
//!     .call("tools/call", &json!({"name": "ada"}), RequestOptions::new())
//!     .await
//!     .unwrap();
//! assert_eq!(result["content"][0]["text"], "hi ada");
//!
//! let err = client.call::<_, serde_json::Value>("nope", &json!({}), RequestOptions::new()).await;
//! assert!(err.is_err());
//!
//! // Closing one side ends both drivers.
//! client.close();
//! client.closed().await;
//! server_task.await.unwrap().unwrap();
//! # }
//! ```
#![deny(missing_docs)]

pub mod codec;
mod connection;
mod decode;
mod engine;
mod error;
mod id;
mod message;
mod raw;

pub use connection::{
    Connection, ExtensionGroup, Extensions, InboundStream, Incoming, Outbound, OutboundSink,
    memory_pair,
};
pub use engine::{
    CANCELLED_METHOD, Cancellation, Driver, Engine, EngineBuilder, Handler, Inlet, InletLink,
    NotificationContext, PING_METHOD, PROGRESS_METHOD, Peer, Progress, RequestContext,
    RequestOptions, RequestParts, ResponseFuture, Running, Served, Step, WhenWoken,
};
pub use error::{CallError, ErrorObject, FrameError, InvalidMessage, TransportError, codes};
pub use id::{BuildIdHasher, Id, IdHasher, IdMap, IdSet};
pub use message::{Frame, Inbound, Message, Notification, Request, Response, from_raw, to_raw};
pub use raw::RawJson;
