"""The official MCP Python SDK's `Client` in its default mode ("auto": it probes `server/discover` at the newest
protocol and falls back to the initialize handshake when the server is not modern), for the proxy's 2026-07-28
tests: `python modern_client.py COMMAND [ARG...]` starts that command as a stdio server, lists its tools and calls
`echo`. Prints one JSON object: the protocol version the client settled on, the tools, the call's structured
result, or the error the client raised."""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters


async def main() -> None:
    server = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:])
    out = {}
    try:
        async with Client(server, raise_exceptions=True) as client:
            out["protocol_version"] = client.protocol_version
            listed = await client.list_tools()
            out["tools"] = sorted(tool.name for tool in listed.tools)
            result = await client.call_tool("echo", {"text": "hello"})
            out["echo"] = result.structured_content
    except Exception as e:  # what the client raised, for the test to read
        out["error"] = f"{type(e).__name__}: {e}"
    print(json.dumps(out))


asyncio.run(main())
