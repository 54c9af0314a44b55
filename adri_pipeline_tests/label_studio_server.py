"""A real Label Studio on loopback for the slow tests: its own environment (`make label-studio`),
sqlite in a temporary folder, users with legacy API tokens (Label Studio 1.23 disables those unless
LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN is set when the organization is created): the first made at
start, the others by `label-studio init`, which joins them to the same organization."""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from adri_pipeline.config import PROJECT_ROOT
from loopback.systemone_servers import free_port, process_server

LABEL_STUDIO = PROJECT_ROOT / ".venv-label-studio" / "bin" / "label-studio"
EMAIL, PASSWORD, TOKEN = "coder@example.org", "adri-coding-2026", "0123456789abcdef0123456789abcdef01234567"


@dataclass
class LabelStudioServer:
    url: str
    token: str
    email: str
    password: str
    log: Path
    others: dict[str, str]  # e-mail -> API token of the other users


def _token(index: int) -> str:
    return f"{index:040x}"


@contextlib.contextmanager
def label_studio(timeout_s: float = 180.0, other_users: tuple[str, ...] = ()):
    if not LABEL_STUDIO.exists():
        pytest.skip(f"{LABEL_STUDIO} not installed: `make label-studio` (.ci/run does it)")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="adri-label-studio-") as folder:
        log = Path(folder) / "label-studio.log"  # it logs every request: more than a pipe holds
        env = {**os.environ, "LABEL_STUDIO_BASE_DATA_DIR": folder, "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true"}
        command = [
            str(LABEL_STUDIO),
            "start",
            "--no-browser",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--username",
            EMAIL,
            "--password",
            PASSWORD,
            "--user-token",
            TOKEN,
        ]
        with process_server(command, port, "/health", timeout_s, env, log) as url:
            others = {email: _token(index) for index, email in enumerate(other_users, start=1)}
            for email, token in others.items():
                subprocess.run(
                    [str(LABEL_STUDIO), "init", "--username", email, "--password", PASSWORD, "--user-token", token],
                    env=env,
                    check=True,
                    capture_output=True,
                    timeout=120,
                )
            yield LabelStudioServer(url, TOKEN, EMAIL, PASSWORD, log, others)


def labeling_page(
    server: LabelStudioServer, project: int, wait_for_text: str, screenshot: Path
) -> tuple[str, list[str]]:
    """The project's labeling page in headless Chromium (Debian's), logged in as the first user: the
    page's text and its script errors, with a screenshot. Errors count from the labeling page on:
    Label Studio's home page, right after a first login, sometimes throws "Illegal invocation" from
    its Sentry wrapper, with any interface (seen with a one-Choices project too)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1600})
        page.goto(f"{server.url}/user/login/")
        page.fill("input[name=email]", server.email)
        page.fill("input[name=password]", server.password)
        page.click("button[type=submit]")
        page.wait_for_load_state("networkidle")
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(f"{page.url}: {error}\n{error.stack}"))
        page.goto(f"{server.url}/projects/{project}/data?labeling=1")
        page.get_by_text(wait_for_text).first.wait_for(timeout=60_000)
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(screenshot), full_page=True)
        text = page.inner_text("body")
        browser.close()
    return text, errors
