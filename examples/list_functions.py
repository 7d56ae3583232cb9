"""List the functions of a source file with fault's `fault_list_function_names` tool.

    pip install fastmcp
    python examples/list_functions.py /abs/path/to/file.py [--verbose]

The `fault` binary is taken from $FAULT_BIN, else from PATH. Prints the tool's text result (a JSON array of
names) and, on a second line, its structured result (qualified names, kinds, lines).
"""
import asyncio
import json
import os
import shutil
import sys
from pathlib import Path
from tempfile import gettempdir

from fastmcp import Client
from fastmcp.exceptions import ToolError
from fastmcp.utilities.logging import configure_logging


def first_text(result) -> str:
    """The first text content, whether `call_tool` returned a CallToolResult (FastMCP 2.10+) or a list."""
    content = getattr(result, "content", result)
    return content[0].text


def structured(result):
    return getattr(result, "structured_content", None)


async def main(code_file: str, verbose: bool) -> int:
    fault_path = os.environ.get("FAULT_BIN") or shutil.which("fault")  # (1)!
    if not fault_path:
        print("fault: command not found (put it on PATH or set FAULT_BIN)", file=sys.stderr)
        return 1

    args = []
    if verbose:
        configure_logging("DEBUG")
        args = ["--log-file", str(Path(gettempdir()) / "fault.log"), "--log-level", "debug"]

    args.append("agent")
    args.append("tool")

    config = {  # (2)!
        "mcpServers": {
            "local": {
                "command": fault_path,
                "args": args,
            },
        }
    }

    async with Client(config) as client:  # (3)!
        try:
            p = await client.call_tool(  # (4)!
                "fault_list_function_names", {
                    "file": code_file,  # (5)!
                })
        except ToolError as error:  # the tool said what was wrong (isError: true)
            print(f"fault_list_function_names: {error}", file=sys.stderr)
            return 2

        print(first_text(p))
        details = structured(p)
        if details is not None:
            print(json.dumps(details))
    return 0


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--verbose", action='store_true')
    parser.add_argument("code_file")
    args = parser.parse_args()

    sys.exit(asyncio.run(main(args.code_file, args.verbose)))
