//! Model Context Protocol client: sessions with version negotiation, typed calls, client-side
//! features (sampling, elicitation, roots) and a multi-server `Host`.
#![deny(missing_docs)]

pub mod config;
pub mod elicit;
pub mod names;
