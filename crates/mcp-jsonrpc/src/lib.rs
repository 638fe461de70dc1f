//! JSON-RPC 2.0 as the Model Context Protocol restricts it: messages, framing codecs, batches and
//! the transport-agnostic request engine shared by clients and servers.
#![deny(missing_docs)]

pub mod codec;
mod connection;
mod decode;
mod engine;
mod error;
mod id;
mod message;

pub use connection::{
    Connection, Extensions, InboundStream, Incoming, Outbound, OutboundSink, memory_pair,
};
pub use engine::{
    CANCELLED_METHOD, Driver, Engine, EngineBuilder, Handler, NotificationContext, PROGRESS_METHOD,
    Peer, Progress, RequestContext, RequestOptions, ResponseFuture, batches_allowed_in,
};
pub use error::{CallError, ErrorObject, FrameError, InvalidMessage, TransportError, codes};
pub use id::Id;
pub use message::{Frame, Inbound, Message, Notification, Request, Response, from_raw, to_raw};
