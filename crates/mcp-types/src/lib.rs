//! Model Context Protocol types, generated from the official JSON Schema of every published
//! revision (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25 and 2026-07-28).
#![deny(missing_docs)]
