//! `fault mcp-scan` against real servers on this machine: `fault mcp-test-server`'s tools with planted
//! defects (each found, named by tool and field, and given a change in the fix guide), a defect fixed between
//! two scans of the same command, a server too small to score, `fault agent tool` itself (no hygiene finding,
//! every refusal naming its field), the same scan as the MCP tool, RateMyAgent 1.9.0 run on the same server
//! (every finding it reports we report, in no more wall time per call), and each input the scan refuses.

use std::{path::Path, process::Stdio, time::Duration};

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use crate::support::{common, optional};

/// The defect tools of `fault mcp-test-server --defects`, and `echo`, a clean one beside them.
const DEFECT_TOOLS: &str = "set_volume,lookup_user,export_report,search_docs,get_price,echo";

/// `fault mcp-scan <args>`: its exit status, stdout and stderr, bounded in time.
async fn scan(args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["mcp-scan"];
    all.extend_from_slice(args);
    let mut command = common::fault_command(&all);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let output = tokio::time::timeout(Duration::from_secs(240), command.output())
        .await
        .expect("fault mcp-scan ends within 240 s")
        .expect("fault mcp-scan runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the result is written"))
        .expect("the result is JSON")
}

fn ids(result: &Value) -> Vec<String> {
    result["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

#[tokio::test]
async fn every_planted_defect_is_found_named_and_given_a_change() {
    let _heavy = common::CPU_HEAVY.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let (guide, result, junit) = (
        path(dir.path(), "AGENTS.md"),
        path(dir.path(), "scan.json"),
        path(dir.path(), "junit.xml"),
    );
    let (code, stdout, stderr) = scan(&[
        "--guide",
        &guide,
        "--result",
        &result,
        "--junit",
        &junit,
        "--",
        common::fault_bin(),
        "mcp-test-server",
        "--defects",
        "all",
        "--tools",
        DEFECT_TOOLS,
    ])
    .await;
    assert_eq!(code, 1, "a failing scan exits 1\n{stdout}\n{stderr}");
    let result = read_json(Path::new(&result));
    let found = ids(&result);
    println!("{stdout}");
    for expected in [
        "invalid-accepted/set_volume/level",
        "crash/lookup_user/name",
        "head-of-line/export_report",
        "saturates/search_docs",
        "output-against-schema/get_price",
    ] {
        assert!(
            found.iter().any(|id| id == expected),
            "{expected} not in {found:?}"
        );
    }
    assert!(
        !found.iter().any(|id| id.contains("/echo")),
        "the clean tool has no finding: {found:?}"
    );
    // The saturation the test server plants: 4 calls in flight.
    let search = result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "search_docs")
        .unwrap();
    assert_eq!(search["saturation"]["peak_in_flight"], 4, "{search}");
    assert_eq!(result["verdict"]["outcome"], "fail");
    assert_eq!(result["schema_version"], 1);
    assert_eq!(result["kind"], "mcp-scan");
    // The result is what the published schema says.
    let published: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/schemas/scan-result.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&published).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&result)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");

    // The guide: one entry per finding, each with its tool and field, what to change and how to reproduce it.
    let guide = std::fs::read_to_string(&guide).unwrap();
    for (place, change) in [
        (
            "tool `set_volume`, field `level`",
            "refuse a value outside them",
        ),
        (
            "tool `lookup_user`, field `name`",
            "refuse a bad value with a tool error",
        ),
        ("tool `export_report`", "do not hold a server-wide lock"),
        (
            "tool `search_docs`",
            "Find what lets only 4 calls of `search_docs` run at once",
        ),
        (
            "tool `get_price`",
            "Make `structuredContent` match the declared outputSchema",
        ),
    ] {
        let entry = guide
            .split("\n### ")
            .find(|entry| entry.contains(place))
            .unwrap_or_else(|| panic!("no guide entry for {place}:\n{guide}"));
        assert!(entry.contains(change), "{place}: {entry}");
        assert!(
            entry.contains("- Evidence: sent `{") || place.contains("search_docs"),
            "{entry}"
        );
        assert!(
            entry.contains("- Reproduce: `fault mcp-scan --tool "),
            "{entry}"
        );
    }

    // JUnit: one case per dimension and per finding, the findings failed.
    let junit = std::fs::read_to_string(&junit).unwrap();
    let cases = junit.matches("<testcase ").count();
    let dimensions = result["verdict"]["dimensions"].as_array().unwrap().len();
    assert_eq!(cases, dimensions + found.len(), "{junit}");
    assert_eq!(
        junit.matches("<failure type=").count(),
        found.len(),
        "{junit}"
    );
}

