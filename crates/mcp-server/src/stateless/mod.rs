//! The stateless revision (2026-07-28): requests that carry their own version and capabilities
//! in `_meta`, `server/discover`, `subscriptions/listen`, multi round-trip requests with a sealed
//! `requestState`, and the session-side shim that gives the explicit way of asking for input the
//! same meaning on stateful sessions.

pub(crate) mod channel;
pub(crate) mod listen;
pub(crate) mod mrtr;
pub(crate) mod seal;
pub(crate) mod serve;
pub(crate) mod shim;

/// A JSON-RPC error of the model (`mcp-types`) as the engine sends it.
pub(crate) fn rpc_error(e: mcp_types::ErrorObject) -> mcp_jsonrpc::ErrorObject {
    let error = mcp_jsonrpc::ErrorObject::new(e.code, e.message);
    match &e.data {
        Some(data) => crate::error::with_data(error, data),
        None => error,
    }
}
