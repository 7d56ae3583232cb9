"""The FastMCP client with the fastmcp-tasks plugin against a tasks server (tests/suite/mcp_python/tasks_server.py),
for the proxy's task tests: `python tasks_client.py COMMAND [ARG...]` starts the server with that command over
stdio (a proxy in front, or the server itself), calls `slow_job` as a task and drives it to its end, then calls
`confirm`, whose question the client answers (an `input_required` round: FastMCP's client answers it through its
elicitation handler and retries). Prints one JSON object: what the client got, and how many questions it was
asked."""

import asyncio
import json
import sys

import fastmcp_tasks
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError


async def main() -> None:
    asked = 0

    async def answer(message, response_type, params, context):
        nonlocal asked
        asked += 1
        return {"sure": True}

    transport = StdioTransport(command=sys.argv[1], args=sys.argv[2:])
    out = {}
    async with Client(transport, elicitation_handler=answer) as client:
        task = await fastmcp_tasks.call_tool_task(client, "slow_job", {"seconds": 0.2})
        try:
            result = await task.result()
            out["task"] = {"text": result.content[0].text}
        except ToolError as e:
            out["task"] = {"error": str(e)}
        try:
            result = await client.call_tool("confirm", {"action": "delete"})
            out["confirm"] = {"text": result.content[0].text}
        except Exception as e:  # the client's own bound on rounds of questions
            out["confirm"] = {"error": f"{type(e).__name__}: {e}"}
    out["asked"] = asked
    print(json.dumps(out))


asyncio.run(main())
