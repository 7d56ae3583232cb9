//! A fault entry of a plan on its way from a peer tool's spelling to ours. The plan loader fills it with the
//! entry's keys (camelCase already turned to snake_case), then hands it to the fault's own
//! [`McpFaultSpec::read_peer`](super::McpFaultSpec::read_peer), which renames what its peers call differently.

use serde_json::Value;

/// One key of an entry.
#[derive(Debug, Clone)]
struct Key {
    /// The key as we name it.
    name: String,
    value: Value,
    /// The key as the plan wrote it, for messages.
    written: String,
    /// A key the fault claimed as its own (e.g. `schema_drift`'s `target: list`), which the loader must not
    /// read as a peer's spelling of something else.
    claimed: bool,
}

/// A fault entry of a plan, keys in snake_case.
#[derive(Debug, Clone)]
pub struct PeerEntry {
    /// The type name as written, without its `:<n>` suffix (`wedged`, `slow`, `error_injection`, ...).
    pub type_name: String,
    /// The number after the type name (mcptest's `slow:<ms>`), if any.
    pub suffix: Option<u64>,
    keys: Vec<Key>,
}

impl PeerEntry {
    /// An entry of `type_name` with `keys` as `(our name, value, as written)`.
    pub fn new(
        type_name: String,
        suffix: Option<u64>,
        keys: impl IntoIterator<Item = (String, Value, String)>,
    ) -> Self {
        Self {
            type_name,
            suffix,
            keys: keys
                .into_iter()
                .map(|(name, value, written)| Key {
                    name,
                    value,
                    written,
                    claimed: false,
                })
                .collect(),
        }
    }

    pub fn has(&self, key: &str) -> bool {
        self.keys.iter().any(|k| k.name == key)
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.keys.iter().find(|k| k.name == key).map(|k| &k.value)
    }

    /// Removes `key`, giving its value.
    pub fn take(&mut self, key: &str) -> Option<Value> {
        let position = self.keys.iter().position(|k| k.name == key)?;
        Some(self.keys.remove(position).value)
    }

    /// Sets `key` (replacing it if present).
    pub fn set(&mut self, key: &str, value: Value) {
        self.take(key);
        self.keys.push(Key {
            name: key.to_owned(),
            value,
            written: key.to_owned(),
            claimed: false,
        });
    }

    /// Sets `key` unless the entry has it.
    pub fn set_default(&mut self, key: &str, value: Value) {
        if !self.has(key) {
            self.set(key, value);
        }
    }

    /// Renames `from` (a peer's spelling) to `to` (ours), keeping the key as written for messages.
    pub fn rename(&mut self, from: &str, to: &str) {
        if let Some(key) = self.keys.iter_mut().find(|k| k.name == from) {
            key.name = to.to_owned();
        }
    }

    /// Sets `key` to the type name's `:<n>` suffix, when there is one.
    pub fn set_from_suffix(&mut self, key: &str) {
        if let Some(n) = self.suffix {
            self.set(key, n.into());
        }
    }

    /// Marks `key` as the fault's own, so the loader does not read it as a peer's spelling.
    pub fn claim(&mut self, key: &str) {
        if let Some(key) = self.keys.iter_mut().find(|k| k.name == key) {
            key.claimed = true;
        }
    }

    pub fn is_claimed(&self, key: &str) -> bool {
        self.keys.iter().any(|k| k.name == key && k.claimed)
    }

    /// The keys as `(our name, value, as written)`.
    pub fn into_keys(self) -> impl Iterator<Item = (String, Value, String)> {
        self.keys.into_iter().map(|k| (k.name, k.value, k.written))
    }
}
