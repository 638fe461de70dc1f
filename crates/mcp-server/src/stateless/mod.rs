//! The stateless revision (2026-07-28): sealed `requestState` and the bookkeeping of multi
//! round-trip requests.

pub(crate) mod mrtr;
pub(crate) mod seal;
