"""Debian's Chromium for the review site: the browser tests (test_review.py) and the README's screenshots
(screens.py, `make screens`) open the pages in the same headless browser."""

import shutil


def chromium() -> str | None:
    """The path of Debian's chromium, None when it is not installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def launch(playwright, browser_path: str):
    """Debian's Chromium, headless, with nothing reaching out to the network."""
    return playwright.chromium.launch(
        executable_path=browser_path,
        args=[
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--disable-sync",
        ],
    )
