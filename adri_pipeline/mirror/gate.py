"""Runtime gate: the rule decides; the mirror is logged beside it (shadow) or, once a person has
approved its evaluation, may act in one direction only. Usable by an agent platform without Dagster.
Its configuration (decision points, validated) is gate_config.py; its work queues, lanes, quotas and
record log gate_plumbing.py; this module decides.

the mirror design decides the defaults and the controls: "Numa instalação nova, o espelho chega
desligado" (points default to `off`; a point acts only with an approval bound to an evaluation,
`approval.py`); "Em segurança, só pode endurecer [...] Algumas [...] nunca podem mandar"
(`harden_order`, `never_control`); a veto "pode retirar um
«sim» da regra se tiver a certeza de que é «não», mas nunca acrescentar um" (mode `veto`); the
task-progress check "apenas acrescentará um aviso" (mode `warn`); "Se houver várias perguntas sobre
o mesmo estado, vão todas numa só chamada" (`decide_many`).

- off: rule only. shadow: the rule's answer is returned at once; the mirror runs on a worker
  thread from a bounded queue (full queue: the sample is dropped and logged as such).
- control: the mirror's answer is used only when its probability >= threshold; below it, on
  timeout, exception, invalid option, exhausted quota or a mirror still holding every worker with
  calls that timed out (`mirror_busy`), the rule decides. A point the configuration no longer has
  (a reload dropped it) is decided by its rule (`not_configured`). Safety points only
  harden (`harden_order`, most permissive first).
- veto (yes/no points): the mirror may turn the rule's "sim" into "nao" when confident, never the reverse.
- warn: the mirror's confident answer comes back as an advisory beside the rule's decision.
- drift: an acting point is watched (jev/drift.py): the mirror's confidences, as they arrive, against
  those on the shadow traffic its evaluation judged. While they differ the rule decides
  (`mirror_drifted`; a log line, `drift_counters()`), until a window of traffic is like it again; a
  mirror that reports its own drift (`x_drift`, `adri routing serve`) is believed at once.
- The state is redacted before the mirror, the log or the hash sees it; `state_hash` is keyed.
- The caller's path never raises because of the gate: any gate fault returns the rule's answer.
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import time
from collections import Counter
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Callable, Literal

import numpy as np

from adri_pipeline.jev.contract import check_response
from adri_pipeline.mirror.approval import file_sha256
from adri_pipeline.mirror.gate_config import (
    ACTING_MODES,
    SCORE_LEVELS,
    DecisionPoint,
    GateConfig,
    GateConfigError,
    build_request,
)
from adri_pipeline.mirror.gate_plumbing import (
    CONTROL_LANE_WORKERS,
    LOG_QUEUE_MIN,
    TASK_RECORD,
    Lane,
    Quotas,
    RecordLog,
    WorkQueue,
    _as_logged,
)
from adri_pipeline.privacy import keyed_state_hash

logger = logging.getLogger(__name__)

Rule = Callable[[dict], str | float]
Mirror = Callable[[dict], dict]  # System One request -> response (the JSON a server answers)


@dataclass(frozen=True)
class Decision:
    answer: str | float
    source: Literal["rule", "mirror"]
    reason: str  # why this source: rule_only, shadow, confident, low_confidence, timeout, veto, ...
    mirror_answer: str | float | None = None
    probability: float | None = None
    advisory: str | float | None = None  # warn mode: the mirror's confident answer, never applied


def systemone_mirror(spec: str, timeout_s: float) -> Mirror:
    """A System One server as a mirror: the JSON it answers, asked once (no retry: the gate's timeout
    decides, then the rule)."""
    from adri_pipeline.models.systemone import SystemOneServer

    server = SystemOneServer(spec, timeout_s=timeout_s, retries=0)
    return lambda request: server.ask(request).body


@dataclass(frozen=True)
class _Asked:
    answer: str | float | None
    probability: float | None
    latency_s: float
    failure: str  # "" when the answer is usable


def _number(value) -> float | None:
    """A finite int or float as the mirror sent it; None for anything else (strings, bools, NaN, inf)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _probability(value) -> float | None:
    number = _number(value)
    return number if number is not None and 0.0 <= number <= 1.0 else None


