"""An MCP client on the official Python SDK (`mcp` package), driven by a JSON script, for tests.

Usage: client.py [SCRIPT_JSON]   (without an argument the script is read from stdin)

Script:
  {
    "server": {"command": "fault", "args": ["mcp-test-server"], "env": {"K": "V"}},
    "concurrency": 1,                       # calls in flight at once (default 1: one after another)
    "calls": [
      {"tool": "slow", "arguments": {"milliseconds": 50},
       "timeout_s": 5,                      # give up after this long (the SDK sends notifications/cancelled)
       "cancel_after_ms": 100,              # cancel after this long (the same, reported as "cancelled")
       "progress": true},                   # send a progressToken and record notifications/progress
      {"method": "tools/list"},
      {"method": "sleep", "ms": 100}        # wait (e.g. for a fault's time window)
    ]
  }

Output: one JSON line per call, in completion order, with what the client saw:
  {"index", "method", "tool", "outcome": "result" | "error" | "timeout" | "cancelled" | "exception",
   "is_error", "content", "structured_content"       (outcome "result")
   "error": {"code", "message", "data"}                (outcome "error": a JSON-RPC error)
   "exception": {"type", "message"}                    (outcome "exception", e.g. output-schema validation)
   "tools": [{"name", "input_schema", "output_schema"}] (method "tools/list")
   "progress": [{"progress", "total", "message"}], "started_ms", "wall_ms"}
The last line is {"done": true, "server_info": {...}, "protocol_version": "...",
  "notifications": [{"method", "at_ms"}]            (every server notification, e.g. tools/list_changed)
  "stream_exceptions": [{"type", "message", "at_ms"}]}  (what the transport could not read, e.g. a bad line)
"""

import json
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError


def emit(line):
    sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def dump(model):
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def run_call(session, index, call, session_started):
    method = call.get("method", "tools/call")
    line = {"index": index, "method": method, "tool": call.get("tool")}
    progress = []

    async def on_progress(value, total, message):
        progress.append({"progress": value, "total": total, "message": message})

    timeout_s = call.get("timeout_s")
    cancel_after_ms = call.get("cancel_after_ms")
    limits = [(timeout_s, "timeout")] if timeout_s is not None else []
    if cancel_after_ms is not None:
        limits.append((cancel_after_ms / 1000.0, "cancelled"))
    limit, limit_outcome = min(limits, key=lambda l: l[0]) if limits else (None, None)

    started = time.perf_counter()
    line["started_ms"] = (started - session_started) * 1000.0
    try:
        with anyio.CancelScope() as scope:
            if limit is not None:
                scope.deadline = anyio.current_time() + limit
            if method == "tools/list":
                listed = await session.list_tools()
                line["outcome"] = "result"
                line["tools"] = [
                    {
                        "name": tool.name,
                        "input_schema": tool.input_schema,
                        "output_schema": tool.output_schema,
                    }
                    for tool in listed.tools
                ]
            elif method == "sleep":
                await anyio.sleep(call.get("ms", 0) / 1000.0)
                line["outcome"] = "result"
            elif method == "tools/call":
                result = await session.call_tool(
                    call["tool"],
                    call.get("arguments") or {},
                    progress_callback=on_progress if call.get("progress") else None,
                )
                line["outcome"] = "result"
                line["is_error"] = bool(result.is_error)
                line["content"] = [dump(block) for block in result.content]
                line["structured_content"] = result.structured_content
            else:
                raise ValueError(f"unknown method {method!r} (tools/call or tools/list)")
        if scope.cancelled_caught:
            line["outcome"] = limit_outcome
    except MCPError as error:
        line["outcome"] = "error"
        line["error"] = {"code": error.code, "message": error.message, "data": error.data}
    except Exception as error:  # what the SDK raised is what the client saw
        line["outcome"] = "exception"
        line["exception"] = {"type": type(error).__name__, "message": str(error)}
    line["wall_ms"] = (time.perf_counter() - started) * 1000.0
    if call.get("progress"):
        line["progress"] = progress
    emit(line)


async def main(script):
    server = script["server"]
    params = StdioServerParameters(
        command=server["command"], args=server.get("args", []), env=server.get("env")
    )
    calls = script.get("calls", [])
    slots = anyio.Semaphore(max(1, int(script.get("concurrency", 1))))
    notifications = []
    stream_exceptions = []
    session_started = time.perf_counter()

    async def on_message(message):
        at_ms = (time.perf_counter() - session_started) * 1000.0
        if isinstance(message, Exception):
            stream_exceptions.append({"type": type(message).__name__, "message": str(message), "at_ms": at_ms})
        else:
            notifications.append({"method": getattr(message, "method", type(message).__name__), "at_ms": at_ms})

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            initialized = await session.initialize()
            session_started = time.perf_counter()

            async def limited(index, call):
                async with slots:
                    await run_call(session, index, call, session_started)

            async with anyio.create_task_group() as group:
                for index, call in enumerate(calls):
                    group.start_soon(limited, index, call)
            emit(
                {
                    "done": True,
                    "server_info": dump(initialized.server_info),
                    "protocol_version": initialized.protocol_version,
                    "notifications": notifications,
                    "stream_exceptions": stream_exceptions,
                }
            )


if __name__ == "__main__":
    text = sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read()
    anyio.run(main, json.loads(text))
