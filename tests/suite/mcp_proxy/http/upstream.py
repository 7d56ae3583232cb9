"""A real Streamable HTTP MCP server (FastMCP) for the tests of `fault mcp-proxy --upstream`.

Usage: upstream.py PORT [CERT KEY]. Serves http://127.0.0.1:PORT/mcp until killed (https:// with a certificate
and its key, PEM files).
"""

import asyncio
import sys

from fastmcp import Context, FastMCP

mcp = FastMCP("upstream")


@mcp.tool
def echo(text: str) -> str:
    """Returns the text."""
    return text


@mcp.tool
async def count(steps: int, ctx: Context, delay_ms: int = 20) -> str:
    """Counts to `steps`, reporting progress at each step."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
        await asyncio.sleep(delay_ms / 1000)
    return f"counted {steps}"


if __name__ == "__main__":
    mcp.run(
        transport="http",
        host="127.0.0.1",
        port=int(sys.argv[1]),
        show_banner=False,
        log_level="warning",
        uvicorn_config=(
            {"ssl_certfile": sys.argv[2], "ssl_keyfile": sys.argv[3]} if len(sys.argv) > 3 else None
        ),
    )
