"""Index a source tree with fault's `fault_index_source_code` tool (the guide's example, for the current
FastMCP client).

    pip install fastmcp
    python examples/index_source.py /absolute/path/to/app --lang python

Embeddings come from OpenAI by default (OPENAI_API_KEY). For a local model, e.g. Ollama:

    python examples/index_source.py /abs/app --llm-client ollama \
        --embed-model mxbai-embed-large --embed-dim 1024

or any OpenAI-compatible server: --embed-base-url http://127.0.0.1:18081/v1 --embed-model all-minilm
--embed-dim 384. The index goes to the Qdrant at --qdrant-url (or at http://localhost:6334 when one answers
there), otherwise to the embedded store in fault's per-user data directory.
"""

import argparse
import asyncio
import json
import os
import shutil
from pathlib import Path
from tempfile import gettempdir

from fastmcp import Client
from fastmcp.exceptions import ToolError


async def main(args: argparse.Namespace) -> int:
    fault_path = os.getenv("FAULT_BIN") or shutil.which("fault")
    if not fault_path:
        print("fault: command not found")
        return 1

    cli = []
    if args.verbose:
        cli += ["--log-file", str(Path(gettempdir()) / "fault.log"), "--log-level", "debug"]
    cli.append("agent")
    if args.llm_client:
        cli += ["--llm-client", args.llm_client]
    if args.embed_model:
        cli += ["--llm-embed-model", args.embed_model]
    if args.embed_dim:
        cli += ["--llm-embed-model-dim", str(args.embed_dim)]
    if args.embed_base_url:
        cli += ["--llm-embed-base-url", args.embed_base_url]
    if args.qdrant_url:
        cli += ["--qdrant-url", args.qdrant_url]
    cli += ["--vector-store", args.vector_store]
    cli.append("tool")

    env = {k: v for k, v in os.environ.items()
           if k in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "FAULT_LLM_API_KEY", "OLLAMA_HOST", "QDRANT_URL", "QDRANT_API_KEY",
                    "FAULT_DATA_DIR", "HOME", "PATH")}
    config = {"mcpServers": {"local": {"command": fault_path, "args": cli, "env": env}}}

    async def progress(done: float, total: float | None, message: str | None) -> None:
        print(f"  {message or done}", flush=True)

    async with Client(config) as client:
        try:
            result = await client.call_tool(
                "fault_index_source_code",
                {"source_dir": str(Path(args.source_dir).resolve()), "lang": args.lang},
                # A first index of a large tree embeds every chunk; later runs only embed what changed.
                timeout=3600,
                progress_handler=progress,
            )
        except ToolError as e:
            print(f"indexing failed: {e}")
            return 1

    print(result.content[0].text)  # "done", as in the guide
    print(json.dumps(result.structured_content, indent=2))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("source_dir", help="top-level directory of the code to index")
    parser.add_argument("--lang", default="python", help="python, go, rust, javascript, or auto")
    parser.add_argument("--llm-client", choices=["openai", "open-router", "ollama"])
    parser.add_argument("--embed-model")
    parser.add_argument("--embed-dim", type=int)
    parser.add_argument("--embed-base-url")
    parser.add_argument("--qdrant-url")
    parser.add_argument("--vector-store", default="auto", choices=["auto", "embedded", "qdrant"])
    parser.add_argument("--verbose", action="store_true")
    raise SystemExit(asyncio.run(main(parser.parse_args())))
