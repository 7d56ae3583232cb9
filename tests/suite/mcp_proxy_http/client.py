"""An MCP client on the official Python SDK's Streamable HTTP transport, driven by a JSON script, for the
tests of `fault mcp-proxy --upstream`. It does what the spec asks of a client when its session ends (HTTP 404:
"Session terminated"): it initializes a new session and retries the call once.

Usage: client.py < SCRIPT_JSON
  {"url": "http://127.0.0.1:PORT/mcp",
   "calls": [{"tool": "echo", "arguments": {...}, "timeout_s": 5}]}

Output: one JSON object:
  {"calls": [{"tool", "outcome": "result" | "tool_error" | "error" | "exception", "text",
              "error": {"code", "message"}, "exception", "progress": [[progress, total, message]],
              "session": the Mcp-Session-Id it was made in, "wall_ms"}],
   "sessions": how many sessions were initialized,
   "http": [{"method", "rpc": the JSON-RPC method POSTed, "session", "status", "retry_after"}]}
"""

import json
import sys
import time

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


async def main():
    script = json.load(sys.stdin)
    exchanges = []

    async def on_response(response):
        request = response.request
        rpc = None
        if request.method == "POST":
            try:
                rpc = json.loads(request.content).get("method")
            except (ValueError, AttributeError):
                pass
        exchanges.append(
            {
                "method": request.method,
                "rpc": rpc,
                "session": request.headers.get("mcp-session-id"),
                "status": response.status_code,
                "retry_after": response.headers.get("retry-after"),
            }
        )

    http = httpx2.AsyncClient(
        timeout=httpx2.Timeout(30.0, read=60.0), event_hooks={"response": [on_response]}
    )
    calls = []
    pending = list(script["calls"])
    sessions = 0
    async with http:
        while pending:
            sessions += 1
            async with streamable_http_client(script["url"], http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    while pending:
                        call = pending[0]
                        line = await run_call(session, call)
                        posted = [e for e in exchanges if e["rpc"] == "tools/call"]
                        line["session"] = posted[-1]["session"] if posted else None
                        calls.append(line)
                        expired = line.get("error", {}).get("message") == "Session terminated"
                        if expired and not call.get("retried"):
                            call["retried"] = True
                            break
                        pending.pop(0)
    print(json.dumps({"calls": calls, "sessions": sessions, "http": exchanges}))


async def run_call(session, call):
    line = {"tool": call["tool"]}
    progress = []

    async def on_progress(value, total, message):
        progress.append([value, total, message])

    started = time.monotonic()
    try:
        result = await session.call_tool(
            call["tool"],
            call.get("arguments", {}),
            read_timeout_seconds=call.get("timeout_s", 30),
            progress_callback=on_progress,
        )
        is_error = getattr(result, "is_error", None) or getattr(result, "isError", False)
        line["outcome"] = "tool_error" if is_error else "result"
        line["text"] = "".join(getattr(block, "text", "") for block in result.content)
    except MCPError as e:
        line["outcome"] = "error"
        line["error"] = {"code": e.error.code, "message": e.error.message}
    except Exception as e:  # what the transport raised
        line["outcome"] = "exception"
        line["exception"] = f"{type(e).__name__}: {e}"
    line["progress"] = progress
    line["wall_ms"] = (time.monotonic() - started) * 1000
    return line


anyio.run(main)
