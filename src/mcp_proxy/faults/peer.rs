//! A fault entry of a plan on its way from a peer tool's spelling to ours. The plan loader recognises the
//! entry's [`Format`] and fills it with the entry's keys (camelCase already turned to snake_case), then hands it
//! to the fault's own [`McpFaultSpec::read_peer`](super::McpFaultSpec::read_peer), which maps what the keys
//! mean in that format to what they mean here.

use serde_json::Value;

/// The plan formats the loader reads: ours, and the peer tools' whose plans load unchanged and mean there what
/// they meant in the peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `fault mcp-proxy`'s own; a peer's spelling that means the same here is read too.
    Own,
    /// mcp-chaos (github.com/ajinb/mcp-chaos): a plan it would load itself.
    McpChaos,
    /// SmartAI's mcp-chaos (github.com/SmartAI/mcp-chaos): a fault aimed with `tool:`.
    SmartAi,
    /// mcp-chaos-monkey (github.com/alexey-tyurin/mcp-chaos-monkey): a fault config in `config`, with camelCase
    /// keys or a hyphenated type.
    ChaosMonkey,
    /// mcptest (mcptest.sh): a fault with `kind`.
    McpTest,
}

impl Format {
    pub const ALL: [Format; 5] = [
        Format::Own,
        Format::McpChaos,
        Format::SmartAi,
        Format::ChaosMonkey,
        Format::McpTest,
    ];

    /// The value of a plan's `format` key that names it.
    pub fn key(self) -> &'static str {
        match self {
            Format::Own => "fault",
            Format::McpChaos => "mcp-chaos",
            Format::SmartAi => "smartai",
            Format::ChaosMonkey => "mcp-chaos-monkey",
            Format::McpTest => "mcptest",
        }
    }
}

/// A fault type of a peer's plans, declared by the fault that reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerType {
    pub format: Format,
    /// The type name as the peer writes it.
    pub name: &'static str,
    /// The keys the peer's fault takes besides `type`, where the plan loader recognises the peer's plans by
    /// them: mcp-chaos's, whose fault constructors refuse any other key. Empty for the other peers.
    pub keys: &'static [&'static str],
}

impl PeerType {
    /// mcp-chaos's type `name`, whose fault takes `keys`.
    pub const fn mcp_chaos(name: &'static str, keys: &'static [&'static str]) -> Self {
        Self {
            format: Format::McpChaos,
            name,
            keys,
        }
    }

    /// The type `name` of `format`.
    pub const fn of(format: Format, name: &'static str) -> Self {
        Self {
            format,
            name,
            keys: &[],
        }
    }
}

/// A peer's key whose value the peer itself refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{written} must {rule}, got {got}")]
pub struct PeerValueError {
    /// The key as written.
    pub written: String,
    pub rule: &'static str,
    pub got: String,
}

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
    /// The format the entry is written in.
    pub format: Format,
    /// The type name as written, without its `:<n>` suffix (`wedged`, `slow`, `error_injection`, ...).
    pub type_name: String,
    /// The number after the type name (mcptest's `slow:<ms>`), if any.
    pub suffix: Option<u64>,
    keys: Vec<Key>,
}

impl PeerEntry {
    /// An entry of `type_name` with `keys` as `(our name, value, as written)`.
    pub fn new(
        format: Format,
        type_name: String,
        suffix: Option<u64>,
        keys: impl IntoIterator<Item = (String, Value, String)>,
    ) -> Self {
        Self {
            format,
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

    /// A whole number of a key a peer gives as a decimal (mcp-chaos's `added_ms: 250.0`), rounded.
    pub fn round(&mut self, key: &str) {
        if let Some(key) = self.keys.iter_mut().find(|k| k.name == key)
            && let Some(number) = key.value.as_f64()
            && !key.value.is_u64()
            && number >= 0.0
            && number.is_finite()
        {
            key.value = (number.round() as u64).into();
        }
    }

    /// The error for `key`, whose value breaks `rule`.
    pub fn refuse(&self, key: &str, rule: &'static str) -> PeerValueError {
        let key = self.keys.iter().find(|k| k.name == key);
        PeerValueError {
            written: key.map_or_else(String::new, |k| k.written.clone()),
            rule,
            got: key.map_or_else(String::new, |k| k.value.to_string()),
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
