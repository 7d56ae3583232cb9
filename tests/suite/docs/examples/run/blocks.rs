//! The examples that are not shell commands: tool calls and their answers, client configurations, plans,
//! data and Python, each checked as its block says.

use std::path::Path;
use std::process::Stdio;

use serde_json::Value;

use super::{RUN_LIMIT, Runner};
use crate::docs::examples::extract::{Example, Part};
use crate::docs::examples::served::{self, Served, Serves, describe, tail};
use crate::docs::examples::shape;
use crate::support::common;
use crate::support::indexing::{self, EmbedConfig, EmbedServer};

impl Runner {
    async fn agent(&mut self) -> &common::Client {
        if self.agent.is_none() {
            let embed = EmbedServer::start(EmbedConfig {
                local_only: true,
                ..Default::default()
            })
            .await;
            let args = indexing::agent_args(&embed.base_url, "embedded");
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let mut env = indexing::server_env(&self.sandbox.data_dir());
            // A server a call names by `fault` (the chaos scenario's `command`) is this build, as in a shell.
            let path = std::env::var("PATH").unwrap_or_default();
            env.insert("PATH".to_owned(), format!("{}:{path}", self.bin.display()));
            let client = common::spawn_with(common::ServerSpec {
                agent_args: &args,
                env,
                ..Default::default()
            })
            .await;
            self.agent = Some((client, embed));
        }
        &self.agent.as_ref().expect("just started").0
    }

    pub(super) async fn call(&mut self, example: &Example, tool: &str, error: bool) {
        self.answer = None;
        let arguments: Value = match serde_json::from_str(&self.localize(&example.text)) {
            Ok(arguments) => arguments,
            Err(e) => return self.fail(example.line, format!("not JSON: {e}")),
        };
        if !arguments.is_object() {
            return self.fail(example.line, "a tool's arguments are an object".to_owned());
        }
        let agent = self.agent().await;
        // A measurement is made with no CPU-heavy test beside it (a stall of the machine would be measured).
        let _quiet = if example.measures {
            Some(common::CPU_HEAVY.lock().await)
        } else {
            None
        };
        let result =
            match tokio::time::timeout(RUN_LIMIT, common::call(agent, tool, arguments)).await {
                Ok(Ok(result)) => result,
                Ok(Err(e)) => return self.fail(example.line, format!("{tool}: {e}")),
                Err(_) => return self.fail(example.line, format!("{tool} ran over {RUN_LIMIT:?}")),
            };
        let text = result
            .content
            .iter()
            .find_map(|block| block.as_text().map(|t| t.text.clone()))
            .unwrap_or_default();
        if common::is_error(&result) != error {
            let expected = if error { "an error" } else { "no error" };
            return self.fail(
                example.line,
                format!("{tool} answered {text:?}; the page expects {expected}"),
            );
        }
        let declares_output = agent
            .list_all_tools()
            .await
            .ok()
            .and_then(|tools| tools.into_iter().find(|t| t.name == tool))
            .is_some_and(|t| t.output_schema.is_some());
        if !error && declares_output && result.structured_content.is_none() {
            return self.fail(
                example.line,
                format!("{tool} answered no structuredContent"),
            );
        }
        self.outcome.count("tool calls");
        self.answer = Some(result);
    }

    pub(super) fn answer(&mut self, example: &Example, part: Part, exact: bool) {
        let Some(result) = &self.answer else {
            return self.fail(
                example.line,
                "an answer block follows no answered call".to_owned(),
            );
        };
        let actual = match part {
            Part::Structured => result.structured_content.clone().unwrap_or(Value::Null),
            Part::Text => {
                let text = result
                    .content
                    .iter()
                    .find_map(|block| block.as_text().map(|t| t.text.clone()))
                    .unwrap_or_default();
                serde_json::from_str(&text).unwrap_or(Value::String(text))
            }
        };
        let shown: Value = match serde_json::from_str(&self.localize(&example.text)) {
            Ok(shown) => shown,
            Err(e) => return self.fail(example.line, format!("not JSON: {e}")),
        };
        let differences = if exact {
            shape::value_differences(&shown, &actual)
        } else {
            shape::differences(&shown, &actual)
        };
        if differences.is_empty() {
            self.outcome.count("answers checked");
        } else {
            self.fail(
                example.line,
                format!(
                    "the answer is not what the page shows: {}\n  got {actual}",
                    differences.join("; ")
                ),
            );
        }
    }

    /// Each server of an MCP client configuration answers `initialize`: a command (the `fault` in it is
    /// this build) started as the client would, or a URL reached with the configured headers.
    pub(super) async fn config(&mut self, example: &Example) {
        let config: Value = match serde_json::from_str(&self.localize(&example.text)) {
            Ok(config) => config,
            Err(e) => return self.fail(example.line, format!("not JSON: {e}")),
        };
        let Some(servers) = config["mcpServers"].as_object() else {
            return self.fail(example.line, "no `mcpServers` object".to_owned());
        };
        for (name, server) in servers.clone() {
            let checked = if let Some(url) = server["url"].as_str() {
                let mut token = None;
                let mut headers = Vec::new();
                for (header, value) in server["headers"].as_object().into_iter().flatten() {
                    let value = self.expand(value.as_str().unwrap_or_default()).await;
                    match value.strip_prefix("Bearer ") {
                        Some(bearer) if header.eq_ignore_ascii_case("authorization") => {
                            token = Some(bearer.to_owned())
                        }
                        _ => headers.push((header.clone(), value)),
                    }
                }
                served::http_handshake(url, token, &headers).await
            } else {
                self.config_command(&server).await
            };
            match checked {
                Ok(()) => self.outcome.count("client configurations started"),
                Err(why) => self.fail(example.line, format!("server `{name}`: {why}")),
            }
        }
    }

