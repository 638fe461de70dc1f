//! Model Context Protocol server SDK: register typed tools, resources and prompts once and serve
//! clients of every protocol revision.
#![deny(missing_docs)]
