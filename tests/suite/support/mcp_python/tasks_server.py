"""A FastMCP server with the fastmcp-tasks plugin (the MCP Tasks extension), for the proxy's fidelity and task
fault tests. stdio by default; `--http PORT` serves Streamable HTTP on 127.0.0.1:PORT/mcp.

Tools: `slow_job` (a task: sleeps `seconds`, then answers), `broken_job` (a task whose work raises), `echo`
(a plain tool) and `confirm` (asks the client a question first: an `input_required` result, then the answer
with what the client said)."""

import asyncio
import sys

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp_tasks import TasksExtension

mcp = FastMCP("fault-tasks-test")
mcp.add_extension(TasksExtension(url="memory://"))


@mcp.tool(task=True)
async def slow_job(seconds: float = 0.5) -> str:
    await asyncio.sleep(seconds)
    return f"done after {seconds} s"


@mcp.tool(task=True)
async def broken_job() -> str:
    await asyncio.sleep(0.1)
    raise RuntimeError("the job broke")


@mcp.tool
def echo(text: str) -> str:
    return text


@mcp.tool
async def confirm(action: str, ctx: Context):
    answers = ctx.input_responses
    if not answers or "sure" not in answers:
        question = mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(
                message=f"Really {action}?",
                requested_schema={"type": "object", "properties": {"sure": {"type": "boolean"}}},
            )
        )
        return mcp_types.InputRequiredResult(input_requests={"sure": question}, request_state=action)
    return f"{action}: {answers['sure']}"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False)
    else:
        mcp.run(show_banner=False)