#[tokio::test]
async fn a_defect_fixed_between_two_scans_shows_as_fixed_and_a_new_one_as_new() {
    let _heavy = common::CPU_HEAVY.lock().await;
    let dir = tempfile::tempdir().unwrap();
    // The same command both times, as a server's own command stays while its code changes.
    let planted = dir.path().join("defects");
    let server = dir.path().join("server.sh");
    std::fs::write(
        &server,
        format!(
            "#!/bin/sh\nexec '{}' mcp-test-server --tools set_volume,lookup_user,get_price --defects \"$(cat '{}')\"\n",
            common::fault_bin(),
            planted.display()
        ),
    )
    .unwrap();
    std::process::Command::new("chmod")
        .args(["+x", &server.display().to_string()])
        .status()
        .unwrap();
    let server = server.display().to_string();
    let (first, second, guide) = (
        path(dir.path(), "first.json"),
        path(dir.path(), "second.json"),
        path(dir.path(), "AGENTS.md"),
    );
    std::fs::write(&planted, "lenient-range,null-crash").unwrap();
    let (code, stdout, stderr) = scan(&[
        "--phase", "baseline", "--phase", "contract", "--result", &first, "--", &server,
    ])
    .await;
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    std::fs::write(&planted, "null-crash,wrong-output").unwrap();
    let (code, stdout, stderr) = scan(&[
        "--phase",
        "baseline",
        "--phase",
        "contract",
        "--previous",
        &first,
        "--result",
        &second,
        "--guide",
        &guide,
        "--",
        &server,
    ])
    .await;
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let since = &read_json(Path::new(&second))["since_last"];
    let fixed: Vec<&str> = since["fixed"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["id"].as_str())
        .collect();
    assert_eq!(fixed, ["invalid-accepted/set_volume/level"], "{since}");
    assert_eq!(
        since["new"],
        json!(["output-against-schema/get_price"]),
        "{since}"
    );
    assert_eq!(
        since["unchanged"],
        json!(["crash/lookup_user/name"]),
        "{since}"
    );
    let guide = std::fs::read_to_string(&guide).unwrap();
    assert!(
        guide.contains("- Fixed: `invalid-accepted/set_volume/level`")
            && guide.contains("- New: `output-against-schema/get_price`")
            && guide.contains("- Unchanged: `crash/lookup_user/name`"),
        "{guide}"
    );
    assert!(stdout.contains("## Since the scan of"), "{stdout}");
}

#[tokio::test]
async fn a_server_too_small_to_measure_gets_no_score_with_reasons() {
    let _heavy = common::CPU_HEAVY.lock().await;
    let (code, stdout, stderr) = scan(&[
        "--samples",
        "3",
        "--max-in-flight",
        "1",
        "--",
        common::fault_bin(),
        "mcp-test-server",
        "--tools",
        "echo",
    ])
    .await;
    assert_eq!(code, 1, "no verdict is not a pass\n{stdout}\n{stderr}");
    assert!(stdout.contains("**Verdict: NO VERDICT**"), "{stdout}");
    for reason in [
        "too little was measured to score",
        "invalid-input cases; the policy needs 10",
        "latency: no tool has 20 successful baseline calls (the most: 3)",
    ] {
        assert!(stdout.contains(reason), "{reason}:\n{stdout}");
    }
    assert!(!stdout.contains("score 0"), "{stdout}");
}

