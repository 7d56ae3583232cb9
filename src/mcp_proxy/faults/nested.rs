//! A fault inside another's spec (recover_after's `then`).

use serde::Serialize;
use serde_json::{Map, Value};

use super::McpFault;

/// A fault inside another's spec: as the plan wrote it, until the plan loader builds it with the peer
/// spellings and key checks that live in the loader (so no fault reaches up into it).
#[derive(Debug, Clone, PartialEq)]
pub enum NestedFault {
    Written(Map<String, Value>),
    Built(Box<McpFault>),
}

impl NestedFault {
    /// The built fault (the plan loader builds every nested fault before the plan is used).
    pub fn built(&self) -> Option<&McpFault> {
        match self {
            NestedFault::Built(fault) => Some(fault),
            NestedFault::Written(_) => None,
        }
    }

    /// Builds a written fault with `build`.
    pub fn build<E>(
        &mut self,
        build: impl FnOnce(Map<String, Value>) -> Result<McpFault, E>,
    ) -> Result<(), E> {
        if let NestedFault::Written(map) = self {
            *self = NestedFault::Built(Box::new(build(std::mem::take(map))?));
        }
        Ok(())
    }
}

impl Serialize for NestedFault {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            NestedFault::Written(map) => map.serialize(serializer),
            NestedFault::Built(fault) => fault.serialize(serializer),
        }
    }
}
