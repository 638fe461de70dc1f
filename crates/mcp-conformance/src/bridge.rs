//! Running a [`Server`] session over one transport [`Connection`].
//!
//! The server crate serves byte streams ([`Server::serve_io`]); the HTTP transport hands out one
//! [`Connection`] per session. This module joins them through an in-memory pipe carrying
//! newline-delimited JSON-RPC and, on the way back, tells the transport which inbound request
//! each outbound frame belongs to, so progress, log messages and server-to-client requests
//! travel on the SSE stream of the POST that caused them:
//!
//! * a response belongs to the request it answers;
//! * `notifications/progress` belongs to the request that carried its `progressToken`;
//! * any other notification or request belongs to the one client request in flight, when there
//!   is exactly one; otherwise it goes to the session's standalone stream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::{SinkExt, StreamExt};
use mcp_jsonrpc::codec::{CodecConfig, Framing};
use mcp_jsonrpc::{Connection, Frame, Id, Inbound, Message, Outbound};
use mcp_server::Server;
use serde_json::Value;

/// Bytes buffered in each direction of the in-memory pipe between transport and server.
pub const PIPE_CAPACITY: usize = 1 << 20;

/// Client requests in flight on one session, and the progress tokens they carry.
#[derive(Default)]
struct InFlight {
    /// Request ids in arrival order.
    requests: Vec<Id>,
    /// `progressToken` (as compact JSON) to request id.
    progress: HashMap<String, Id>,
}

fn lock(m: &Mutex<InFlight>) -> std::sync::MutexGuard<'_, InFlight> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn progress_token(params: Option<&serde_json::value::RawValue>, meta: bool) -> Option<String> {
    let params: Value = serde_json::from_str(params?.get()).ok()?;
    let token = if meta {
        params.get("_meta")?.get("progressToken")?
    } else {
        params.get("progressToken")?
    };
    Some(token.to_string())
}

impl InFlight {
    fn arrived(&mut self, message: &Message) {
        if let Message::Request(r) = message {
            if let Some(token) = progress_token(r.params.as_deref(), true) {
                self.progress.insert(token, r.id.clone());
            }
            self.requests.push(r.id.clone());
        }
    }

    /// The inbound request an outbound message belongs to.
    fn related(&mut self, message: &Message) -> Option<Id> {
        match message {
            Message::Response(r) => {
                let id = r.id.clone()?;
                self.requests.retain(|x| *x != id);
                self.progress.retain(|_, x| *x != id);
                Some(id)
            }
            Message::Notification(n) if n.method == "notifications/progress" => {
                let token = progress_token(n.params.as_deref(), false)?;
                self.progress.get(&token).cloned()
            }
            _ => match self.requests.as_slice() {
                [only] => Some(only.clone()),
                _ => None,
            },
        }
    }
}