#[tokio::test]
async fn our_own_server_has_no_hygiene_finding_and_names_the_field_of_every_refusal() {
    let _heavy = common::CPU_HEAVY.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let result = path(dir.path(), "self.json");
    let source = common::code_fixture("sample.py");
    let arguments = json!({
        "fault_list_function_names": {"file": source},
        "fault_extract_code_block": {"file": source, "func": "cached"},
    })
    .to_string();
    let (code, stdout, stderr) = scan(&[
        "--samples",
        "5",
        "--phase",
        "hygiene",
        "--phase",
        "baseline",
        "--phase",
        "contract",
        "--arguments",
        &arguments,
        "--result",
        &result,
        "--",
        common::fault_bin(),
        "agent",
        "tool",
    ])
    .await;
    assert!(code == 0 || code == 1, "{stdout}\n{stderr}");
    let result = read_json(Path::new(&result));
    let hygiene: Vec<&Value> = result["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["phase"] == "hygiene")
        .collect();
    assert!(
        hygiene.is_empty(),
        "hygiene findings on our own tools: {hygiene:#?}"
    );
    let tally = &result["contract"];
    assert!(tally["cases"].as_u64().unwrap() > 50, "{tally}");
    assert_eq!(tally["refused_unnamed"], 0, "{tally}\n{stdout}");
    assert_eq!(tally["accepted_invalid"], 0, "{tally}\n{stdout}");
    assert_eq!(tally["crashed"], 0, "{tally}\n{stdout}");
    let listed = result["tools"].as_array().unwrap();
    let code_tool = listed
        .iter()
        .find(|t| t["name"] == "fault_list_function_names")
        .expect("the code tools are read-only and scanned");
    assert_eq!(code_tool["baseline"]["ok"], 5, "{code_tool}");
}

#[tokio::test]
async fn the_scan_as_an_mcp_tool_returns_the_verdict_in_structured_content() {
    let _heavy = common::CPU_HEAVY.lock().await;
    let client = common::spawn().await;
    let arguments = json!({
        "command": [common::fault_bin(), "mcp-test-server", "--defects", "lenient-range", "--tools", "set_volume"],
        "phases": ["contract"],
    });
    let result = client
        .peer()
        .call_tool(
            CallToolRequestParams::new("fault_scan_mcp_server")
                .with_arguments(arguments.as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    assert!(!common::is_error(&result), "{}", common::text(&result));
    let report = result.structured_content.clone().unwrap();
    assert_eq!(ids(&report), ["invalid-accepted/set_volume/level"]);
    assert!(common::text(&result).contains("# MCP scan:"));
    // A misspelt field is refused with the closest declared one, and nothing runs.
    let refused = client
        .peer()
        .call_tool(
            CallToolRequestParams::new("fault_scan_mcp_server")
                .with_arguments(json!({"comand": ["x"]}).as_object().unwrap().clone()),
        )
        .await;
    let text = match refused {
        Ok(result) => common::text(&result).to_owned(),
        Err(e) => e.to_string(),
    };
    assert!(
        text.contains("comand") && text.contains("command"),
        "{text}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn each_bad_input_is_refused_by_name_and_the_scan_stays_in_its_time() {
    let _heavy = common::CPU_HEAVY.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let test_server = [common::fault_bin(), "mcp-test-server", "--tools", "echo"];
    let with_server = |args: &[&str]| -> Vec<String> {
        args.iter()
            .map(|a| a.to_string())
            .chain(std::iter::once("--".to_owned()))
            .chain(test_server.iter().map(|a| a.to_string()))
            .collect()
    };
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, "pass_scor: 80\n").unwrap();
    let weights = dir.path().join("weights.yaml");
    std::fs::write(&weights, "weights: {hygiene: 0.5, contract: 0.6}\n").unwrap();
    let other = dir.path().join("other.json");
    std::fs::write(
        &other,
        json!({"kind": "mcp-scan", "schema_version": 1, "server": "python other.py"}).to_string(),
    )
    .unwrap();
    let policy = policy.display().to_string();
    let weights = weights.display().to_string();
    let other = other.display().to_string();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["--".into(), "/nonexistent/mcp-server".into()],
            "did not start",
        ),
        (with_server(&["--policy", &policy]), "pass_scor"),
        (with_server(&["--policy", &weights]), "make them sum to 1"),
        (with_server(&["--previous", &other]), "another server"),
        (
            with_server(&["--guide", "/nonexistent/dir/AGENTS.md"]),
            "/nonexistent/dir",
        ),
        (with_server(&["--tool", "ecko"]), "echo"),
        (with_server(&["--phase", "contrakt"]), "contract"),
        (vec!["--url".into(), "ftp://x".into()], "--url"),
        (vec![], "command"),
    ];
    for (args, expected) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, stderr) = scan(&args).await;
        assert_eq!(
            code, 2,
            "{args:?} could not run: exit 2\n{stdout}\n{stderr}"
        );
        assert!(
            stderr.contains(expected),
            "{args:?}: expected {expected:?} in\n{stderr}"
        );
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
    }
    // Bounded in time: the slow tool's saturation is cut at the scan's timeout, the report says so.
    let started = std::time::Instant::now();
    let (code, stdout, stderr) = scan(&[
        "--scan-timeout",
        "2",
        "--",
        common::fault_bin(),
        "mcp-test-server",
        "--defects",
        "all",
        "--tools",
        "export_report",
    ])
    .await;
    let took = started.elapsed();
    assert!(code == 1, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("stopped early: `scan_timeout` (2 s) reached"),
        "{stdout}"
    );
    assert!(took < Duration::from_secs(8), "took {took:?}");
}

