//! JSON-RPC 2.0 as the Model Context Protocol restricts it: messages, framing codecs, batches and
//! the transport-agnostic request engine shared by clients and servers.
#![deny(missing_docs)]
