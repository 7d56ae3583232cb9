//! The registry of fault types: what the plan loader reads of each ([`Registered`]), and the macro that
//! declares the fault modules and builds the plan's fault enum and the list of types from one line per fault.

use std::{collections::HashMap, sync::LazyLock};

use serde_json::{Map, Value};

use super::peer::{PeerEntry, PeerType, PeerValueError};
use super::{McpFault, REGISTRY};

/// A fault type of the registry.
pub struct Registered {
    /// The type name (the fault's module).
    pub name: &'static str,
    pub aliases: fn() -> &'static [&'static str],
    pub peer_types: fn() -> &'static [PeerType],
    /// What it does on the wire, for the reference.
    pub wire: fn() -> &'static str,
    pub read_peer: fn(&mut PeerEntry) -> Result<(), PeerValueError>,
    pub(super) schema: fn() -> schemars::Schema,
    pub(super) build: fn(Map<String, Value>) -> Result<McpFault, serde_json::Error>,
}

impl Registered {
    /// Whether `name` is this type's name, one of its aliases or a peer's name for it.
    pub fn is_named(&self, name: &str) -> bool {
        self.is_ours(name) || (self.peer_types)().iter().any(|p| p.name == name)
    }

    /// Whether `name` is this type's name or one of our aliases for it.
    pub fn is_ours(&self, name: &str) -> bool {
        self.name == name || (self.aliases)().contains(&name)
    }

    /// The keys the fault's spec takes: its schema's properties (flattened ones included).
    pub fn keys(&self) -> &'static [String] {
        static KEYS: LazyLock<HashMap<&'static str, Vec<String>>> = LazyLock::new(|| {
            REGISTRY
                .iter()
                .map(|r| (r.name, property_names(&(r.schema)())))
                .collect()
        });
        KEYS.get(self.name).map_or(&[], Vec::as_slice)
    }

    /// The spec from its own keys.
    pub fn build(&self, map: Map<String, Value>) -> Result<McpFault, serde_json::Error> {
        (self.build)(map)
    }
}

/// The property names of a schema, in order.
fn property_names(schema: &schemars::Schema) -> Vec<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default()
}

/// The registered type that `name` (a type name or an alias) names.
pub fn registered(name: &str) -> Option<&'static Registered> {
    REGISTRY.iter().find(|r| r.is_named(name))
}