/// Serves one session of `server` over `connection`; returns when either side closes.
pub async fn serve_connection(server: Server, connection: Connection) {
    let (server_end, bridge_end) = tokio::io::duplex(PIPE_CAPACITY);
    let (server_read, server_write) = tokio::io::split(server_end);
    let (bridge_read, bridge_write) = tokio::io::split(bridge_end);
    let pipe = Connection::framed(
        bridge_read,
        bridge_write,
        Framing::Line,
        CodecConfig::default(),
    );
    let (mut from_server, mut to_server) = pipe.into_parts();
    let (mut from_client, to_client) = connection.into_parts();
    let to_client = Arc::new(tokio::sync::Mutex::new(to_client));
    let inflight = Arc::new(Mutex::new(InFlight::default()));

    let session = tokio::spawn(async move {
        if let Err(e) = server.serve_io(server_read, server_write).await {
            tracing::debug!(error = %e, "session ended with an error");
        }
    });

    let inbound = {
        let inflight = Arc::clone(&inflight);
        let to_client = Arc::clone(&to_client);
        async move {
            while let Some(item) = from_client.next().await {
                let incoming = match item {
                    Ok(incoming) => incoming,
                    Err(e) => {
                        tracing::debug!(error = %e, "transport closed");
                        break;
                    }
                };
                let messages = match incoming.frame {
                    Ok(Inbound::Single(m)) => vec![Ok(m)],
                    Ok(Inbound::Batch(batch)) => batch,
                    Err(e) => {
                        if let Some(response) = e.to_response() {
                            let _ = to_client
                                .lock()
                                .await
                                .send(Outbound::new(Message::Response(response)))
                                .await;
                        }
                        continue;
                    }
                };
                for message in messages {
                    match message {
                        Ok(m) => {
                            lock(&inflight).arrived(&m);
                            if to_server.send(Outbound::new(m)).await.is_err() {
                                return;
                            }
                        }
                        Err(invalid) => {
                            if let Some(response) = invalid.to_response() {
                                let _ = to_client
                                    .lock()
                                    .await
                                    .send(Outbound::new(Message::Response(response)))
                                    .await;
                            }
                        }
                    }
                }
            }
            // Dropping `to_server` closes the pipe: the session sees EOF and ends.
        }
    };

    let outbound = async move {
        while let Some(Ok(incoming)) = from_server.next().await {
            let messages = match incoming.frame {
                Ok(Inbound::Single(m)) => vec![m],
                Ok(Inbound::Batch(batch)) => batch.into_iter().filter_map(Result::ok).collect(),
                Err(e) => {
                    tracing::warn!(error = %e, "the server wrote an unreadable frame");
                    continue;
                }
            };
            for m in messages {
                let related = lock(&inflight).related(&m);
                let frame = Outbound::related(Frame::Single(m), related);
                if to_client.lock().await.send(frame).await.is_err() {
                    return;
                }
            }
        }
    };

    tokio::select! {
        () = inbound => {}
        () = outbound => {}
    }
    session.abort();
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_jsonrpc::{Notification, Response};

    fn raw(v: Value) -> Option<Box<serde_json::value::RawValue>> {
        mcp_jsonrpc::to_raw(&v).ok()
    }

    fn request(id: i64, params: Value) -> Message {
        Message::Request(Request::new(id, "tools/call", raw(params)))
    }

    fn notification(method: &str, params: Value) -> Message {
        Message::Notification(Notification::new(method, raw(params)))
    }

    use mcp_jsonrpc::Request;

    #[test]
    fn progress_follows_its_token_and_logs_the_single_request() {
        let mut f = InFlight::default();
        f.arrived(&request(1, json_meta("tok-1")));
        f.arrived(&request(2, serde_json::json!({})));
        let progress = notification(
            "notifications/progress",
            serde_json::json!({"progressToken": "tok-1", "progress": 1}),
        );
        assert_eq!(f.related(&progress), Some(Id::Number(1)));
        // Two requests in flight: a log message cannot be attributed.
        let log = notification(
            "notifications/message",
            serde_json::json!({"level": "info"}),
        );
        assert_eq!(f.related(&log), None);
        let done = Message::Response(Response::success(
            Id::Number(1),
            raw(serde_json::json!({})).unwrap(),
        ));
        assert_eq!(f.related(&done), Some(Id::Number(1)));
        // Request 1 finished: its token is forgotten and request 2 is the only one left.
        assert_eq!(f.related(&progress), None);
        assert_eq!(f.related(&log), Some(Id::Number(2)));
    }

    fn json_meta(token: &str) -> Value {
        serde_json::json!({"name": "t", "_meta": {"progressToken": token}})
    }

    #[test]
    fn unreadable_params_relate_nothing() {
        let mut f = InFlight::default();
        f.arrived(&Message::Request(Request::new(
            7,
            "x",
            raw(serde_json::json!([1, 2])),
        )));
        let progress = notification("notifications/progress", serde_json::json!([1]));
        assert_eq!(f.related(&progress), None);
    }
}
