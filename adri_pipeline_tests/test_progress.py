"""Long commands say what they do, how far they are, how fast and how long is left — in a terminal."""

import io
import time

from adri_pipeline import progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_terminal_sees_what_done_total_rate_and_time_left(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(progress.sys, "stderr", terminal)
    for _ in progress.steps(range(3), "embedding (3 not cached)", unit="doc"):
        time.sleep(0.15)  # long enough for a refresh between items
    shown = terminal.getvalue()
    assert "embedding (3 not cached)" in shown and "2/3" in shown and "doc/s" in shown and "<" in shown


def test_a_log_file_gets_no_progress_line(monkeypatch):
    log = io.StringIO()
    monkeypatch.setattr(progress.sys, "stderr", log)
    assert list(progress.steps(range(3), "replaying page_type")) == [0, 1, 2]
    assert log.getvalue() == ""