/// `python3 tests/fixtures/mcp_scan/listing.py <args>`: a bare server listing as many tools as asked.
fn listing(args: &[&str]) -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_scan/listing.py");
    ["python3".to_owned(), script.display().to_string()]
        .into_iter()
        .chain(args.iter().map(|a| a.to_string()))
        .collect()
}

#[tokio::test]
async fn empty_huge_and_hanging_listings_are_each_handled_in_bounded_time() {
    let _heavy = common::CPU_HEAVY.lock().await;
    // No tools: nothing to scan, said as such.
    let mut args = vec!["--".to_owned()];
    args.extend(listing(&["0"]));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stdout, stderr) = scan(&args).await;
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(stderr.contains("the server lists no tools"), "{stderr}");

    // 10,000 tools: read whole, the first `max_tools` scanned, every other one named as left out.
    let dir = tempfile::tempdir().unwrap();
    let result = path(dir.path(), "many.json");
    let mut args: Vec<String> = ["--phase", "hygiene", "--result", &result, "--"]
        .iter()
        .map(|a| a.to_string())
        .collect();
    args.extend(listing(&["10000"]));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let started = std::time::Instant::now();
    let (code, stdout, stderr) = scan(&args).await;
    assert_eq!(
        code, 1,
        "hygiene alone is too little for a verdict\n{stdout}\n{stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let result = read_json(Path::new(&result));
    assert_eq!(result["tools_listed"], 10_000);
    let left_out = result["left_out"].as_array().unwrap();
    assert_eq!(left_out.len(), 9_800);
    assert_eq!(left_out[0]["reason"], "beyond `max_tools` (200)");
    assert_eq!(ids(&result), Vec::<String>::new());

    // A server that never answers a call: a hang finding, the scan ends at its timeout, nothing left running.
    let marker = format!("scan-hang-{}", std::process::id());
    let mut args: Vec<String> = [
        "--phase",
        "baseline",
        "--call-timeout",
        "200",
        "--scan-timeout",
        "3",
        "--",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    args.extend(listing(&["1", "hang", &marker]));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let started = std::time::Instant::now();
    let (code, stdout, stderr) = scan(&args).await;
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(stdout.contains("`hang/tool_0`"), "{stdout}");
    assert!(
        stdout.contains("stopped early: `scan_timeout` (3 s) reached during the baseline phase"),
        "{stdout}"
    );
    let left = std::process::Command::new("pgrep")
        .args(["-f", &marker])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "the server outlived the scan: {}",
        String::from_utf8_lossy(&left.stdout)
    );
}

