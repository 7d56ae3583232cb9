"""A report given as a tool result, shown by the MCP App view in the minimal host of app_host.py (Chromium,
driven by Playwright): the view's document and the result come from files, so a report built by hand is
shown as a host shows a real one. Reports, as one JSON line on stdout, what a person sees: the charts, the
rows of the report's tables, the value shown when hovering a chart, console errors and requests.

    python app_view.py CHROMIUM VIEW.html RESULT.json OUT_DIR CHART
"""

import json
import sys

from playwright.sync_api import sync_playwright

from app_host import HOST, script_json


def main(chromium: str, view_path: str, result_path: str, out_dir: str, chart: str) -> None:
    with open(view_path) as f:
        view_html = f.read()
    with open(result_path) as f:
        result = json.load(f)
    out = {"console_errors": [], "requests": []}
    host_path = f"{out_dir}/app-view-host.html"
    with open(host_path, "w") as f:
        f.write(HOST % (script_json(view_html), script_json({}), script_json(result)))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 900, "height": 1000}, device_scale_factor=1)
        page.on("console", lambda m: m.type == "error" and out["console_errors"].append(m.text))
        page.on("pageerror", lambda e: out["console_errors"].append(str(e)))
        page.on("request", lambda r: out["requests"].append(r.url))
        page.goto("file://" + host_path)
        view = page.frame_locator("#view")
        view.locator("figure.chart svg").first.wait_for(timeout=10000)
        out["charts"] = [
            figure.get_attribute("id").removeprefix("chart-")
            for figure in view.locator("figure.chart").all()
        ]
        out["rows"] = [
            [cell.inner_text() for cell in row.locator("td").all()]
            for row in view.locator("section.report table tr").all()
        ]
        figure = view.locator(f"#chart-{chart}")
        figure.scroll_into_view_if_needed()
        box = figure.locator("svg").bounding_box()
        frame = json.loads(figure.get_attribute("data-frame"))
        scale = box["width"] / 800
        x = box["x"] + (frame["left"] + (frame["right"] - frame["left"]) * 0.15) * scale
        y = box["y"] + (frame["top"] + (frame["bottom"] - frame["top"]) * 0.5) * scale
        page.mouse.move(x, y)
        page.wait_for_timeout(50)
        tip = view.locator("#tip")
        out["hover"] = tip.inner_text() if tip.is_visible() else None
        figure.screenshot(path=f"{out_dir}/app-view-{chart}.png")
        browser.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main(*sys.argv[1:6])