    async fn config_command(&self, server: &Value) -> Result<(), String> {
        let program = server["command"].as_str().ok_or("no `command`")?;
        let program = if Path::new(program).file_name().is_some_and(|n| n == "fault") {
            common::fault_bin().to_owned()
        } else {
            program.to_owned()
        };
        let mut command = self.command(&program);
        for arg in server["args"].as_array().into_iter().flatten() {
            command.arg(arg.as_str().ok_or("an argument that is not a string")?);
        }
        for (key, value) in server["env"].as_object().into_iter().flatten() {
            command.env(key, self.expand(value.as_str().unwrap_or_default()).await);
        }
        let at = format!("`{program}`");
        let mut served = Served::start(command.into(), 0, at, Serves::Stdio)
            .map_err(|e| format!("`{program}` did not start: {e}"))?;
        if let Err(why) = served.initialize().await {
            served.kill().await;
            return Err(format!("{why}\n{}", served.output_tail()));
        }
        served.stop().await
    }

    /// `${env:NAME}` (Cursor's way of naming a variable) replaced by the page's value of NAME.
    async fn expand(&self, value: &str) -> String {
        let mut out = value.to_owned();
        while let Some(start) = out.find("${env:") {
            let Some(len) = out[start..].find('}') else {
                break;
            };
            let name = out[start + "${env:".len()..start + len].to_owned();
            let found = self.env_value(&name).await.unwrap_or_default();
            out.replace_range(start..=start + len, &found);
        }
        out
    }

    pub(super) async fn plan(&mut self, example: &Example) {
        let path = self
            .root
            .join(format!("plan-{}.{}", example.line, example.lang));
        if let Err(e) = std::fs::write(&path, self.localize(&example.text)) {
            return self.fail(example.line, format!("write the plan: {e}"));
        }
        let mut command = tokio::process::Command::from(self.command(common::fault_bin()));
        command
            .args(["mcp-proxy", "--print-plan", "--plan"])
            .arg(&path);
        match command.output().await {
            Ok(output) if output.status.success() => self.outcome.count("plans loaded"),
            Ok(output) => self.fail(
                example.line,
                format!(
                    "`fault mcp-proxy --print-plan` refused the plan:\n{}",
                    tail(&String::from_utf8_lossy(&output.stderr))
                ),
            ),
            Err(e) => self.fail(example.line, format!("fault mcp-proxy: {e}")),
        }
    }

    pub(super) fn data(&mut self, example: &Example) {
        let text = &example.text;
        let parsed = match example.lang.as_str() {
            "yaml" => serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text)
                .map(drop)
                .map_err(|e| e.to_string()),
            _ => serde_json::from_str::<Value>(text)
                .map(drop)
                .or_else(|whole| {
                    // JSON lines: each line a value.
                    text.lines()
                        .filter(|l| !l.trim().is_empty())
                        .try_for_each(|l| serde_json::from_str::<Value>(l).map(drop))
                        .map_err(|_| whole.to_string())
                }),
        };
        match parsed {
            Ok(()) => self.outcome.count("data blocks parsed"),
            Err(e) => self.fail(example.line, format!("does not parse: {e}")),
        }
    }

    pub(super) async fn python(&mut self, example: &Example, run: bool) {
        // Any Python compiles a snippet (`ast` is in every one); a script needs FastMCP.
        let modules: &[&str] = if run { &["fastmcp"] } else { &["ast"] };
        let python = match common::python_with(modules) {
            Ok(python) => python,
            Err(why) => {
                let at = self.at(example.line);
                self.outcome.missing.push(format!("{at}: {why}"));
                return;
            }
        };
        let script = match &example.file {
            Some(path) => self.path(path),
            None => {
                let path = self.work.join(format!("example-{}.py", example.line));
                if let Err(e) = std::fs::write(&path, self.localize(&example.text)) {
                    return self.fail(example.line, format!("write the script: {e}"));
                }
                path
            }
        };
        let script = script.display().to_string();
        if !run {
            // Snippets are written as in an async REPL (a top-level `async with`), so they are compiled so.
            let check = "import ast, sys; path = sys.argv[1]; \
                         compile(open(path).read(), path, 'exec', flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)";
            let mut command = tokio::process::Command::from(self.command(&python));
            command.args(["-c", check, &script]);
            return match command.output().await {
                Ok(output) if output.status.success() => self.outcome.count("python compiled"),
                Ok(output) => self.fail(
                    example.line,
                    format!(
                        "does not compile:\n{}",
                        tail(&String::from_utf8_lossy(&output.stderr))
                    ),
                ),
                Err(e) => self.fail(example.line, format!("{python}: {e}")),
            };
        }
        let quoted = shlex::try_join([python.as_str(), script.as_str()]).expect("quotable");
        let mut process = self.bash(&format!("exec {quoted}"));
        process.stdin(Stdio::null()).kill_on_drop(true);
        match tokio::time::timeout(RUN_LIMIT, process.output()).await {
            Ok(Ok(output)) if output.status.success() => self.outcome.count("python scripts run"),
            Ok(Ok(output)) => self.fail(
                example.line,
                format!(
                    "the script exited with {}:\n{}",
                    describe(output.status),
                    tail(&String::from_utf8_lossy(&output.stderr))
                ),
            ),
            Ok(Err(e)) => self.fail(example.line, format!("{python}: {e}")),
            Err(_) => self.fail(example.line, format!("the script ran over {RUN_LIMIT:?}")),
        }
    }
}
