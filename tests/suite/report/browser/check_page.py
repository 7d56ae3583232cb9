"""Opens a report page in Chromium (driven by Playwright) and reports, as one JSON line on stdout, what a
person at the screen gets: the charts drawn, the value shown when hovering each chart, what a series toggle
hides, console errors, and every request the page made (it must make none but its own file). Screenshots of
each chart go to the given directory.

    python check_page.py CHROMIUM PAGE.html SCREENSHOT_DIR PREFIX
"""

import json
import sys

from playwright.sync_api import sync_playwright


def main(chromium: str, page_path: str, shots: str, prefix: str) -> None:
    out = {"charts": {}, "console_errors": [], "requests": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 880, "height": 1000}, device_scale_factor=1)
        page.on("console", lambda m: m.type == "error" and out["console_errors"].append(m.text))
        page.on("pageerror", lambda e: out["console_errors"].append(str(e)))
        page.on("request", lambda r: out["requests"].append(r.url))
        page.goto("file://" + page_path)
        page.wait_for_load_state("load")
        for figure in page.query_selector_all("figure.chart"):
            chart = figure.get_attribute("id").removeprefix("chart-")
            svg = figure.query_selector("svg")
            marks = svg.eval_on_selector_all("polyline, line, rect, circle, path", "els => els.length")
            frame = json.loads(figure.get_attribute("data-frame"))
            box = svg.bounding_box()
            scale = box["width"] / 800
            figure.scroll_into_view_if_needed()
            box = svg.bounding_box()
            # The middle of the plot, a little left of centre (where every run has data).
            x = box["x"] + (frame["left"] + (frame["right"] - frame["left"]) * 0.4) * scale
            y = box["y"] + (frame["top"] + (frame["bottom"] - frame["top"]) * 0.15) * scale
            page.mouse.move(x, y)
            page.wait_for_timeout(50)
            tip = page.locator("#tip")
            shown = tip.is_visible()
            hover = tip.inner_text() if shown else None
            figure.screenshot(path=f"{shots}/{prefix}-{chart}.png")
            page.mouse.move(0, 0)
            # The first series toggle hides that series' marks.
            toggle = figure.query_selector(".toggles input")
            colour = toggle.get_attribute("data-colour")
            selector = f'[stroke="{colour}" i], [fill="{colour}" i]'
            drawn = svg.eval_on_selector_all(selector, "els => els.filter(e => e.style.display !== 'none').length")
            toggle.click()
            hidden = svg.eval_on_selector_all(selector, "els => els.filter(e => e.style.display === 'none').length")
            toggle.click()
            out["charts"][chart] = {"marks": marks, "hover": hover, "series_drawn": drawn, "series_hidden": hidden}
        browser.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main(*sys.argv[1:5])
