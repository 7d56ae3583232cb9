//! How the tasks of the MCP Tasks extension ended, per tool whose call made them: created (a `tools/call`
//! answered with a task handle), completed, failed, cancelled (the first terminal status the client was told),
//! and lost (a `tasks/get` or `tasks/cancel` answered "not found", -32602, before any terminal status).

use std::collections::{BTreeMap, HashMap, VecDeque};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Tasks followed at most; beyond it the oldest is forgotten (its later polls are not counted).
const MAX_TASKS: usize = 4_096;

/// One tool's tasks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McpTaskFigures {
    pub tool: String,
    pub created: u64,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    /// Told "not found" before any terminal status.
    pub lost: u64,
}

/// How a task ended, by the first thing the client was told that ends it: a terminal status, or "not found".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskEnd {
    Completed,
    Failed,
    Cancelled,
    /// Told "not found" before any terminal status.
    Lost,
}

/// A task as the client was told of it.
#[derive(Debug)]
struct Followed {
    tool: String,
    /// A terminal status (or "not found") was told: later answers do not count again.
    ended: bool,
}

/// The tasks seen so far, fed with what the client was told.
#[derive(Debug, Default)]
pub struct TaskLedger {
    tasks: HashMap<String, Followed>,
    order: VecDeque<String>,
    figures: BTreeMap<String, McpTaskFigures>,
}

impl TaskLedger {
    fn tool(&mut self, tool: &str) -> &mut McpTaskFigures {
        self.figures
            .entry(tool.to_owned())
            .or_insert_with(|| McpTaskFigures {
                tool: tool.to_owned(),
                ..Default::default()
            })
    }

    /// A `tools/call` of `tool` was answered with the task `task_id`.
    pub fn created(&mut self, tool: &str, task_id: &str) {
        if self.tasks.len() >= MAX_TASKS
            && let Some(old) = self.order.pop_front()
        {
            self.tasks.remove(&old);
        }
        let known = self.tasks.insert(
            task_id.to_owned(),
            Followed {
                tool: tool.to_owned(),
                ended: false,
            },
        );
        if known.is_none() {
            self.order.push_back(task_id.to_owned());
        }
        self.tool(tool).created += 1;
    }

    /// The client was told that task `task_id` ended as `end`; only the first end of a known task counts.
    pub fn ended(&mut self, task_id: &str, end: TaskEnd) {
        let Some(task) = self.tasks.get_mut(task_id).filter(|t| !t.ended) else {
            return;
        };
        task.ended = true;
        let tool = task.tool.clone();
        let figures = self.tool(&tool);
        match end {
            TaskEnd::Completed => figures.completed += 1,
            TaskEnd::Failed => figures.failed += 1,
            TaskEnd::Cancelled => figures.cancelled += 1,
            TaskEnd::Lost => figures.lost += 1,
        }
    }

    /// The figures, by tool name.
    pub fn figures(&self) -> Vec<McpTaskFigures> {
        self.figures.values().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_task_ends_once_by_what_the_client_was_told_first() {
        let mut ledger = TaskLedger::default();
        for id in ["a", "b", "c", "d"] {
            ledger.created("slow_job", id);
        }
        ledger.ended("a", TaskEnd::Completed);
        ledger.ended("a", TaskEnd::Completed);
        ledger.ended("b", TaskEnd::Failed);
        ledger.ended("b", TaskEnd::Lost);
        ledger.ended("c", TaskEnd::Lost);
        ledger.ended("c", TaskEnd::Completed);
        ledger.ended("d", TaskEnd::Cancelled);
        ledger.ended("unknown", TaskEnd::Lost);
        assert_eq!(
            ledger.figures(),
            [McpTaskFigures {
                tool: "slow_job".into(),
                created: 4,
                completed: 1,
                failed: 1,
                cancelled: 1,
                lost: 1,
            }]
        );
    }
}
