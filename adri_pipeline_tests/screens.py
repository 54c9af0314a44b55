"""The README's screenshots of the review pages, taken in headless Chromium from the pages `make demo`
writes (the project's synthetic sample, the embedded default): `make screens`.

    python -m adri_pipeline_tests.screens data/demo/review docs/images
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

from adri_pipeline_tests.reports.helpers import chromium, launch

# page -> (what the screenshot starts at, its height in CSS pixels)
SCREENS = {"findings.html": ("body", 1500), "routing.html": ("body", 1500), "mirror.html": ("body", 1300)}
WIDTH = 1100


def take(review: Path, out: Path) -> list[Path]:
    browser_path = chromium()
    if not browser_path:
        raise SystemExit("error: Debian's chromium is not installed (apt-get install chromium)")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as playwright:
        browser = launch(playwright, browser_path)
        for page_name, (selector, height) in SCREENS.items():
            page = review / page_name
            if not page.exists():
                raise SystemExit(f"error: {page} is not there: run `make demo` first")
            view = browser.new_page(viewport={"width": WIDTH, "height": height})
            view.goto(page.resolve().as_uri())
            view.locator(selector).first.wait_for()
            path = out / f"screen-{page.stem}.png"
            view.screenshot(path=str(path))
            written.append(path)
        browser.close()
    return written


if __name__ == "__main__":
    for written in take(Path(sys.argv[1]), Path(sys.argv[2])):
        print(written)
