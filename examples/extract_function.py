"""Extract one function from a source file with fault's `fault_extract_code_block` tool.

    pip install fastmcp
    python examples/extract_function.py /abs/path/to/file.py func_name [--verbose]

`func_name` may be plain (`handle`) or qualified (`Server.handle`, `Server::handle`). The `fault` binary is
taken from $FAULT_BIN, else from PATH. Prints the tool's text result, the JSON object {"full", "body"}, as
the guide's scripts read it (`json.loads(result[0].text)["full"]`), then which function was chosen.
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


async def main(code_file: str, func_name: str, verbose: bool) -> int:
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
                "fault_extract_code_block", {
                    "file": code_file,  # (5)!
                    "func": func_name  # (6)!
                })
        except ToolError as error:  # the tool said what was wrong (isError: true)
            print(f"fault_extract_code_block: {error}", file=sys.stderr)
            return 2

        block = json.loads(first_text(p))
        print(json.dumps(block))
        details = getattr(p, "structured_content", None)
        if details is not None:
            chosen = details["function"]
            print(f"# {chosen['qualified_name']} ({chosen['kind']}), lines {chosen['start_line']}-"
                  f"{chosen['end_line']}, {details['other_matches']} other match(es)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--verbose", action='store_true')
    parser.add_argument("code_file")
    parser.add_argument("func_name")
    args = parser.parse_args()

    sys.exit(asyncio.run(main(args.code_file, args.func_name, args.verbose)))
