//! Shared helpers for the cross-crate tests in `tests/tests/`: reading results
//! ([`content`]) and serving and driving Streamable HTTP without the SDK's client ([`http`]).
//!
//! The test files under `tests/tests/` each build as their own crate; what more than one of them
//! needs lives here, once.

pub mod content;
pub mod http;

/// The code blocks of `README.md`, compiled as doctests so the tour cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