#[tokio::test]
async fn a_write_whose_reply_was_lost_is_counted_twice_by_the_servers_own_state() {
    let _heavy = common::CPU_HEAVY.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let result = path(dir.path(), "faults.json");
    let verify = json!({"tool": "orders_count", "count": "count"}).to_string();
    let (code, stdout, stderr) = scan(&[
        "--allow-writes",
        "--phase",
        "baseline",
        "--phase",
        "faults",
        "--verify",
        &verify,
        "--result",
        &result,
        "--",
        common::fault_bin(),
        "mcp-test-server",
        "--tools",
        "create_order,orders_count,get_item",
    ])
    .await;
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let result = read_json(Path::new(&result));
    let figures = |tool: &str| {
        result["faults"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["tool"] == tool)
            .unwrap_or_else(|| panic!("no faults figures for {tool}: {result}"))
            .clone()
    };
    let orders = figures("create_order");
    // Every lost reply of the write was read before and after: each one took effect twice.
    assert!(orders["lost_replies"].as_u64().unwrap() > 0, "{orders}");
    assert_eq!(orders["verified"], orders["duplicate_effects"], "{orders}");
    assert!(
        orders["duplicate_effects"].as_u64().unwrap() > 0,
        "{orders}"
    );
    // A read whose reply was lost is simply asked again.
    let item = figures("get_item");
    assert_eq!(item["duplicate_effects"], 0, "{item}");
    assert_eq!(item["failed_unfaulted"], 0, "{item}");
    let found = ids(&result);
    assert!(
        found.iter().any(|id| id == "duplicate-effect/create_order"),
        "{found:?}"
    );
    assert!(!found.iter().any(|id| id.contains("get_item")), "{found:?}");
    assert!(
        stdout.contains("each call retried up to 2 times: the scan's budget"),
        "{stdout}"
    );
    // The verify tool itself is never faulted, nor counted as a write.
    assert!(
        result["faults"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["tool"] != "orders_count")
    );

    // Without `allow_writes`, `verify` is refused by name, before anything starts.
    let (code, _, stderr) = scan(&[
        "--verify",
        &verify,
        "--",
        common::fault_bin(),
        "mcp-test-server",
    ])
    .await;
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--allow-writes"), "{stderr}");
}

#[tokio::test]
async fn a_server_over_streamable_http_that_hangs_is_named_and_the_scan_goes_on() {
    let _heavy = common::CPU_HEAVY.lock().await;
    let server =
        crate::mcp::http::HttpServer::start(&["mcp-test-server"], &["--tools", "slow,echo"], &[])
            .await;
    let dir = tempfile::tempdir().unwrap();
    let result = path(dir.path(), "http.json");
    let arguments = json!({"slow": {"milliseconds": 5000}}).to_string();
    let started = std::time::Instant::now();
    let (code, stdout, stderr) = scan(&[
        "--url",
        server.url(),
        "--allow-writes",
        "--samples",
        "2",
        "--call-timeout",
        "300",
        "--phase",
        "hygiene",
        "--phase",
        "baseline",
        "--arguments",
        &arguments,
        "--result",
        &result,
    ])
    .await;
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let result = read_json(Path::new(&result));
    let found = ids(&result);
    for expected in ["hang/slow", "no-annotations/slow"] {
        assert!(
            found.iter().any(|id| id == expected),
            "{expected} not in {found:?}"
        );
    }
    // The scan went on to the next tool after the hang.
    let echo = result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "echo")
        .unwrap();
    assert_eq!(echo["baseline"]["ok"], 2, "{echo}");
    assert!(
        result["server"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );
}

