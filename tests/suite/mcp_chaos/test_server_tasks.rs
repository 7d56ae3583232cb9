//! The task-capable tools of `fault mcp-test-server` (slow_job, fails_late, needs_input) under rmcp's MCP
//! client, as tasks and as plain calls: a task created at once, its status message counting, completed, failed
//! and cancelled as the Tasks extension says; needs_input's value asked for in the task (tasks/update), by an
//! input_required result on a 2026-07-28 call (the retry with inputResponses) and by elicitation/create on an
//! older one; the refusals of bad arguments. Then the chaos scenario's driver calling them as tasks, over stdio
//! and Streamable HTTP, and against a server whose tools answer without tasks.

use std::time::{Duration, Instant};

use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, RoleClient,
    model::{
        CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig,
        ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
        Implementation, InputRequest, ProtocolVersion, RequestMetaObject, TaskPayload, TaskStatus,
        UpdateTaskParams,
    },
    service::{RequestContext, RunningService},
    transport::TokioChildProcess,
};
use serde_json::{Value, json};

use crate::{
    mcp::http::HttpServer,
    mcp::tasks::{cancel, declared, error_message, get, poll_to_end, task_call},
    mcp_chaos::scenario,
    mcp_chaos::test_server::structured,
    support::common::{self, Client, call},
};

async fn server() -> Client {
    common::spawn_command(&["mcp-test-server"]).await
}

/// A client that declares elicitation (and, with `tasks`, the tasks extension) and answers every form with
/// `value`, or declines it when `None`.
#[derive(Clone)]
struct Answers {
    value: Option<&'static str>,
    tasks: bool,
}

impl ClientHandler for Answers {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = if self.tasks {
            ClientCapabilities::builder().enable_tasks().build()
        } else {
            ClientCapabilities::default()
        };
        capabilities.elicitation = Some(ElicitationCapability::new());
        ClientConfig::new(capabilities, Implementation::new("task-tests", "1"))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(match self.value {
            Some(value) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"value": value}))
            }
            None => ElicitResult::new(ElicitationAction::Decline),
        })
    }
}

/// The test server over stdio under `handler`, with the `initialize` handshake (protocol 2025-11-25).
async fn legacy_server(handler: Answers) -> common::Server<Answers> {
    common::spawn_command_with(&["mcp-test-server"], handler, false)
        .await
        .0
}

/// The test server over stdio under `handler`, on protocol 2026-07-28 (server/discover, no session: every
/// request carries its capabilities in `_meta`).
async fn discover_server(
    handler: Answers,
) -> (RunningService<RoleClient, Answers>, common::Sandbox) {
    let sandbox = common::Sandbox::new("fault mcp-test-server");
    let mut command = std::process::Command::new(common::fault_bin());
    command.arg("mcp-test-server");
    sandbox.isolate(&mut command);
    let (transport, _) = TokioChildProcess::builder(tokio::process::Command::from(command))
        .stderr(sandbox.stderr_sink())
        .spawn()
        .expect("spawn the fault binary");
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    match handler.serve_with_lifecycle(transport, lifecycle).await {
        Ok(client) => (client, sandbox),
        Err(e) => panic!("server/discover: {e}\n{}", sandbox.stderr()),
    }
}

/// A `tools/call` whose `_meta` declares the tasks extension and elicitation (a request's own capabilities
/// stand for the client's: those given at `initialize` are not added to them).
fn task_call_that_can_be_asked(tool: &str, arguments: Value) -> CallToolRequestParams {
    let mut params = task_call(tool, arguments);
    let mut capabilities = ClientCapabilities::builder().enable_tasks().build();
    capabilities.elicitation = Some(ElicitationCapability::new());
    let mut meta = RequestMetaObject::default();
    meta.set_client_capabilities(capabilities);
    params.meta = Some(meta);
    params
}

/// Starts `tool` as a task: its id, after checking it came at once with the test server's poll interval.
async fn start<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    tool: &str,
    arguments: Value,
) -> String {
    start_call(client, task_call(tool, arguments)).await
}

