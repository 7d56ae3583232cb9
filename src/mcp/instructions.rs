//! What the server tells a client at `initialize`: its tools by family, the impact-scenario tools as the TCP
//! fault registry names them.

use super::impact;

/// The instructions, naming every family's tools.
pub(super) fn instructions() -> String {
    format!(
        "fault gives you reliability tools for the code you write. \
Code: fault_list_function_names lists the functions of a file; fault_extract_code_block returns one function \
(`full` with signature and decorators, `body` without). \
Index: fault_index_source_code embeds a source tree so the LLM tools get context from it. \
LLM review: fault_score_performance / fault_score_reliability score a snippet 0..1 with an explanation; \
fault_suggest_better_function_performance / fault_suggest_better_function_reliability return a unified diff; \
fault_suggest_service_level_objectives_slo proposes SLOs; fault_make_reliability_and_perf_changes proposes a \
whole-file change; fault_function_reliability_deep_analysis reviews one function in depth. \
Impact scenarios: {} put a fault-injecting proxy on the path to a URL (or on the `proxies` you map), send \
load, and return a markdown report with latency percentiles and SLO verdicts; a fault's `sched` limits it to \
windows, and the report then judges the phases before, during and after them, with time to detect and to \
recover, error budget burn and retry amplification; fault_run_impact_scenario takes several faults at once; fault_run_capacity_scenario raises the rate in steps to \
find the highest one that meets the SLOs, without and with the faults, and what they cost. \
MCP chaos: fault_run_mcp_chaos_scenario starts an MCP server behind fault mcp-proxy with a fault plan, drives \
tool calls with a client policy (timeout, retries, backoff) and reports availability, correctness against \
outputSchema, latency, recovery and blast radius; fault_scan_mcp_server scans an MCP server (schema hygiene, \
baseline latency, saturation, its contract probed with invalid input, lost replies) and returns a scored verdict \
with every finding, the change that fixes it and how to reproduce it. Paths must be absolute.",
        impact::tool_names().join(", ")
    )
}
