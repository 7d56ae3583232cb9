"""Opens every page of a built book in Chromium (driven by Playwright) and reports, as one JSON object on stdout,
what a reader's browser met on each: console errors and page errors, requests that failed, images that did not
load, and any request beyond the book's own files.

    python check_book.py CHROMIUM BOOK_DIR PAGE.html [PAGE.html ...]
"""

import json
import pathlib
import sys

from playwright.sync_api import sync_playwright


def main(chromium: str, book: str, pages: list[str]) -> None:
    root = pathlib.Path(book).resolve()
    out = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        for name in pages:
            seen = {"console_errors": [], "failed_requests": [], "foreign_requests": [], "broken_images": [], "images": 0}
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.on("console", lambda m, seen=seen: m.type == "error" and seen["console_errors"].append(m.text))
            page.on("pageerror", lambda e, seen=seen: seen["console_errors"].append(str(e)))
            page.on("requestfailed", lambda r, seen=seen: seen["failed_requests"].append(f"{r.url}: {r.failure}"))
            page.on(
                "request",
                lambda r, seen=seen: r.url.startswith("file://" + str(root)) or r.url.startswith("data:")
                or seen["foreign_requests"].append(r.url),
            )
            page.goto((root / name).as_uri())
            page.wait_for_load_state("load")
            # An image that did not load has no natural width once the page has loaded.
            images = page.eval_on_selector_all(
                "img", "imgs => imgs.map(i => ({src: i.getAttribute('src'), ok: i.complete && i.naturalWidth > 0}))"
            )
            seen["images"] = len(images)
            seen["broken_images"] = [i["src"] for i in images if not i["ok"]]
            out[name] = seen
            page.close()
        browser.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
