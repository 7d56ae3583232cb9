//! What the proxy learns from the server's answers that later requests are matched by: which tool's
//! `tools/call` made each task (so a trigger's `tools` picks that tool's `tasks/get` and `tasks/cancel`), how
//! often each task was polled, and the question each tool last asked (its `input_required` answer, which
//! `input_loop` asks again). Learned only when a fault of the plan reads it, and bounded: the oldest entries
//! are forgotten first.

use std::collections::{HashMap, VecDeque};

use serde_json::Value;

use crate::mcp_wire::tasks;

/// Tasks remembered at most (a task forgotten is one its faults no longer pick).
const MAX_TASKS: usize = 4_096;
/// Tools whose last question is remembered at most.
const MAX_ASKS: usize = 1_024;

/// A map that forgets its oldest entries beyond `cap`.
#[derive(Debug)]
struct Bounded<V> {
    entries: HashMap<String, V>,
    order: VecDeque<String>,
    cap: usize,
}

impl<V> Bounded<V> {
    fn new(cap: usize) -> Self {
        Self {
            entries: HashMap::new(),
            order: VecDeque::new(),
            cap,
        }
    }

    fn insert(&mut self, key: &str, value: V) {
        if self.entries.insert(key.to_owned(), value).is_none() {
            self.order.push_back(key.to_owned());
        }
        while self.entries.len() > self.cap {
            match self.order.pop_front() {
                Some(old) => {
                    self.entries.remove(&old);
                }
                None => break,
            }
        }
    }

    fn get(&self, key: &str) -> Option<&V> {
        self.entries.get(key)
    }

    fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        self.entries.get_mut(key)
    }
}

/// A task as the proxy knows it.
#[derive(Debug)]
struct TaskSeen {
    /// The tool whose call made it.
    tool: String,
    /// Its `tasks/get` requests so far.
    polls: u64,
}

/// A tool's last question: its `input_required` result, numbered so a fault can tell a new question from
/// the one it already asked again.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    pub serial: u64,
    pub result: Value,
}

/// A `tasks/*` request of a task the proxy saw made.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRequest {
    pub task_id: String,
    /// The tool whose call made the task.
    pub tool: String,
    /// The task's `tasks/get` requests before this one.
    pub polls_before: u64,
}

#[derive(Debug)]
pub struct Learned {
    tasks: Bounded<TaskSeen>,
    asks: Bounded<Ask>,
    next_ask: u64,
}

impl Default for Learned {
    fn default() -> Self {
        Self {
            tasks: Bounded::new(MAX_TASKS),
            asks: Bounded::new(MAX_ASKS),
            next_ask: 0,
        }
    }
}

impl Learned {
    /// Reads the server's `result` to `tools/call` of `tool`: a task handle or a question
    /// ([`tasks::RESULT_TYPE_INPUT_REQUIRED`]).
    pub fn tool_result(&mut self, tool: &str, result: &Value) {
        match tasks::result_type(result) {
            Some(tasks::RESULT_TYPE_TASK) => {
                if let Some(id) = tasks::task_id(result) {
                    self.tasks.insert(
                        id,
                        TaskSeen {
                            tool: tool.to_owned(),
                            polls: 0,
                        },
                    );
                }
            }
            Some(tasks::RESULT_TYPE_INPUT_REQUIRED) => {
                self.next_ask += 1;
                self.asks.insert(
                    tool,
                    Ask {
                        serial: self.next_ask,
                        result: result.clone(),
                    },
                );
            }
            _ => {}
        }
    }

    /// A `tasks/*` request (`method`) naming `task_id`: the task as known, its polls counted when it is a
    /// `tasks/get`. `None` for a task the proxy did not see made.
    pub fn task_request(&mut self, method: &str, task_id: &str) -> Option<TaskRequest> {
        let task = self.tasks.get_mut(task_id)?;
        let polls_before = task.polls;
        if method == tasks::GET {
            task.polls += 1;
        }
        Some(TaskRequest {
            task_id: task_id.to_owned(),
            tool: task.tool.clone(),
            polls_before,
        })
    }

    /// The last question `tool` asked.
    pub fn ask(&self, tool: &str) -> Option<&Ask> {
        self.asks.get(tool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tasks_are_known_by_their_tool_and_counted_by_poll_within_the_bound() {
        let mut learned = Learned::default();
        for n in 0..=MAX_TASKS {
            learned.tool_result(
                "slow_job",
                &json!({tasks::RESULT_TYPE: tasks::RESULT_TYPE_TASK, tasks::TASK_ID: format!("t{n}"),
                    tasks::STATUS: "working"}),
            );
        }
        assert_eq!(learned.task_request("tasks/get", "t0"), None, "forgotten");
        let last = format!("t{MAX_TASKS}");
        let first = learned.task_request("tasks/get", &last).unwrap();
        assert_eq!((first.tool.as_str(), first.polls_before), ("slow_job", 0));
        let cancel = learned.task_request("tasks/cancel", &last).unwrap();
        assert_eq!(cancel.polls_before, 1);
        assert_eq!(
            learned
                .task_request("tasks/get", &last)
                .unwrap()
                .polls_before,
            1,
            "a cancel is not a poll"
        );
    }

    #[test]
    fn a_new_question_gets_a_new_serial() {
        let mut learned = Learned::default();
        let ask =
            json!({tasks::RESULT_TYPE: tasks::RESULT_TYPE_INPUT_REQUIRED, "requestState": "s"});
        learned.tool_result("book", &ask);
        let first = learned.ask("book").unwrap().serial;
        let answer = json!({tasks::RESULT_TYPE: tasks::RESULT_TYPE_COMPLETE, "content": []});
        learned.tool_result("book", &answer);
        assert_eq!(learned.ask("book").unwrap().serial, first);
        learned.tool_result("book", &ask);
        assert!(learned.ask("book").unwrap().serial > first);
    }
}
