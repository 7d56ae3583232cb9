"""The MCP App view of a scenario report, end to end: an MCP client on the official Python SDK declares the
Apps extension, lists the tools (reading `_meta.ui.resourceUri`), reads the `ui://` view, and calls the MCP
chaos tool; a minimal host page in Chromium (driven by Playwright) then does what the Apps specification says
a host does (renders the view in a sandboxed frame, answers `ui/initialize`, sends the tool's input and
result, follows the view's size) and the script reports what a person sees. A second client that declares
nothing shows what it gets instead. One JSON line on stdout.

    python app_host.py FAULT_BINARY CHROMIUM OUT_DIR
"""

import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from playwright.sync_api import sync_playwright

EXTENSION = "io.modelcontextprotocol/ui"
TOOL = "fault_run_mcp_chaos_scenario"


def dump(model):
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def session_run(fault: str, declare: bool) -> dict:
    params = StdioServerParameters(command=fault, args=["agent", "tool"])
    extensions = {EXTENSION: {"mimeTypes": ["text/html;profile=mcp-app"]}} if declare else None
    arguments = {
        "server": {"command": fault, "args": ["mcp-test-server"]},
        "plan": {"seed": 7, "faults": [
            {"type": "error", "tools": ["echo"], "probability": 0.3},
            {"type": "hang", "tools": ["slow"], "first_n": 2},
        ]},
        "calls": [
            {"tool": "echo", "arguments": {"text": "a"}},
            {"tool": "slow", "arguments": {"milliseconds": 1}},
        ],
        "duration": "2s",
        "rate": "10",
        "concurrency": 2,
        "client": {"timeout_ms": 300},
    }
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, extensions=extensions) as session:
            await session.initialize()
            tools = {t["name"]: t for t in (dump(t) for t in (await session.list_tools()).tools)}
            out["tool_meta"] = tools[TOOL].get("_meta")
            uri = (out["tool_meta"] or {}).get("ui", {}).get("resourceUri")
            if uri:
                contents = dump(await session.read_resource(uri))["contents"][0]
                out["view_mime"] = contents.get("mimeType")
                out["view_html"] = contents.get("text")
            result = dump(await session.call_tool(TOOL, arguments))
            out["arguments"] = arguments
            out["result"] = result
    return out


HOST = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>minimal MCP Apps host</title></head>
<body style="margin:0;background:#eee">
<script>
const VIEW = %s;
const TOOL_INPUT = %s;
const TOOL_RESULT = %s;
const frame = document.createElement("iframe");
frame.id = "view";
frame.sandbox = "allow-scripts";
frame.style = "border:0;width:880px;height:400px;background:#fff";
const log = [];
window.hostLog = log;
window.addEventListener("message", (event) => {
  if (event.source !== frame.contentWindow) return;
  const m = event.data;
  log.push(m.method || ("response " + m.id));
  const reply = (message) => frame.contentWindow.postMessage(Object.assign({jsonrpc: "2.0"}, message), "*");
  if (m.method === "ui/initialize") {
    reply({id: m.id, result: {protocolVersion: "2026-01-26", hostInfo: {name: "test host", version: "1"},
      hostCapabilities: {}, hostContext: {theme: "light", displayMode: "inline", containerDimensions: {width: 880}}}});
  } else if (m.method === "ui/notifications/initialized") {
    reply({method: "ui/notifications/tool-input", params: {arguments: TOOL_INPUT}});
    reply({method: "ui/notifications/tool-result", params: TOOL_RESULT});
  } else if (m.method === "ui/notifications/size-changed") {
    frame.style.height = m.params.height + "px";
  }
});
frame.srcdoc = VIEW;
document.body.appendChild(frame);
</script>
</body></html>
"""


def script_json(value) -> str:
    return json.dumps(value).replace("</", "<\\/")


def main(fault: str, chromium: str, out_dir: str) -> None:
    with_apps = anyio.run(session_run, fault, True)
    without = anyio.run(session_run, fault, False)
    report = {
        "tool_meta": with_apps["tool_meta"],
        "view_mime": with_apps.get("view_mime"),
        "content_types": [b["type"] for b in with_apps["result"]["content"]],
        "result_meta_keys": sorted((with_apps["result"].get("_meta") or {}).keys()),
        "plain_tool_meta": without["tool_meta"],
        "plain_content_types": [b["type"] for b in without["result"]["content"]],
        "plain_result_meta": without["result"].get("_meta"),
        "console_errors": [],
        "requests": [],
    }
    host_path = f"{out_dir}/app-host.html"
    with open(host_path, "w") as f:
        f.write(HOST % (script_json(with_apps["view_html"]), script_json(with_apps["arguments"]),
                        script_json(with_apps["result"])))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 900, "height": 1000}, device_scale_factor=1)
        page.on("console", lambda m: m.type == "error" and report["console_errors"].append(m.text))
        page.on("pageerror", lambda e: report["console_errors"].append(str(e)))
        page.on("request", lambda r: report["requests"].append(r.url))
        page.goto("file://" + host_path)
        view = page.frame_locator("#view")
        view.locator("figure.chart svg").first.wait_for(timeout=10000)
        report["charts"] = view.locator("figure.chart").count()
        page.wait_for_timeout(100)
        frame_box = page.locator("#view").bounding_box()
        report["frame_height"] = frame_box["height"]
        plot = view.locator("#chart-timeline svg")
        box = plot.bounding_box()
        frame_info = json.loads(view.locator("#chart-timeline").get_attribute("data-frame"))
        scale = box["width"] / 800
        x = box["x"] + (frame_info["left"] + (frame_info["right"] - frame_info["left"]) * 0.3) * scale
        y = box["y"] + (frame_info["top"] + (frame_info["bottom"] - frame_info["top"]) * 0.25) * scale
        page.mouse.move(x, y)
        page.wait_for_timeout(50)
        tip = view.locator("#tip")
        report["hover"] = tip.inner_text() if tip.is_visible() else None
        view.locator("#chart-timeline").screenshot(path=f"{out_dir}/app-chaos-timeline.png")
        report["host_log"] = page.evaluate("window.hostLog")
        browser.close()
    print(json.dumps(report))


if __name__ == "__main__":
    main(*sys.argv[1:4])