/// [`start`] with the call's params as given.
async fn start_call<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    params: CallToolRequestParams,
) -> String {
    let tool = params.name.to_string();
    let sent = Instant::now();
    let response = client
        .peer()
        .call_tool_once(params)
        .await
        .expect("tools/call");
    let took = sent.elapsed();
    assert!(
        took < Duration::from_secs(1),
        "{tool}: task created after {took:?}"
    );
    match response {
        CallToolResponse::Task(created) => {
            assert_eq!(created.task.status, TaskStatus::Working);
            assert_eq!(created.task.poll_interval_ms, Some(250));
            assert_eq!(created.task.ttl_ms, Some(600_000));
            created.task.task_id
        }
        other => panic!("{tool} with the tasks extension: not a task: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_job_as_a_task_counts_its_seconds_and_completes() {
    let client = server().await;
    let id = start(&client, "slow_job", json!({"seconds": 3})).await;
    let (messages, payload) = poll_to_end(&client, &id, Duration::from_secs(20)).await;
    for counted in ["1 s of 3 s", "2 s of 3 s", "3 s of 3 s"] {
        assert!(
            messages.iter().any(|m| m == counted),
            "{counted}: {messages:?}"
        );
    }
    match payload {
        TaskPayload::Completed { result } => {
            assert_eq!(result["structuredContent"], json!({"seconds": 3}));
            assert_eq!(result["isError"], false);
        }
        other => panic!("not completed: {other:?}"),
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fails_late_as_a_task_ends_failed_with_its_json_rpc_error() {
    let client = server().await;
    let id = start(
        &client,
        "fails_late",
        json!({"seconds": 1, "message": "the disk filled up"}),
    )
    .await;
    let (messages, payload) = poll_to_end(&client, &id, Duration::from_secs(20)).await;
    assert_eq!(
        messages.last().map(String::as_str),
        Some("failed after 1 s")
    );
    match payload {
        TaskPayload::Failed { error } => {
            assert_eq!(error["code"], -32603);
            assert_eq!(error["message"], "the disk filled up");
        }
        other => panic!("not failed: {other:?}"),
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_slow_job_ends_cancelled_and_cannot_be_cancelled_again() {
    let client = server().await;
    let id = start(&client, "slow_job", json!({"seconds": 60})).await;
    let asked = Instant::now();
    client
        .peer()
        .cancel_task(cancel(&id))
        .await
        .expect("tasks/cancel");
    let mut status = TaskStatus::Working;
    while !status.is_terminal() && asked.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        status = client
            .peer()
            .get_task(get(&id))
            .await
            .expect("tasks/get")
            .task
            .status();
    }
    assert_eq!(status, TaskStatus::Cancelled, "after {:?}", asked.elapsed());
    let again = client.peer().cancel_task(cancel(&id)).await.unwrap_err();
    let (code, message) = error_message(again);
    assert_eq!(code, -32602);
    assert!(message.contains("already cancelled"), "{message}");
    let lost = client
        .peer()
        .get_task(get("no-such-task"))
        .await
        .unwrap_err();
    let (code, message) = error_message(lost);
    assert_eq!(code, -32602);
    assert!(message.contains("unknown task: no-such-task"), "{message}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn needs_input_as_a_task_waits_for_its_value_from_tasks_update() {
    let client = legacy_server(Answers {
        value: None,
        tasks: true,
    })
    .await;
    let id = start_call(
        &client,
        task_call_that_can_be_asked("needs_input", json!({"question": "Which colour?"})),
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let requests = loop {
        let task = client
            .peer()
            .get_task(get(&id))
            .await
            .expect("tasks/get")
            .task;
        if let TaskPayload::InputRequired { input_requests } = task.payload {
            assert_eq!(
                task.task.status_message.as_deref(),
                Some("waiting for the value")
            );
            break input_requests;
        }
        assert!(Instant::now() < deadline, "never input_required: {task:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    match requests.get("value") {
        Some(InputRequest::Elicitation(request)) => match &request.params {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => {
                assert_eq!(message, "Which colour?");
                let schema = serde_json::to_value(requested_schema).unwrap();
                assert_eq!(schema["required"], json!(["value"]), "{schema}");
            }
            other => panic!("not a form: {other:?}"),
        },
        other => panic!("no elicitation under `value`: {requests:?} ({other:?})"),
    }
    let answer = [(
        "value".to_owned(),
        json!({"action": "accept", "content": {"value": "teal"}}),
    )];
    let mut update = UpdateTaskParams::new(id.clone(), answer.into());
    update.meta = declared();
    client
        .peer()
        .update_task(update)
        .await
        .expect("tasks/update");
    let (_, payload) = poll_to_end(&client, &id, Duration::from_secs(10)).await;
    match payload {
        TaskPayload::Completed { result } => assert_eq!(
            result["structuredContent"],
            json!({"value": "teal", "asked_by": "task"})
        ),
        other => panic!("not completed: {other:?}"),
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn needs_input_on_a_2026_07_28_call_answers_input_required_and_the_retry_completes() {
    let (client, _sandbox) = discover_server(Answers {
        value: Some("42"),
        tasks: false,
    })
    .await;
    let once = client
        .call_tool_once(
            CallToolRequestParams::new("needs_input").with_arguments(Default::default()),
        )
        .await
        .expect("tools/call");
    match once {
        CallToolResponse::InputRequired(asked) => {
            let requests = asked.input_requests.expect("inputRequests");
            assert!(
                matches!(requests.get("value"), Some(InputRequest::Elicitation(_))),
                "{requests:?}"
            );
        }
        other => panic!("not input_required: {other:?}"),
    }
    // rmcp's call_tool answers the form through the handler and retries with inputResponses.
    let result = client
        .call_tool(CallToolRequestParams::new("needs_input").with_arguments(Default::default()))
        .await
        .expect("tools/call with its retry");
    assert_eq!(
        structured(&result),
        json!({"value": "42", "asked_by": "mrtr"})
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn needs_input_before_2026_07_28_asks_with_elicitation_create() {
    let client = legacy_server(Answers {
        value: Some("forty-two"),
        tasks: false,
    })
    .await;
    let result = call(&client, "needs_input", json!({}))
        .await
        .expect("tools/call");
    assert_eq!(
        structured(&result),
        json!({"value": "forty-two", "asked_by": "elicitation"})
    );
    client.cancel().await.unwrap();
    let declines = legacy_server(Answers {
        value: None,
        tasks: false,
    })
    .await;
    let result = call(&declines, "needs_input", json!({}))
        .await
        .expect("tools/call");
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        common::text(&result),
        "needs_input: the client declined the input"
    );
    declines.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn needs_input_from_a_client_without_elicitation_is_refused_with_32021() {
    let client = server().await;
    for request in [
        CallToolRequestParams::new("needs_input"),
        task_call("needs_input", json!({})),
    ] {
        let error = client.peer().call_tool_once(request).await.unwrap_err();
        let (code, message) = error_message(error);
        assert_eq!(code, -32021);
        assert!(
            message.contains("declare the `elicitation` capability"),
            "{message}"
        );
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_extension_the_task_tools_are_plain_tools() {
    let client = server().await;
    let started = Instant::now();
    let result = call(&client, "slow_job", json!({"seconds": 1}))
        .await
        .expect("slow_job");
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(structured(&result), json!({"seconds": 1}));
    match call(&client, "fails_late", json!({"seconds": 0})).await {
        Err(rmcp::ServiceError::McpError(error)) => {
            assert_eq!(error.code.0, -32603);
            assert_eq!(error.message, "fails_late: failed after 0 s, as asked");
        }
        other => panic!("fails_late: not a JSON-RPC error: {other:?}"),
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_are_refused_by_name_with_or_without_the_extension() {
    let client = server().await;
    let cases = [
        (
            "slow_job",
            json!({"secnds": 2}),
            "invalid arguments: unknown argument `secnds` (this tool takes: seconds)",
        ),
        (
            "slow_job",
            json!({"seconds": 601}),
            "invalid arguments: `seconds` must be between 0 and 600, got 601",
        ),
        (
            "fails_late",
            json!({"seconds": -1}),
            "invalid arguments: `seconds` must be between 0 and 600, got -1",
        ),
        (
            "slow_job",
            json!({"seconds": "ten"}),
            "invalid arguments: `seconds` must be a whole number, got \"ten\"",
        ),
    ];
    for (tool, arguments, refusal) in cases {
        let plain = call(&client, tool, arguments.clone())
            .await
            .expect("tools/call");
        assert_eq!(
            (plain.is_error, common::text(&plain)),
            (Some(true), refusal)
        );
        match client
            .peer()
            .call_tool_once(task_call(tool, arguments))
            .await
        {
            Ok(CallToolResponse::Complete(result)) => {
                assert_eq!(
                    (result.is_error, common::text(&result)),
                    (Some(true), refusal)
                );
            }
            other => panic!("{tool}: a refusal as a task: {other:?}"),
        }
    }
    client.cancel().await.unwrap();
}

/// The test server as the chaos tool's `server` input.
fn test_server_command() -> Value {
    json!({"command": common::fault_bin(), "args": ["mcp-test-server"]})
}

/// The report's schedule line, which says how the calls ran.
fn schedule(report: &Value) -> &str {
    report["client"]["schedule"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chaos_driver_calls_slow_job_as_tasks_over_stdio() {
    let agent = common::spawn().await;
    let (text, report) = scenario::run(
        &agent,
        json!({
            "server": test_server_command(),
            "calls": [{"tool": "slow_job", "arguments": {"seconds": 1}},
                      {"tool": "fails_late", "arguments": {"seconds": 0}}],
            "repeat": 2,
            "as_tasks": true,
        }),
    )
    .await;
    let slow = scenario::tool(&report, "slow_job");
    assert_eq!(slow["calls"], 2, "{text}");
    assert_eq!(slow["outcomes"]["ok"], 2, "{text}");
    // Each call's latency runs to its task's end: a second of work, polled every 250 ms.
    let p50 = slow["latency"]["p50_ms"].as_f64().unwrap_or_default();
    assert!((1000.0..2500.0).contains(&p50), "p50 {p50}: {text}");
    let fails = scenario::tool(&report, "fails_late");
    assert_eq!(fails["outcomes"]["protocol_error"], 2, "{text}");
    let line = schedule(&report);
    assert!(
        line.contains("called as tasks (io.modelcontextprotocol/tasks)"),
        "{line}"
    );
    assert!(
        line.contains("tasks: 4 created (2 completed, 2 failed, 0 cancelled by the server, 0 lost"),
        "{line}"
    );
    assert!(text.contains("called as tasks"), "{text}");
    // The scenario's proxy counts the same tasks, under the tool whose call made each.
    assert_eq!(
        report["run"]["mcp_tasks"],
        json!([
            {"tool": "fails_late", "created": 2, "completed": 0, "failed": 2, "cancelled": 0, "lost": 0},
            {"tool": "slow_job", "created": 2, "completed": 2, "failed": 0, "cancelled": 0, "lost": 0},
        ]),
        "{text}"
    );
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chaos_driver_cancels_a_task_at_its_timeout_over_http() {
    let server = HttpServer::start(&["mcp-test-server"], &["--log-calls"], &[]).await;
    let agent = common::spawn().await;
    let (text, report) = scenario::run(
        &agent,
        json!({
            "server": {"url": server.url()},
            "calls": [{"tool": "slow_job", "arguments": {"seconds": 30}},
                      {"tool": "slow_job", "arguments": {"seconds": 0}}],
            "as_tasks": true,
            "client": {"timeout_ms": 1500},
        }),
    )
    .await;
    let slow = scenario::tool(&report, "slow_job");
    assert_eq!(slow["calls"], 2, "{text}");
    assert_eq!(slow["outcomes"]["timeout"], 1, "{text}");
    assert_eq!(slow["outcomes"]["ok"], 1, "{text}");
    let line = schedule(&report);
    assert!(
        line.contains("tasks: 2 created (1 completed, 0 failed, 0 cancelled by the server, 0 lost, 1 cancelled at the client's timeout"),
        "{line}"
    );
    // The server saw the task cancelled: its tool call ended on the cancellation, not after 30 s.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !server
        .stderr()
        .contains("task tool: cancelled by the client")
    {
        assert!(Instant::now() < deadline, "{}", server.stderr());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_tasks_against_a_server_whose_tools_answer_without_tasks_takes_the_plain_answers() {
    let Some(python) = crate::mcp_proxy::http::python(
        "as_tasks_against_a_server_whose_tools_answer_without_tasks_takes_the_plain_answers",
    ) else {
        return;
    };
    let upstream = crate::mcp_proxy::http::fastmcp_upstream(&python).await;
    let agent = common::spawn().await;
    let (text, report) = scenario::run(
        &agent,
        json!({
            "server": {"url": upstream.url},
            "calls": [{"tool": "echo", "arguments": {"text": "hi"}}],
            "repeat": 3,
            "as_tasks": true,
        }),
    )
    .await;
    let echo = scenario::tool(&report, "echo");
    assert_eq!(echo["calls"], 3, "{text}");
    assert_eq!(echo["outcomes"]["ok"], 3, "{text}");
    assert!(
        schedule(&report).ends_with("tasks: 0 created (0 completed, 0 failed, 0 cancelled by the server, 0 lost, 0 cancelled at the client's timeout, 0 ended by a failed poll); 3 calls answered without a task"),
        "{}",
        schedule(&report)
    );
    agent.cancel().await.unwrap();
}
