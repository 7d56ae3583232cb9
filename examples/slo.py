"""Suggest SLOs for the endpoint one function implements (the guide's example)."""
import asyncio
import json
import os
import shutil
from pathlib import Path
from tempfile import gettempdir

from fastmcp import Client
from fastmcp.utilities.logging import configure_logging


def first_text(result) -> str:
    """Text of a tool result's first content block: FastMCP returns a list in older releases and a
    CallToolResult (with .content) in newer ones."""
    content = getattr(result, "content", result)
    return content[0].text


async def main(code_file: str, func_name: str, lang: str, verbose: bool) -> None:
    fault_path = shutil.which("fault")
    if not fault_path:
        print("fault: command not found")
        return

    args = []
    if verbose:
        configure_logging("DEBUG")
        args = ["--log-file", str(Path(gettempdir()) / "fault.log"), "--log-level", "debug"]

    args.append("agent")
    args.append("tool")

    config = {
        "mcpServers": {
            "local": {
                "command": fault_path,
                "args": args,
                "env": {
                    "OPENAI_API_KEY": os.getenv("OPENAI_API_KEY", "")
                }
            },
        }
    }

    async with Client(config) as client:
        p = await client.call_tool(
            "fault_extract_code_block", {
                "file": code_file,
                "func": func_name
            })

        snippet = json.loads(first_text(p))["full"]

        p = await client.call_tool(
            "fault_suggest_service_level_objectives_slo", {
                "snippet": snippet,
                "lang": lang
            })

        print(first_text(p))


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--verbose", action='store_true')
    parser.add_argument("code_file")
    parser.add_argument("func_name")
    parser.add_argument("lang")
    args = parser.parse_args()

    asyncio.run(main(args.code_file, args.func_name, args.lang, args.verbose))
