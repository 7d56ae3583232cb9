"""MCP clients that handle failures in one known way each, for the tests of the chaos report's judgements.

Usage: behaviours.py < SCRIPT_JSON
  {"behaviour": "immediate_retry_loop" | "backoff_retry_after" | "give_up_after_one_failure"
                | "blind_retry_after_hang" | "check_then_retry",
   "client": "sdk" (the official MCP Python SDK, default) | "fastmcp" (FastMCP's Client),
   "server": {"command", "args"}   (stdio)  or  "url": "http://127.0.0.1:PORT/mcp"  (Streamable HTTP),
   "timeout_s": 1.0}               (how long a call is waited for before the client gives up on it)

Behaviours:
  immediate_retry_loop       get_item {"id": 1}, again at once after every failure, up to 6 attempts
  backoff_retry_after        get_item {"id": 1}; after a failure waits data.retryAfterSeconds (else 0.2 s,
                             doubled each time), up to 4 attempts
  give_up_after_one_failure  get_item {"id": 1} once; after a failure calls echo instead
  blind_retry_after_hang     create_order then get_item, each sent once more after a timeout
  check_then_retry           create_order; after a timeout reads orders_count and sends it again only when
                             the count shows the order was not created

Output: one JSON object: {"attempts": [{"tool", "outcome": "result" | "tool_error" | "error" | "timeout"}],
  "orders": orders_count read at the end}
"""

import json
import sys
from datetime import timedelta

import anyio

ITEM = {"id": 1}
ORDER = {"item_id": 7, "quantity": 2}


class Failed(Exception):
    def __init__(self, outcome, retry_after=None):
        super().__init__(outcome)
        self.outcome = outcome
        self.retry_after = retry_after


class Calls:
    """One client's calls, each ending in a result or a Failed with what the client saw."""

    def __init__(self, call, timeout_s):
        self._call = call
        self.timeout_s = timeout_s
        self.attempts = []

    async def __call__(self, tool, arguments):
        try:
            result = await self._call(tool, arguments, self.timeout_s)
        except Failed as failure:
            self.attempts.append({"tool": tool, "outcome": failure.outcome})
            raise
        self.attempts.append({"tool": tool, "outcome": "result"})
        return result


def retry_after_of(data):
    if isinstance(data, dict) and isinstance(data.get("retryAfterSeconds"), (int, float)):
        return float(data["retryAfterSeconds"])
    return None


def sdk_caller(session):
    from mcp.shared.exceptions import MCPError

    async def call(tool, arguments, timeout_s):
        # Leaving the scope cancels the request: the SDK sends notifications/cancelled.
        with anyio.move_on_after(timeout_s) as scope:
            try:
                result = await session.call_tool(tool, arguments)
            except MCPError as error:
                raise Failed("error", retry_after_of(error.error.data))
        if scope.cancelled_caught:
            raise Failed("timeout")
        if result.is_error:
            raise Failed("tool_error")
        return result.structured_content

    return call


def fastmcp_caller(client):
    from mcp.shared.exceptions import MCPError

    async def call(tool, arguments, timeout_s):
        try:
            result = await client.call_tool(
                tool, arguments, timeout=timedelta(seconds=timeout_s), raise_on_error=False
            )
        except MCPError as error:
            message = error.error.message or ""
            if "timed out" in message.lower() or error.error.code == 408:
                raise Failed("timeout")
            raise Failed("error", retry_after_of(error.error.data))
        if result.is_error:
            raise Failed("tool_error")
        return result.structured_content

    return call


async def immediate_retry_loop(call):
    for _ in range(6):
        try:
            return await call("get_item", ITEM)
        except Failed:
            continue


async def backoff_retry_after(call):
    wait = 0.2
    for _ in range(4):
        try:
            return await call("get_item", ITEM)
        except Failed as failure:
            await anyio.sleep(failure.retry_after if failure.retry_after is not None else wait)
            wait *= 2


async def give_up_after_one_failure(call):
    try:
        return await call("get_item", ITEM)
    except Failed:
        return await call("echo", {"text": "something else"})


async def blind_retry_after_hang(call):
    for tool, arguments in (("create_order", ORDER), ("get_item", ITEM)):
        try:
            await call(tool, arguments)
        except Failed:
            await call(tool, arguments)


async def check_then_retry(call):
    before = (await call("orders_count", {}))["count"]
    try:
        await call("create_order", ORDER)
    except Failed:
        after = (await call("orders_count", {}))["count"]
        if after == before:
            await call("create_order", ORDER)


BEHAVIOURS = {
    f.__name__: f
    for f in (
        immediate_retry_loop,
        backoff_retry_after,
        give_up_after_one_failure,
        blind_retry_after_hang,
        check_then_retry,
    )
}


async def run(script, caller):
    calls = Calls(caller, float(script.get("timeout_s", 1.0)))
    try:
        await BEHAVIOURS[script["behaviour"]](calls)
    except Failed:
        pass
    orders = await caller("orders_count", {}, 10.0)
    return {"attempts": calls.attempts, "orders": orders["count"]}


async def with_sdk(script):
    from mcp import ClientSession, StdioServerParameters

    if "url" in script:
        from mcp.client.streamable_http import streamable_http_client

        transport = streamable_http_client(script["url"])
    else:
        from mcp.client.stdio import stdio_client

        server = script["server"]
        transport = stdio_client(
            StdioServerParameters(command=server["command"], args=server.get("args", []))
        )
    async with transport as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            await session.list_tools()
            return await run(script, sdk_caller(session))


async def with_fastmcp(script):
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    if "url" in script:
        target = script["url"]
    else:
        server = script["server"]
        target = StdioTransport(server["command"], server.get("args", []))
    async with Client(target) as client:
        await client.list_tools()
        return await run(script, fastmcp_caller(client))


async def main():
    script = json.load(sys.stdin)
    drive = with_fastmcp if script.get("client") == "fastmcp" else with_sdk
    print(json.dumps(await drive(script)))


if __name__ == "__main__":
    anyio.run(main)