/// Declares the fault modules it is given (`module::Type`, one line per fault) and builds from them the plan's
/// fault enum ([`McpFault`]) and the list of types ([`REGISTRY`]).
macro_rules! registry {
    ($( $module:ident :: $fault:ident ),+ $(,)?) => {
        $(
            mod $module;
            pub use $module::$fault;
        )+

        /// One fault of a plan, by type.
        #[derive(Debug, Clone, PartialEq, ::serde::Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        pub enum McpFault {
            $( $fault($fault), )+
        }

        /// Every fault type, in the order the plan loader lists them.
        pub const REGISTRY: &[$crate::mcp_proxy::faults::Registered] = &[
            $( $crate::mcp_proxy::faults::Registered {
                name: stringify!($module),
                aliases: <$fault as $crate::mcp_proxy::faults::McpFaultSpec>::aliases,
                peer_types: <$fault as $crate::mcp_proxy::faults::McpFaultSpec>::peer_types,
                wire: <$fault as $crate::mcp_proxy::faults::McpFaultSpec>::wire,
                read_peer: <$fault as $crate::mcp_proxy::faults::McpFaultSpec>::read_peer,
                schema: || ::schemars::schema_for!($fault),
                build: |map| {
                    ::serde_json::from_value::<$fault>(::serde_json::Value::Object(map)).map(McpFault::$fault)
                },
            }, )+
        ];

        impl McpFault {
            /// The type name.
            pub fn type_name(&self) -> &'static str {
                match self { $( McpFault::$fault(_) => stringify!($module), )+ }
            }

            /// The fault itself, through which the decider, the engine and the plan loader reach it.
            pub fn inner(&self) -> &dyn $crate::mcp_proxy::faults::McpFaultSpec {
                match self { $( McpFault::$fault(f) => f, )+ }
            }

            /// The fault itself, for the plan loader to build what it holds.
            pub fn inner_mut(&mut self) -> &mut dyn $crate::mcp_proxy::faults::McpFaultSpec {
                match self { $( McpFault::$fault(f) => f, )+ }
            }
        }
    };
}
pub(super) use registry;

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value};

    use super::*;
    use crate::mcp_proxy::faults::{PeerEntry, REGISTRY};
    use crate::mcp_proxy::plan::Plan;
    use crate::mcp_proxy::trigger::{TRIGGER_KEYS, Trigger};

    /// A value no field of a fault takes: serde must refuse it for every key the fault accepts.
    fn junk() -> Value {
        serde_json::json!([[[]]])
    }

    #[test]
    fn every_accepted_key_is_a_field_serde_reads() {
        for fault in REGISTRY {
            assert!(!fault.keys().is_empty() || fault.build(Map::new()).is_ok());
            for key in fault.keys() {
                let map = Map::from_iter([(key.clone(), junk())]);
                let error = fault.build(map).map(|_| ()).unwrap_err().to_string();
                assert!(
                    !error.starts_with("missing field"),
                    "{}: serde ignored `{key}`: {error}",
                    fault.name
                );
            }
        }
        for key in TRIGGER_KEYS.iter() {
            let map = Map::from_iter([(key.clone(), junk())]);
            assert!(serde_json::from_value::<Trigger>(Value::Object(map)).is_err());
        }
    }

    /// A sample value of a required property, by its schema type.
    fn sample(schema: &Value) -> Value {
        match schema.get("type").and_then(Value::as_str) {
            Some("integer" | "number") => 1.into(),
            Some("boolean") => true.into(),
            Some("array") => Value::Array(Vec::new()),
            _ => "x".into(),
        }
    }

    #[test]
    fn every_fault_prints_as_keys_it_accepts_and_loads_back() {
        for fault in REGISTRY {
            let schema = (fault.schema)().to_value();
            let mut entry = Map::from_iter([
                ("type".to_owned(), Value::from(fault.name)),
                ("tools".to_owned(), serde_json::json!(["t"])),
            ]);
            for required in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                entry.insert(required.to_owned(), sample(&schema["properties"][required]));
            }
            let root = serde_json::json!({ "faults": [entry] });
            let plan = Plan::from_value(root, "").unwrap();
            assert_eq!(plan.faults[0].spec.type_name(), fault.name);
            let printed: Value = serde_yaml_ng::from_str(&plan.to_yaml()).unwrap();
            for key in printed["faults"][0].as_object().unwrap().keys() {
                assert!(
                    ["type", "name"].contains(&key.as_str())
                        || fault.keys().contains(key)
                        || TRIGGER_KEYS.contains(key),
                    "{}: prints `{key}`, which it does not accept",
                    fault.name
                );
            }
            assert_eq!(printed["faults"][0]["type"], fault.name);
            // Printed and loaded again, it stays put (a nested default may gain its label on the first trip).
            let again = Plan::from_value(printed, "").unwrap();
            let printed: Value = serde_yaml_ng::from_str(&again.to_yaml()).unwrap();
            assert_eq!(
                Plan::from_value(printed, "").unwrap(),
                again,
                "{}",
                fault.name
            );
        }
    }

    #[test]
    fn type_names_aliases_and_peer_names_name_one_fault_each() {
        let mut seen = std::collections::HashMap::new();
        for fault in REGISTRY {
            let peer_names = (fault.peer_types)().iter().map(|p| p.name);
            let names = std::iter::once(fault.name)
                .chain((fault.aliases)().iter().copied())
                .chain(peer_names);
            for name in names {
                let owner = *seen.entry(name).or_insert(fault.name);
                assert_eq!(owner, fault.name, "`{name}` names two faults");
                assert_eq!(registered(name).map(|r| r.name), Some(fault.name));
            }
        }
    }

    #[test]
    fn mcp_chaos_keys_are_read_by_the_fault() {
        // Each key an mcp-chaos fault takes is one the loader reads for the fault that answers to it.
        for fault in REGISTRY {
            for peer in (fault.peer_types)() {
                for key in peer.keys {
                    let mut entry =
                        PeerEntry::new(peer.format, peer.name.to_owned(), None, std::iter::empty());
                    entry.set(key, Value::Null);
                    (fault.read_peer)(&mut entry).unwrap_or_else(|e| panic!("{e}"));
                    let read = entry.into_keys().map(|(k, _, _)| k).collect::<Vec<_>>();
                    assert!(
                        read.iter()
                            .all(|k| fault.keys().contains(k) || TRIGGER_KEYS.contains(k)),
                        "{}: mcp-chaos's `{key}` is read as {read:?}",
                        fault.name
                    );
                }
            }
        }
    }
}
