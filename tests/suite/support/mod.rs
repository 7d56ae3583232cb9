//! What the tests share: the built binary over MCP, real and stand-in servers on 127.0.0.1, optional components.

pub mod common;
pub mod indexing;
pub mod llm_fakes;
pub mod locks;
pub mod optional;
pub mod python_client;
pub mod qdrant_fake;
pub mod scenario;
