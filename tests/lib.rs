//! Shared helpers for the cross-crate tests in `tests/tests/`.

/// The code blocks of `README.md`, compiled as doctests so the tour cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
