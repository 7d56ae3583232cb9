//! The impact scenario tools end to end: fault windows and recovery, and the capacity search's refusals.

mod capacity;
mod recovery;
mod tools;
