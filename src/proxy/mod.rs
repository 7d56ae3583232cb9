//! The fault-injecting TCP proxy.

pub mod cli;
