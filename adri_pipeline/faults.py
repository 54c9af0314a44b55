"""Named kill points for the fault suite: with ADRI_FAULT=<name> set, the process kills itself with
SIGKILL when it reaches that point, so `kill -9` can be proven harmless exactly where it hurts most
(between the ledger and the results, halfway through publishing the snapshot). Unset, a no-op."""

from __future__ import annotations

import os
import signal

ENV = "ADRI_FAULT"


def point(name: str) -> None:
    if os.environ.get(ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
