//! A minimal MCP client over stdio for benchmarks: newline-delimited JSON-RPC to a spawned
//! `fault agent tool`, answers matched by id (notifications in between are skipped).
// Each benchmark includes this file and uses part of it.
#![allow(dead_code)]

use std::{
    io::{BufRead, BufReader, Write},
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
};

use serde_json::{Value, json};

pub struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    pub fn spawn() -> Self {
        Self::spawn_with(&[], &[])
    }

    /// `fault agent tool <agent_args>` with extra environment variables.
    pub fn spawn_with(agent_args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fault"))
            .args(["--log-level", "warn", "agent", "tool"])
            .args(agent_args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn fault");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
            next_id: 1,
        }
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        // One write, as an MCP client sends a message (`writeln!` on the pipe wrote each JSON token on its own).
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).unwrap();
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "server closed stdout"
            );
            let answer: Value = serde_json::from_str(&line).unwrap();
            if answer["id"] == id {
                return answer;
            }
        }
    }

    pub fn initialize(&mut self) -> Value {
        let answer = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}),
        );
        writeln!(
            self.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        answer
    }

    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert_ne!(answer["result"]["isError"], true, "{answer}");
        answer
    }

    /// The server's process id (for reading its memory from /proc).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn close(self) {
        let Self {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let status = child.wait().unwrap();
        assert!(status.success());
    }
}
