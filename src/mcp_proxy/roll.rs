//! The keyed roll now lives in [`crate::seeded`], shared with the TCP proxy.

pub use crate::seeded::*;
