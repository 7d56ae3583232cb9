//! Task-level figures: how many tasks succeeded, and the blast radius of the injected faults.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::record::{CallOutcome, CallRecord};
use crate::report::{ratio, round2};

/// Task-level figures (a task is a `task` id of `calls`, or a logical call of its own).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskFigures {
    pub tasks: u64,
    /// Attempts per task, retries included.
    pub calls_per_task: f64,
    pub succeeded: u64,
    pub failed: u64,
    /// Tasks with at least one injected fault.
    pub met_fault: u64,
    pub failed_after_fault: u64,
    /// succeeded / tasks (0..1).
    pub success_rate: f64,
    /// failed_after_fault / tasks (0..1).
    pub blast_radius: f64,
}

pub(super) fn task_figures(records: &[CallRecord]) -> TaskFigures {
    // task → logical call → (last attempt, its outcome); task → met a fault; task → attempts
    let mut finals: HashMap<&str, HashMap<u64, (u32, CallOutcome)>> = HashMap::new();
    let mut met: HashMap<&str, bool> = HashMap::new();
    for r in records {
        let Some(logical) = &r.logical else { continue };
        let task = logical.task.as_str();
        let last = finals
            .entry(task)
            .or_default()
            .entry(logical.index)
            .or_insert((0, r.outcome));
        if logical.attempt >= last.0 {
            *last = (logical.attempt, r.outcome);
        }
        *met.entry(task).or_insert(false) |= r.fault.is_some();
    }
    let tasks = finals.len() as u64;
    let mut figures = TaskFigures {
        tasks,
        calls_per_task: if tasks == 0 {
            0.0
        } else {
            round2(records.len() as f64 / tasks as f64)
        },
        ..TaskFigures::default()
    };
    for (task, calls) in &finals {
        let ok = calls.values().all(|(_, o)| *o == CallOutcome::Ok);
        let met_fault = met.get(task).copied().unwrap_or(false);
        if ok {
            figures.succeeded += 1;
        } else {
            figures.failed += 1;
        }
        if met_fault {
            figures.met_fault += 1;
            if !ok {
                figures.failed_after_fault += 1;
            }
        }
    }
    figures.success_rate = ratio(figures.succeeded, tasks);
    figures.blast_radius = ratio(figures.failed_after_fault, tasks);
    figures
}
