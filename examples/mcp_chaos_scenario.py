"""Runs `fault_run_mcp_chaos_scenario`: `fault mcp-test-server` behind `fault mcp-proxy` with a fault plan,
calls driven by a client that times out, cancels and retries, and the MCP chaos report printed.

    python examples/mcp_chaos_scenario.py                 # hang on `slow`, drift on `get_item`, 2% errors
    python examples/mcp_chaos_scenario.py --retries 2     # the same with a retrying client
    python examples/mcp_chaos_scenario.py --json          # print structuredContent instead of the markdown

The `fault` binary is taken from $FAULT_BIN, else from PATH; it is also the server under test (replace
`server` with your own: {"command": "python", "args": ["server.py"], "cwd": "/abs/dir"}).
Needs `pip install fastmcp`.
"""

import argparse
import asyncio
import json
import os
import shutil
import sys

from fastmcp import Client

PLAN = """
seed: 42
faults:
  - type: hang              # no answer until the client cancels
    tools: [slow]
    first_n: 2
  - type: schema_drift      # get_item's payload no longer matches its outputSchema
    tools: [get_item]
    rename: {name: title}
    probability: 0.5
  - type: error_injection   # 2% JSON-RPC errors everywhere else
    rate: 0.02
"""


def first_text(result) -> str:
    """The text of a tool result: recent FastMCP returns an object with `.content`, older ones a list."""
    content = getattr(result, "content", result)
    return content[0].text


async def main(args: argparse.Namespace) -> int:
    fault_path = os.environ.get("FAULT_BIN") or shutil.which("fault")
    if not fault_path:
        print("fault: command not found (put it on PATH or set FAULT_BIN)", file=sys.stderr)
        return 1
    config = {"mcpServers": {"fault": {"command": fault_path, "args": ["agent", "tool"]}}}
    # Four calls make one task; the task runs `repeat` times, `concurrency` tasks' calls at once.
    calls = [
        {"tool": "echo", "arguments": {"text": "hello"}, "task": "lookup"},
        {"tool": "get_item", "arguments": {"id": 7}, "task": "lookup"},
        {"tool": "list_items", "arguments": {"count": 3}, "task": "lookup"},
        {"tool": "slow", "arguments": {"milliseconds": 20}, "task": "lookup"},
    ]
    async with Client(config, timeout=300) as client:
        result = await client.call_tool(
            "fault_run_mcp_chaos_scenario",
            {
                "server": {"command": fault_path, "args": ["mcp-test-server"]},
                "plan": PLAN,
                "calls": calls,
                "repeat": args.repeat,
                "concurrency": 4,
                "client": {"timeout_ms": args.timeout_ms, "retries": args.retries, "backoff_ms": 50},
                "baseline": args.baseline,
            },
        )
    if args.json:
        print(json.dumps(result.structured_content, indent=2))
    else:
        print(first_text(result))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=25, help="times the task runs")
    parser.add_argument("--retries", type=int, default=0, help="client retries after a failed call")
    parser.add_argument("--timeout-ms", type=int, default=500, help="client timeout, then cancel")
    parser.add_argument("--baseline", action="store_true", help="run without faults first and compare")
    parser.add_argument("--json", action="store_true", help="print structuredContent")
    sys.exit(asyncio.run(main(parser.parse_args())))
