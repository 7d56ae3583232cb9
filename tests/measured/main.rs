//! Tests that measure what this machine's cores can do, in a binary of their own: the suite runs its tests side
//! by side, and a search for the rate a service takes would find the rate the other tests leave it. Cargo runs
//! test binaries one after the other, so these run with nothing else.

#[path = "../suite/support/common.rs"]
mod common;
#[path = "../suite/support/locks.rs"]
mod locks;
#[path = "../suite/support/scenario.rs"]
mod scenario_support;

mod capacity;
