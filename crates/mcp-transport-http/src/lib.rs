//! Streamable HTTP transport of the Model Context Protocol on hyper, server and client, plus the
//! HTTP+SSE transport of 2024-11-05 for older peers.
#![deny(missing_docs)]
