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
