"""The mirror gate's own drift monitor (jev/drift.py, CONFIDENCE) on a real mirror: how often does it
fire on traffic like the one its evaluation judged (the false-alarm rate), and on another agent's?

sparrow-decider on loopback is the mirror of a yes/no point ("O pedido pode seguir sem confirmação?").
Its confidences on 300 shadow decisions are the evaluation's reference (mirror/evaluate.py
confidence_reference); then, each through a shadow gate, 2,000 fresh states of the same kind (in
source) and 500 of another agent's (out of source), replayed in order through the monitor. The states
are **synthetic**: templates written by the project's engineer (loopback/gate_traffic.py
`payments`, `browsing`), not traffic from an agent.

    .venv/bin/python benchmarks/mirror_drift.py [in_source] [out_of_source]
"""

import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adri_pipeline.jev.drift import CONFIDENCE, LEVEL, WINDOW, replay  # noqa: E402
from adri_pipeline.mirror.evaluate import confidence_reference  # noqa: E402
from adri_pipeline.mirror.gate import Gate  # noqa: E402
from adri_pipeline.mirror.gate_config import DecisionPoint, GateConfig  # noqa: E402
from loopback.gate_traffic import YES_NO, MemoryLog, browsing, payments  # noqa: E402
from loopback.systemone_servers import sparrow_server  # noqa: E402


def confidences(url: str, states: list[dict]) -> list[float]:
    """The mirror's probability for its answer on each state, in order, as a shadow gate logs it."""
    log = MemoryLog()
    point = DecisionPoint(
        kind="judgment",
        question="O pedido pode seguir sem confirmação?",
        question_type="noul",
        options=YES_NO,
        mode="shadow",
        timeout_s=5,
        mirror=f"jev:{url}",
        quota_per_minute=10**6,
    )
    gate = Gate(GateConfig(points={"p": point}, shadow_workers=1), {"p": lambda state: "sim"}, {}, log)
    for state in states:
        gate.decide("p", state)
        gate.drain()  # one at a time: the stream keeps its order
    gate.close()
    return [r["probability"] for r in log.records if r["probability"] is not None]


def main() -> None:
    in_count, out_count = (int(a) for a in (sys.argv[1:3] if len(sys.argv) > 2 else (2000, 500)))
    rng = random.Random(20261203)
    started = time.perf_counter()
    with sparrow_server() as url:
        reference = confidence_reference([{"probability": p} for p in confidences(url, payments(rng, 300))])
        in_source = confidences(url, payments(rng, in_count))
        out_of_source = confidences(url, browsing(rng, out_count))
    print(
        json.dumps(
            {
                "mirror": "sparrow-decider (loopback)",
                "states": "synthetic",
                "window": WINDOW,
                "level": LEVEL,
                "reference": len(reference),
                "in_source_decisions": len(in_source),
                "false_alarm_share_in_source": round(replay(reference, in_source, signal=CONFIDENCE), 4),
                "out_of_source_decisions": len(out_of_source),
                "firing_share_out_of_source": round(replay(reference, out_of_source, signal=CONFIDENCE), 4),
                "seconds": round(time.perf_counter() - started, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