#[tokio::test]
async fn ratemyagent_reports_nothing_we_miss_and_takes_no_less_time_per_call() {
    let _heavy = common::CPU_HEAVY.lock().await;
    let test =
        "mcp_chaos::scan::ratemyagent_reports_nothing_we_miss_and_takes_no_less_time_per_call";
    let python = match common::python_with(&["ratemyagent"]) {
        Ok(python) => python,
        Err(why) => return optional::skip(test, &why),
    };
    // Its command, installed beside the Python that imports it.
    let ratemyagent = Path::new(&python).with_file_name("ratemyagent");
    let ratemyagent = if ratemyagent.exists() {
        ratemyagent
    } else {
        "ratemyagent".into()
    };
    let dir = tempfile::tempdir().unwrap();
    let server = format!(
        "{} mcp-test-server --defects all --tools {DEFECT_TOOLS}",
        common::fault_bin()
    );
    let mut theirs: Vec<(String, String)> = Vec::new();
    let (mut their_seconds, mut their_calls) = (0.0, 0u64);
    for (tool, arguments) in [
        ("search_docs", r#"{"query": "x"}"#),
        ("set_volume", r#"{"level": 3}"#),
    ] {
        let out = dir.path().join(format!("{tool}.json"));
        let status = tokio::time::timeout(
            Duration::from_secs(300),
            tokio::process::Command::new(&ratemyagent)
                .args(["scan", "--target", "mcp", "--uri"])
                .arg(format!("stdio://{server}"))
                .args(["--tool", tool, "--tool-args", arguments])
                .args([
                    "--probes",
                    "latency,concurrency,contract",
                    "--concurrency",
                    "16",
                ])
                .arg("--json-out")
                .arg(&out)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status(),
        )
        .await
        .expect("RateMyAgent ends")
        .expect("RateMyAgent runs");
        assert!(status.code().is_some(), "RateMyAgent was killed");
        let report = read_json(&out);
        their_seconds += report["duration_s"].as_f64().unwrap();
        for probe in report["probes"].as_array().unwrap() {
            let metrics = &probe["metrics"];
            match probe["probe"].as_str() {
                Some("latency") => their_calls += metrics["requests"].as_u64().unwrap_or(0),
                Some("concurrency") => {
                    their_calls += metrics["levels"].as_array().map_or(0, |l| {
                        l.iter().map(|l| l["requests"].as_u64().unwrap_or(0)).sum()
                    });
                    if !metrics["saturation_point"].is_null()
                        || !metrics["latency_knee_at"].is_null()
                    {
                        theirs.push((tool.to_owned(), "saturation".to_owned()));
                    }
                }
                Some("contract") => {
                    their_calls += metrics["cases_run"].as_u64().unwrap_or(0)
                        + metrics["control_calls"].as_u64().unwrap_or(0);
                    for case in metrics["cases"].as_array().into_iter().flatten() {
                        if case["wrongly_accepted"] == true || case["outcome"] == "crashed" {
                            theirs.push((
                                case["tool"].as_str().unwrap_or_default().to_owned(),
                                case["field"].as_str().unwrap_or_default().to_owned(),
                            ));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    // Every finding: the whole listing; the time per call: the tools RateMyAgent was pointed at.
    let result = path(dir.path(), "ours.json");
    let (code, stdout, stderr) = scan(&[
        "--result",
        &result,
        "--",
        common::fault_bin(),
        "mcp-test-server",
        "--defects",
        "all",
        "--tools",
        DEFECT_TOOLS,
    ])
    .await;
    let timed = path(dir.path(), "timed.json");
    let (timed_code, timed_stdout, timed_stderr) = scan(&[
        "--result",
        &timed,
        "--tool",
        "search_docs",
        "--tool",
        "set_volume",
        "--",
        common::fault_bin(),
        "mcp-test-server",
        "--defects",
        "all",
        "--tools",
        DEFECT_TOOLS,
    ])
    .await;
    assert_eq!(timed_code, 1, "{timed_stdout}\n{timed_stderr}");
    let timed = read_json(Path::new(&timed));
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let ours = read_json(Path::new(&result));
    let found = ids(&ours);
    println!("RateMyAgent reported {theirs:?} over {their_calls} calls in {their_seconds:.1} s");
    for (tool, what) in &theirs {
        let covered =
            if what == "saturation" {
                found.iter().any(|id| {
                    id == &format!("saturates/{tool}") || id == &format!("head-of-line/{tool}")
                }) || ours["tools"].as_array().unwrap().iter().any(|t| {
                    t["name"] == tool.as_str() && !t["saturation"]["knee_in_flight"].is_null()
                })
            } else {
                found
                    .iter()
                    .any(|id| id.ends_with(&format!("/{tool}/{what}")))
            };
        assert!(
            covered,
            "RateMyAgent's {what} on {tool} is not among ours: {found:?}"
        );
    }
    let our_seconds = timed["seconds"].as_f64().unwrap();
    let our_calls = timed["calls"].as_u64().unwrap();
    let (ours_per_call, theirs_per_call) = (
        our_seconds / our_calls as f64,
        their_seconds / their_calls.max(1) as f64,
    );
    println!(
        "per call: ours {:.1} ms ({our_calls} calls in {our_seconds:.1} s), RateMyAgent {:.1} ms",
        ours_per_call * 1000.0,
        theirs_per_call * 1000.0
    );
    assert!(
        ours_per_call <= theirs_per_call,
        "ours {ours_per_call} s per call, RateMyAgent {theirs_per_call}"
    );
}
