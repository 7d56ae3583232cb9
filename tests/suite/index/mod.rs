//! The source index: the embedded and Qdrant stores, progress and cancellation, and whose context reaches the prompts.

mod context;
mod embedded;
mod example;
mod progress;
mod qdrant;
mod qdrant_cluster;
mod two_servers;
