//! The faults of a running proxy on each connection: the stages a new connection gets from every fault, and
//! whether a fault applies to the message at hand (inside its windows, drawn by its probability once per
//! message, from a generator keyed by the seed, the fault, the connection, the flow and the message).

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use rand::RngExt;
use rand::rngs::StdRng;

use super::Runtime;
use crate::proxy::faults::{self, Injector, MessageKey, Stage, TcpFault};
use crate::proxy::placement::{Flow, Window};

/// A configured fault on a running proxy, ready to build the stages of new connections.
pub(crate) struct ProxyFault {
    pub spec: TcpFault,
    pub injector: Arc<dyn Injector>,
    /// The flows its side and direction select, indexed by `Flow::index`.
    pub flows: [bool; 2],
    /// Active windows from the proxy's start, in time order; `None` = always.
    pub windows: Option<Vec<Window>>,
    /// Whether its stages follow the whole stream, outside its windows too ([`faults::Chunk::active`]).
    pub reads_http: bool,
    pub applied: AtomicU64,
}

impl ProxyFault {
    pub(crate) fn active_at(&self, since_start: Duration) -> bool {
        match &self.windows {
            None => true,
            Some(windows) => windows
                .iter()
                .any(|(start, end)| since_start >= *start && end.is_none_or(|e| since_start < e)),
        }
    }
}

/// A stage with the fault it comes from and its per-message decision.
pub(super) struct ActiveStage {
    pub(super) stage: Box<dyn Stage>,
    /// Index of its fault in `Runtime::faults`.
    pub(super) fault: usize,
    /// Drawn from for the current message; re-keyed at each new message.
    pub(super) rng: StdRng,
    /// The current message's key.
    key: MessageKey,
    /// Whether the fault applies to the current message (probability is rolled per message).
    applies: Option<bool>,
    /// Whether a message has started on the flow (the first one is message 0).
    started: bool,
}

impl ActiveStage {
    /// Starts the stage's next message on its flow.
    pub(super) fn next_message(&mut self, seed: u64) {
        if self.started {
            self.key.message += 1;
        }
        self.started = true;
        self.rng = faults::message_rng(seed, self.key);
        self.applies = None;
    }
}

/// The stages of every fault for a new connection: request flow, response flow.
pub(super) fn connection_stages(rt: &Runtime, connection: u64) -> [Vec<ActiveStage>; 2] {
    let mut stages = [Vec::new(), Vec::new()];
    for (i, fault) in rt.faults.iter().enumerate() {
        let built = fault.injector.connection(fault.flows);
        for (flow, stage) in [Flow::Request, Flow::Response].into_iter().zip(built) {
            if let Some(stage) = stage {
                let key = MessageKey {
                    fault: i,
                    connection,
                    flow,
                    message: 0,
                };
                stages[flow.index()].push(ActiveStage {
                    stage,
                    fault: i,
                    rng: faults::message_rng(rt.seed, key),
                    key,
                    applies: None,
                    started: false,
                });
            }
        }
    }
    stages
}

/// Whether `active`'s fault applies now: inside its schedule, and drawn by its probability.
pub(super) fn applies(active: &mut ActiveStage, fault: &ProxyFault, since_start: Duration) -> bool {
    fault.active_at(since_start) && drawn(active, fault)
}

/// Whether `active`'s fault is drawn by its probability for the current message (drawn once per message, on
/// the first chunk the stage sees).
pub(super) fn drawn(active: &mut ActiveStage, fault: &ProxyFault) -> bool {
    if active.applies.is_none() {
        let p = fault.spec.common().probability;
        active.applies = Some(p >= 1.0 || active.rng.random::<f64>() < p);
    }
    active.applies == Some(true)
}
