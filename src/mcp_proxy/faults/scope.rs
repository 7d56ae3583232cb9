//! What a fault acts on ([`Scope`]). The plan loader and the decider read from it what a fault's trigger means
//! (its methods when the plan names none, what its `tools` pick), how its roll is keyed, and whether the proxy
//! must learn from the answers for it.

/// What a fault acts on, as [`McpFaultSpec::scope`](super::McpFaultSpec::scope) says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A `tools/call`: the trigger's `tools` pick the call's tool, the roll is keyed by the tool and its
    /// ordinal. The scope of most faults.
    Call,
    /// Requests of `methods` when the plan names none (`*`: every request), each keyed as a call is, by its
    /// tool or, for a request that names none, its method.
    Requests { methods: &'static [&'static str] },
    /// A `tools/call` that answers the tool's last question (its `inputResponses`): the proxy learns each
    /// tool's last `input_required` result from the answers.
    Answer,
    /// `tools/list` results: the trigger's `tools` pick tools inside the listing rather than the call.
    Listing,
    /// The `tasks/*` requests (`methods` when the plan names none) of a task the proxy saw made by a
    /// `tools/call`, the call's tool being the task's. The roll is the task's (keyed by its id), so every
    /// request of one task gets the same decision and `probability` is the share of tasks picked; a request
    /// of a task the proxy did not see made is never faulted.
    Task { methods: &'static [&'static str] },
}

impl Scope {
    /// The methods the fault acts on when the plan names none; empty: `[tools/call]`, the trigger's own.
    pub fn default_methods(self) -> &'static [&'static str] {
        match self {
            Scope::Call | Scope::Answer => &[],
            Scope::Listing => &["tools/list"],
            Scope::Requests { methods } | Scope::Task { methods } => methods,
        }
    }

    /// Whether the trigger's `tools` pick tools inside a `tools/list` result rather than the call.
    pub fn acts_on_listing(self) -> bool {
        self == Scope::Listing
    }

    /// Whether the fault reads what the proxy learns from answers ([`crate::mcp_proxy::learned`]): the tasks'
    /// tools and polls, the tools' last questions.
    pub fn reads_learned(self) -> bool {
        matches!(self, Scope::Answer | Scope::Task { .. })
    }

    /// Whether the roll of a `tasks/*` request is the task's (keyed by its id) rather than the tool's.
    pub fn rolls_per_task(self) -> bool {
        matches!(self, Scope::Task { .. })
    }

    /// Whether the fault fires only on the requests of a task the proxy saw made (their tool known).
    pub fn needs_known_task(self) -> bool {
        matches!(self, Scope::Task { .. })
    }
}
