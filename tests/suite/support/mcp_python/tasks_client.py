"""The FastMCP client with the fastmcp-tasks plugin against a tasks server (tests/suite/support/mcp_python/tasks_server.py),
for the proxy's task tests: `python tasks_client.py COMMAND [ARG...]` starts the server with that command over
stdio (a proxy in front, or the server itself), calls `slow_job` as a task and drives it to its end, then calls
`confirm`, whose question the client answers (an `input_required` round: FastMCP's client answers it through its
elicitation handler and retries). Prints one JSON object: what the client got, and how many questions it was
asked. With `--wait SECONDS` first, the task is only waited for (`ToolTask.wait`, which polls `tasks/get` to a
terminal status within that time) and its status or the error the client raised is what is printed; `--job SECONDS`
after it sets how long `slow_job` works (0.2 s unless given). A session the client could not open prints the error
it raised."""

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

    args = sys.argv[1:]
    wait = None
    job = 0.2
    if args[0] == "--wait":
        wait = float(args[1])
        args = args[2:]
    if args[0] == "--job":
        job = float(args[1])
        args = args[2:]
    transport = StdioTransport(command=args[0], args=args[1:])
    out = {}
    try:
        async with Client(transport, elicitation_handler=answer) as client:
            task = await fastmcp_tasks.call_tool_task(client, "slow_job", {"seconds": job})
            try:
                if wait is None:
                    result = await task.result()
                    out["task"] = {"text": result.content[0].text}
                else:
                    final = await task.wait(timeout=wait)
                    out["task"] = {"status": final.status}
            except ToolError as e:
                out["task"] = {"error": str(e)}
            except Exception as e:  # what the plugin raises on a task it cannot follow
                out["task"] = {"error": f"{type(e).__name__}: {e}"}
            try:
                result = await client.call_tool("confirm", {"action": "delete"})
                out["confirm"] = {"text": result.content[0].text}
            except Exception as e:  # the client's own bound on rounds of questions
                out["confirm"] = {"error": f"{type(e).__name__}: {e}"}
    except Exception as e:  # the session itself refused
        out["session"] = {"error": f"{type(e).__name__}: {e}"}
    out["asked"] = asked
    print(json.dumps(out))


asyncio.run(main())
