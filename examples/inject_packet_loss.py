"""Runs `fault_run_packet_loss_impact_scenario` against the demo app (examples/app), as the guide's script does.

    python examples/app/upstream.py &                                   # upstream on 127.0.0.1:7070
    UPSTREAM_URL=http://127.0.0.1:34000 fastapi dev examples/app/app.py --port 9090 &
    python examples/inject_packet_loss.py http://127.0.0.1:9090 http://127.0.0.1:7070 

The scenario starts a fault proxy on 127.0.0.1:34000 forwarding to the upstream, sends load to the app for
10 seconds (--duration) and prints the markdown report. Add --baseline to compare with a run without the fault.
Needs `fault` on PATH and `pip install fastmcp`.
"""

import argparse
import asyncio
import shutil
from pathlib import Path
from tempfile import gettempdir

from fastmcp import Client
from fastmcp.utilities.logging import configure_logging


def first_text(result) -> str:
    """The text of a tool result: recent FastMCP returns an object with `.content`, older ones a list."""
    content = getattr(result, "content", result)
    return content[0].text


async def main(args: argparse.Namespace) -> None:
    fault_path = shutil.which("fault")
    if not fault_path:
        print("fault: command not found")
        return

    cli = []
    if args.verbose:
        configure_logging("DEBUG")
        cli = ["--log-file", str(Path(gettempdir()) / "fault.log"), "--log-level", "debug"]
    cli += ["agent", "tool"]

    config = {"mcpServers": {"local": {"command": fault_path, "args": cli, "env": {}}}}

    async with Client(config, timeout=120) as client:
        p = await client.call_tool(
            "fault_run_packet_loss_impact_scenario", {
                "url": args.url,
                "method": "GET",
                "body": "",
                "duration": args.duration,
                "direction": "egress",
                "side": "server",
                "num_clients": 1,
                "rps": 3,
                "timeout": 10,
                "baseline": args.baseline,
                "proxies": [
                    f"34000={args.upstream}"  # the app calls its upstream through 127.0.0.1:34000
                ],
            })

        print(first_text(p))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--baseline", action="store_true", help="run without the fault first and compare")
    parser.add_argument("--duration", default="10s", help="how long the load runs, e.g. 10s or 1m")
    parser.add_argument("url", help="the app's endpoint, e.g. http://127.0.0.1:9090")
    parser.add_argument("upstream", help="the app's upstream, e.g. http://127.0.0.1:7070 or https://host")

    asyncio.run(main(parser.parse_args()))