def _state_hash_key(config: GateConfig, hash_key: bytes | None) -> bytes:
    """The key state hashes are made with: the one given, else the environment's; else a random one for
    this process, said in the log, since its hashes then match no other process's."""
    key = hash_key or os.environ.get(config.state_hash_key_env, "").encode()
    if not key:
        logger.info("%s not set: state hashes are keyed with a random key for this process", config.state_hash_key_env)
        key = secrets.token_bytes(32)
    return key


class Gate:
    """The decisions: which answer each point uses, and the record of why. The threads, bounds and queues
    it decides with are gate_plumbing.py's: a lane per path to the mirror (control, shadow), the quotas,
    the shadow samples' work queue and the log writer's."""

    def __init__(
        self,
        config: GateConfig,
        rules: dict[str, Rule],
        mirrors: dict[str, Mirror],
        log: RecordLog | None = None,
        run_id: str | None = None,
        hash_key: bytes | None = None,
    ):
        missing = [n for n in config.points if n not in rules]
        if missing:
            raise GateConfigError(f"no rule for decision point(s) {missing}")
        self.config, self.rules, self.log = config, rules, log
        self.mirrors = dict(mirrors)
        self._add_served_mirrors(config)
        self.run_id = run_id
        self.redactor = config.redactor()
        self._hash_key = _state_hash_key(config, hash_key)
        self.dropped: Counter = Counter()
        self.outcomes: Counter = Counter()
        self._quotas = Quotas(config.points)
        # control and shadow ask the mirror through lanes of their own: a hung mirror that fills the
        # shadow lane never makes a control decision wait or time out, and the reverse
        self._lanes = {
            "control": Lane(CONTROL_LANE_WORKERS, "mirror-control"),
            "shadow": Lane(config.shadow_workers + 2, "mirror-shadow"),
        }
        # log records are written by a thread of their own, never on the caller's path; past this many
        # waiting, records are counted as lost (log_dropped) rather than block a decision
        self.log_dropped = 0
        self._log_writer = WorkQueue(
            self._log_item, max(4 * config.queue_size, LOG_QUEUE_MIN), 1, "shadow log record lost", name="mirror-log"
        )
        self._unconfigured: set[str] = set()  # points a caller asks about that the configuration lost
        # (path, size, mtime) of each acting point's evaluation as last checked, and the points whose
        # evaluation changed under a running gate: those fall back to the rule until a reload
        self._evaluations_seen: dict[str, tuple] = {}
        self._revoked: set[str] = set()
        self.drift = config.drift_monitors()  # per acting point: is the mirror's confidence like its evaluation's?
        self._shadow = WorkQueue(self._shadow_sample, config.queue_size, config.shadow_workers, "shadow sample lost")

    def _add_served_mirrors(self, config: GateConfig) -> None:
        """Points whose configuration names a System One server get it as their mirror (one client per
        server, so that the points asking it about one state travel in one request)."""
        served: dict[str, Mirror] = {}
        for name, point in config.points.items():
            if point.mirror and name not in self.mirrors:
                if point.mirror not in served:
                    timeout = max(p.timeout_s for p in config.points.values() if p.mirror == point.mirror)
                    try:
                        served[point.mirror] = systemone_mirror(point.mirror, timeout)
                    except ValueError as exc:
                        raise GateConfigError(f"point {name}: mirror {exc}") from None
                self.mirrors[name] = served[point.mirror]

    def reload(self, config: GateConfig) -> None:
        """Switch points on or off from a new configuration (load_gate_config validated it) without
        restarting the caller: decisions already under way finish with the old one, the next use the
        new one. Queue size and worker count stay as started."""
        missing = [n for n in config.points if n not in self.rules]
        if missing:
            raise GateConfigError(f"no rule for decision point(s) {missing}")
        self._quotas.add(config.points)
        self.redactor = config.redactor()
        self._add_served_mirrors(config)
        self._evaluations_seen, self._revoked = {}, set()  # load_gate_config checked every approval again
        kept = self.drift  # a monitor whose reference is unchanged keeps its window (and its alarm)
        self.drift = {
            name: kept[name] if name in kept and np.array_equal(kept[name].reference, monitor.reference) else monitor
            for name, monitor in config.drift_monitors().items()
        }
        self.config = config  # one assignment: a decision reads either the old or the new configuration
        for name, what in config.describe().items():
            logger.info("reloaded %s: %s", name, what)

    def redacted(self, name: str, state: dict) -> dict:
        return self.redactor(state, keep=set(self.config.points[name].expose_fields))

    def state_hash(self, name: str, state: dict) -> str:
        """Keyed hash of the redacted state, as the log records it."""
        return keyed_state_hash(self.redacted(name, state), self._hash_key)

    # -- the caller's path -----------------------------------------------------------------
    def decide(self, name: str, state: dict) -> Decision:
        return self.decide_many(state, [name])[name]

    def decide_many(self, state: dict, names: list[str]) -> dict[str, Decision]:
        """Several questions about one state: one mirror request per mirror and exposure set, each answer validated
        and gated on its own (a missing answer falls back for its question only)."""
        rule_answers = {name: self.rules[name](state) for name in names}  # the caller's own code
        points = self.config.points  # one read: a reload may replace the configuration meanwhile
        lost = [n for n in names if n not in points]
        for name in set(lost) - self._unconfigured:
            self._unconfigured.add(name)
            logger.warning(
                "decision point %s is not in the gate's configuration (a reload dropped it?): its rule decides", name
            )
        try:
            decided = {n: Decision(rule_answers[n], "rule", "not_configured") for n in lost}
            return decided | self._decide(state, [n for n in names if n in points], rule_answers)
        except Exception:  # noqa: BLE001 - the gate must never break the caller's path
            logger.exception("gate fault: the rule decides")
            return {n: Decision(rule_answers[n], "rule", "gate_error") for n in names}

    def _decide(self, state: dict, names: list[str], rule_answers: dict) -> dict[str, Decision]:
        decisions: dict[str, Decision] = {}
        shadow, acting = [], []
        for name in names:
            point, rule_answer = self.config.points[name], rule_answers[name]
            if point.mode == "off" or name not in self.mirrors:
                decisions[name] = Decision(rule_answer, "rule", "rule_only")
            elif not point.accepts(rule_answer):
                self._write(
                    name, state, rule_answer, _Asked(None, None, 0.0, ""), point.mode, "rule", "rule_invalid_option"
                )
                decisions[name] = Decision(rule_answer, "rule", "rule_invalid_option")
            elif point.mode == "shadow":
                shadow.append(name)
                decisions[name] = Decision(rule_answer, "rule", "shadow")
            elif not self._approval_holds(name, point):
                decisions[name] = Decision(rule_answer, "rule", "approval_revoked")
            else:
                acting.append(name)
        if shadow:
            self._queue_for_shadow(shadow, state, rule_answers)
        if acting:
            asked = self._ask_many(acting, state)
            for name in acting:
                decision = self._drifted(name, rule_answers[name], asked[name]) or self._apply(
                    self.config.points[name], rule_answers[name], asked[name]
                )
                self._write(
                    name,
                    state,
                    rule_answers[name],
                    asked[name],
                    self.config.points[name].mode,
                    decision.source,
                    decision.reason,
                )
                self.outcomes[(name, decision.reason)] += 1
                decisions[name] = decision
        return decisions

    def _queue_for_shadow(self, shadow: list[str], state: dict, rule_answers: dict) -> None:
        """The shadow points' question to the mirror, for a worker to ask off the caller's path; with the
        queue full, dropped and logged as such rather than make the caller wait."""
        if not self._shadow.offer((shadow, state, rule_answers)):
            for name in shadow:
                self.dropped[name] += 1
                self._write(
                    name, None, rule_answers[name], _Asked(None, None, 0.0, ""), "shadow", "rule", "dropped_queue_full"
                )

    def _approval_holds(self, name: str, point: DecisionPoint) -> bool:
        """Whether the evaluation an acting point was approved on is still the file it was: checked at
        load, and again whenever its size or time changes (a stat per decision), so an edited or deleted
        evaluation stops the point acting in a running gate, not only at the next load."""
        if name in self._revoked:
            return False
        path = self.config.evaluation_path(point)
        try:
            stat = path.stat()
            seen = (str(path), stat.st_size, stat.st_mtime_ns)
            if self._evaluations_seen.get(name) == seen:
                return True
            holds = file_sha256(path) == point.approval.sha256
        except OSError:
            holds = False
        if not holds:
            self._revoked.add(name)
            logger.warning(
                "decision point %s: the evaluation it was approved on (%s) changed or is gone: "
                "its rule decides until the configuration is approved and reloaded again",
                name,
                path,
            )
            return False
        self._evaluations_seen[name] = seen
        return True

    def _drifted(self, name: str, rule_answer, asked: _Asked) -> Decision | None:
        """The rule's decision while the mirror's confidences are unlike those its evaluation judged
        (the mirror is asked all the same: its answers are how the gate sees the traffic return)."""
        monitor = self.drift.get(name)
        if monitor is None or asked.probability is None or not monitor.observe(asked.probability):
            return None
        return Decision(rule_answer, "rule", "mirror_drifted", asked.answer, asked.probability)

    def drift_counters(self) -> dict[str, dict]:
        """Per watched point, its drift monitor's state and counts (drifted, p_value, alarms, recoveries, ...)."""
        return {name: monitor.counters() for name, monitor in self.drift.items()}

    @staticmethod
    def _apply(point: DecisionPoint, rule_answer, asked: _Asked) -> Decision:
        def rule(reason: str) -> Decision:
            return Decision(rule_answer, "rule", reason, asked.answer, asked.probability)

        if asked.failure:
            return rule(asked.failure)
        if not asked.probability >= point.threshold:  # written so that a NaN can never pass
            return rule("low_confidence")
        if point.mode == "warn":
            return Decision(rule_answer, "rule", "advisory", asked.answer, asked.probability, advisory=asked.answer)
        if point.mode == "veto":
            if rule_answer == "sim" and asked.answer == "nao":
                return Decision("nao", "mirror", "veto", asked.answer, asked.probability)
            return rule("no_veto")  # never adds a "sim"
        if point.safety and point.restrictiveness(asked.answer) < point.restrictiveness(rule_answer):
            return rule("would_grant")  # hardening only: never looser than the rule
        if not point.allows(rule_answer, asked.answer):
            return rule("other_direction")  # control moves one way only
        return Decision(asked.answer, "mirror", "confident", asked.answer, asked.probability)

    # -- the mirror ------------------------------------------------------------------------
    def _ask_many(self, names: list[str], state: dict, lane: str = "control") -> dict[str, _Asked]:
        """Quota per point, then one request per mirror and exposure set for the points that have quota."""
        asked = {
            n: _Asked(None, None, 0.0, "quota_exhausted")
            for n in names
            if not self._quotas.take(n, self.config.points[n].quota_per_minute)
        }
        # one request per mirror and per set of exposed fields: a field one point may see is never sent
        # in a request that asks another point
        groups: dict[tuple, list[str]] = {}
        for name in names:
            if name not in asked:
                key = (id(self.mirrors[name]), frozenset(self.config.points[name].expose_fields))
                groups.setdefault(key, []).append(name)
        for group in groups.values():
            asked |= self._ask(group, state, self._lanes[lane])
        return asked

    def _ask(self, names: list[str], state: dict, lane: Lane) -> dict[str, _Asked]:
        points = {n: self.config.points[n] for n in names}
        exposed = set().union(*(p.expose_fields for p in points.values()))
        request = build_request(points, self.redactor(state, keep=exposed))
        started = time.perf_counter()
        future = lane.submit(self.mirrors[names[0]], request)
        if future is None:
            return {n: _Asked(None, None, 0.0, "mirror_busy") for n in names}
        try:
            response = future.result(timeout=max(p.timeout_s for p in points.values()))
        except FutureTimeout:
            return {n: _Asked(None, None, time.perf_counter() - started, "timeout") for n in names}
        except Exception:  # noqa: BLE001 - any mirror failure falls back to the rule
            return {n: _Asked(None, None, time.perf_counter() - started, "mirror_error") for n in names}
        latency = time.perf_counter() - started
        drift = response.get("x_drift") if isinstance(response, dict) else None
        if isinstance(drift, dict) and drift.get("drifted"):
            # the mirror says the traffic is unlike its calibration data (`adri routing serve`'s drift
            # monitor): it is no judge of this state, the rule decides
            return {n: _Asked(None, None, latency, "mirror_drifted") for n in names}
        try:
            usable, _ = check_response(request, response)
        except Exception:  # noqa: BLE001 - an answer the checks cannot even read is not an answer
            usable = {}
        return {n: self._read_answer(points[n], usable.get(n), latency) for n in names}

    @staticmethod
    def _read_answer(point: DecisionPoint, reading, latency: float) -> _Asked:
        """A checked answer (jev/contract.Reading), or None when the mirror broke the spec for this
        question (jev/contract.check_response): then the rule decides."""
        if reading is None:
            return _Asked(None, None, latency, "invalid_answer")
        if point.question_type == "score":
            low, high = point.score_range
            option = low + float(reading.option) / (len(SCORE_LEVELS) - 1) * (high - low)
        else:
            option = reading.option
        probability = _probability(reading.confidence)
        if probability is None:  # a broken mirror never commands
            return _Asked(option, None, latency, "invalid_confidence")
        if not point.accepts(option):
            return _Asked(option, probability, latency, "invalid_option")
        return _Asked(option, probability, latency, "")

    def _shadow_sample(self, item) -> None:
        names, state, rule_answers = item
        asked = self._ask_many(names, state, lane="shadow")
        for name in names:
            answer = asked[name]
            outcome = answer.failure or ("agree" if answer.answer == rule_answers[name] else "disagree")
            self._write(name, state, rule_answers[name], answer, "shadow", "rule", outcome)

    def _write(
        self, name: str, state: dict | None, rule_answer, asked: _Asked, mode: str, used: str, outcome: str
    ) -> None:
        """Hand one log record to the log's thread (redaction, hashing and the write happen there)."""
        if self.log is None:
            return
        if not self._log_writer.offer((name, state, rule_answer, asked, mode, used, outcome)):
            self.log_dropped += 1

    def _log_item(self, item) -> None:
        if isinstance(item, dict):  # a task record, ready but for redaction
            self.log.write(self.redactor.stored(item), redacted=True)
        else:
            self._write_record(*item)

    def _write_record(
        self, name: str, state: dict | None, rule_answer, asked: _Asked, mode: str, used: str, outcome: str
    ) -> None:
        """One log record, redacted whole (the state with its exposed fields, and what the rule and the
        mirror answered); the state is absent for dropped samples."""
        record = {
            "decision_point": name,
            "state_hash": self.state_hash(name, state) if state is not None else "dropped-" + secrets.token_hex(8),
            "state": state or {},
            "rule_decision": _as_logged(rule_answer),
            "mirror_decision": _as_logged(asked.answer),
            "probability": asked.probability,
            "latency_ms": round(1000 * asked.latency_s, 3),
            "mode": mode,
            "used": used,
            "outcome": outcome,
            "exposed_fields": list(self.config.points[name].expose_fields) if name in self.config.points else [],
        }
        if self.run_id:
            record["run_id"] = self.run_id
        self.log.write(self.redactor.stored(record), redacted=True)

    def task_finished(
        self,
        task_id: str,
        seconds: float,
        main_model_calls: int = 0,
        controls: bool | None = None,
        output: str | None = None,
    ) -> None:
        """One record per task and run, so `adri mirror savings` can pair the same task run with the
        controls on and off (mirror/savings.py). `task_id` names the task, the same in every run;
        `output` (redacted like any state) is what a blinded quality grading reads."""
        if self.log is None:
            return
        acting = any(p.mode in ACTING_MODES for p in self.config.points.values()) if controls is None else controls
        self._log_writer.put(
            {
                "decision_point": TASK_RECORD,
                "state_hash": "task-" + task_id,
                "state": {} if output is None else {"output": output},
                "rule_decision": "",
                "latency_ms": round(1000 * seconds, 3),
                "mode": "task",
                "used": "rule",
                "outcome": "controls_on" if acting else "controls_off",
                "run_id": self.run_id,
                "task_id": task_id,
                "main_model_calls": main_model_calls,
            }
        )

    def drain(self, timeout_s: float = 30.0) -> None:
        """Wait until queued shadow samples are asked and every record is written (tests, replays, shutdown)."""
        deadline = time.monotonic() + timeout_s
        while (self._shadow.busy or self._log_writer.busy) and time.monotonic() < deadline:
            time.sleep(0.01)

    def close(self) -> None:
        self.drain()
        self._shadow.close()
        self._log_writer.close()
        for lane in self._lanes.values():
            lane.close()
