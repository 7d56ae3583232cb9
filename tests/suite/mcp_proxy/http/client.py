"""An MCP client on the official Python SDK's Streamable HTTP transport, driven by a JSON script, for the
tests of `fault mcp-proxy --upstream`. It does what the spec asks of a client when its session ends (HTTP 404:
"Session terminated"): it initializes a new session and retries the call once.

Usage: client.py < SCRIPT_JSON
  {"url": "http://127.0.0.1:PORT/mcp",
   "calls": [{"tool": "echo", "arguments": {...}, "timeout_s": 5},
             {"list": true},
             {"await_notification": "notifications/tools/list_changed", "timeout_s": 5}]}

Output: one JSON object:
  {"calls": [{"tool", "outcome": "result" | "tool_error" | "error" | "exception", "text",
              "error": {"code", "message"}, "exception", "progress": [[progress, total, message]],
              "session": the Mcp-Session-Id it was made in, "wall_ms"}
             | {"listed": [tool names]} | {"notified": bool, "wall_ms"}],
   "sessions": how many sessions were initialized,
   "notifications": the methods of the server notifications the session's message handler got, in order,
   "http": [{"method", "rpc": the JSON-RPC method POSTed, "session", "status", "retry_after", "content_type"}]}
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
                "content_type": response.headers.get("content-type"),
            }
        )

    http = httpx2.AsyncClient(
        timeout=httpx2.Timeout(30.0, read=60.0), event_hooks={"response": [on_response]}
    )
    calls = []
    pending = list(script["calls"])
    sessions = 0
    notifications = []
    notified = anyio.Event()

    async def on_message(message):
        method = getattr(message, "method", None)
        if method is not None:
            notifications.append(method)
            notified.set()
    async with http:
        while pending:
            sessions += 1
            async with streamable_http_client(script["url"], http_client=http) as (read, write):
                async with ClientSession(read, write, message_handler=on_message) as session:
                    await session.initialize()
                    while pending:
                        call = pending[0]
                        if call.get("list"):
                            listed = await session.list_tools()
                            calls.append({"listed": [tool.name for tool in listed.tools]})
                            pending.pop(0)
                            continue
                        if "await_notification" in call:
                            started = time.monotonic()
                            with anyio.move_on_after(call.get("timeout_s", 5)):
                                while call["await_notification"] not in notifications:
                                    await notified.wait()
                                    notified = anyio.Event()
                            calls.append(
                                {
                                    "notified": call["await_notification"] in notifications,
                                    "wall_ms": (time.monotonic() - started) * 1000,
                                }
                            )
                            pending.pop(0)
                            continue
                        line = await run_call(session, call)
                        posted = [e for e in exchanges if e["rpc"] == "tools/call"]
                        line["session"] = posted[-1]["session"] if posted else None
                        calls.append(line)
                        expired = line.get("error", {}).get("message") == "Session terminated"
                        if expired and not call.get("retried"):
                            call["retried"] = True
                            break
                        pending.pop(0)
    print(
        json.dumps(
            {"calls": calls, "sessions": sessions, "notifications": notifications, "http": exchanges}
        )
    )


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
