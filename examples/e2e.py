"""Index a small app, then ask fault for reliability and performance changes to its main file (the guide's
e2e example). Run it from a directory holding app/app.py, e.g. examples/app_fixture."""
import asyncio
import json
import os
import shutil
from pathlib import Path
from tempfile import gettempdir

from fastmcp import Client
from fastmcp.utilities.logging import configure_logging
from rich.console import Console

console = Console()


def first_text(result) -> str:
    """Text of a tool result's first content block: FastMCP returns a list in older releases and a
    CallToolResult (with .content) in newer ones."""
    content = getattr(result, "content", result)
    return content[0].text


async def main(llm: str, verbose: bool) -> None:
    fault_path = shutil.which("fault")
    if not fault_path:
        print("fault: command not found")
        return

    env = {}

    args = []
    if verbose:
        configure_logging("DEBUG")
        args = ["--log-file", str(Path(gettempdir()) / "fault.log"), "--log-level", "debug"]

    args.append("agent")

    if llm == "openai":
        env["OPENAI_API_KEY"] = os.getenv("OPENAI_API_KEY", "")
    elif llm == "openrouter":
        args.append("--llm-client")
        args.append("open-router")
        args.append("--llm-prompt-reasoning-model")
        args.append("google/gemma-3-27b-it")
        args.append("--llm-embed-model-dim")
        args.append("384")
        env["OPENROUTER_API_KEY"] = os.getenv("OPENROUTER_API_KEY", "")
    elif llm == "ollama":
        args.append("--llm-client")
        args.append("ollama")
        args.append("--llm-prompt-reasoning-model")
        args.append("gemma3:4b")
        args.append("--llm-embed-model")
        args.append("mxbai-embed-large")
        args.append("--llm-embed-model-dim")
        args.append("1024")

    args.append("tool")

    config = {
        "mcpServers": {
            "local": {
                "command": fault_path,
                "args": args,
                "env": env
            },
        }
    }

    async with Client(config) as client:
        try:
            await client.call_tool(
                "fault_index_source_code", {
                    "source_dir": str(Path.cwd() / "app"),
                    "lang": "python"
                })
        except Exception as e:  # noqa: BLE001 - the index only adds context; the changes work without it
            console.print(f"[yellow]Indexing skipped[/] {e}")

        p = await client.call_tool(
            "fault_make_reliability_and_perf_changes", {
                "file": str(Path.cwd() / "app" / "app.py"),
            })

        r = json.loads(first_text(p))

        console.print(f"[purple]Score[/] {r['score']}")
        console.print(f"[purple]Explanation[/] {r['explanation']}")
        console.print(f"[purple]Dependencies[/] {r['dependencies']}")
        console.print(f"[purple]Proposed changes[/]\n{r['diff']}")


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--llm", choices=["openai", "openrouter", "ollama"], default="openai")
    parser.add_argument("--verbose", action='store_true')
    args = parser.parse_args()

    asyncio.run(main(args.llm, args.verbose))
