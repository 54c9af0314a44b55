"""Runtime gate: the rule decides; the mirror is logged beside it (shadow) or may decide when
confident (control). Usable by an agent platform without Dagster.

- off: rule only. shadow: the rule's answer is returned at once; the mirror runs on a worker
  thread from a bounded queue (full queue: the sample is dropped and counted) and is logged.
- control: the mirror's answer is used only when its probability >= threshold; below it, on
  timeout, exception, invalid option or exhausted quota, the rule decides.
- Safety points may only harden: `harden_order` lists the options from most permissive to most
  restrictive, and the mirror's answer is taken only if it is at least as restrictive as the
  rule's. A safety point in control without a complete order is refused at configuration load.
- The mirror answers a typed question about a state the caller already computed; facts are the
  rule's (code), never the model's.
"""

from __future__ import annotations

import hashlib
import json
import queue
import threading
import time
from collections import Counter, deque
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from adri_pipeline.routing.contract import CONTRACT

Rule = Callable[[dict], str]
Mirror = Callable[[dict], dict]  # jev-compat-v1 request -> response


class GateConfigError(ValueError):
    """The message names the file and the decision point."""


class DecisionPoint(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str
    question_type: Literal["noul", "choice", "score"] = "choice"
    options: dict[str, str]
    mode: Literal["off", "shadow", "control"] = "shadow"
    threshold: float = Field(default=0.85, ge=0.5, le=1.0)
    timeout_s: float = Field(default=0.5, gt=0)
    quota_per_minute: int = Field(default=600, ge=0)
    safety: bool = False
    harden_order: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _only_hardening(self) -> "DecisionPoint":
        if self.harden_order and sorted(self.harden_order) != sorted(self.options):
            raise ValueError(f"harden_order must list every option exactly once: {sorted(self.options)}")
        if self.safety and self.mode == "control" and not self.harden_order:
            raise ValueError("a safety point in control needs harden_order (most permissive first), "
                             "otherwise the mirror could grant what the rule denied")
        return self

    def restrictiveness(self, option: str) -> int:
        return self.harden_order.index(option)


class GateConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    points: dict[str, DecisionPoint]
    queue_size: int = Field(default=1000, ge=1)
    shadow_workers: int = Field(default=2, ge=1)
    redact_names: list[str] = Field(default_factory=list)
    approved: bool = True  # a generated recommendation arrives unapproved
    note: str = ""
    evidence: dict = Field(default_factory=dict)

    @model_validator(mode="after")
    def _control_needs_approval(self) -> "GateConfig":
        pending = [n for n, p in self.points.items() if p.mode == "control"]
        if pending and not self.approved:
            raise ValueError(f"points {pending} are in control but the configuration is not approved "
                             "(set approved: true after reviewing the evidence)")
        return self


def load_gate_config(path: str | Path) -> GateConfig:
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        return GateConfig.model_validate(raw)
    except FileNotFoundError:
        raise GateConfigError(f"{path}: gate configuration not found") from None
    except yaml.YAMLError as exc:
        raise GateConfigError(f"{path}: not valid YAML: {exc}") from None
    except ValidationError as exc:
        problems = "; ".join(
            (f"point {e['loc'][1]!r}: " if len(e["loc"]) > 1 and e["loc"][0] == "points" else "")
            + ".".join(str(p) for p in e["loc"][2:]) + (": " if len(e["loc"]) > 2 else "")
            + e["msg"].removeprefix("Value error, ") for e in exc.errors())
        raise GateConfigError(f"{path}: {problems}") from None


@dataclass(frozen=True)
class Decision:
    answer: str
    source: Literal["rule", "mirror"]
    reason: str  # why this source: rule_only, shadow, confident, low_confidence, timeout, ...
    mirror_answer: str | None = None
    probability: float | None = None


def describe_state(state: dict) -> str:
    """The facts the caller computed, as the text a mirror reads ("Contexto:" ... "Mensagem:")."""
    lines = ["Contexto:"] + [f"{k}: {v}" for k, v in state.items() if k != "mensagem"]
    return "\n".join(lines + [f"Mensagem: {state.get('mensagem', '')}"])


def build_request(name: str, point: DecisionPoint, state: dict) -> dict:
    return {"contract": CONTRACT, "state": describe_state(state), "questions": {
        name: {"type": point.question_type, "instructions": point.question, "criteria": point.options}}}


class Gate:
    def __init__(self, config: GateConfig, rules: dict[str, Rule], mirrors: dict[str, Mirror], log=None):
        missing = [n for n in config.points if n not in rules]
        if missing:
            raise GateConfigError(f"no rule for decision point(s) {missing}")
        self.config, self.rules, self.mirrors, self.log = config, rules, mirrors, log
        self.dropped: Counter = Counter()
        self.outcomes: Counter = Counter()
        self._calls: dict[str, deque] = {name: deque() for name in config.points}
        self._quota_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=config.shadow_workers + 4, thread_name_prefix="mirror")
        self._queue: queue.Queue = queue.Queue(maxsize=config.queue_size)
        self._workers = [threading.Thread(target=self._shadow_worker, daemon=True) for _ in range(config.shadow_workers)]
        for worker in self._workers:
            worker.start()

    # -- the caller's path -----------------------------------------------------------------
    def decide(self, name: str, state: dict) -> Decision:
        point = self.config.points[name]
        rule_answer = self.rules[name](state)
        if point.mode == "off" or name not in self.mirrors:
            return Decision(rule_answer, "rule", "rule_only")
        if point.mode == "shadow":
            try:
                self._queue.put_nowait((name, state, rule_answer))
            except queue.Full:
                self.dropped[name] += 1
            return Decision(rule_answer, "rule", "shadow")
        decision = self._control(name, point, state, rule_answer)
        self.outcomes[(name, decision.reason)] += 1
        return decision

    def _control(self, name: str, point: DecisionPoint, state: dict, rule_answer: str) -> Decision:
        if not self._take_quota(name, point):
            self._write(name, state, rule_answer, None, None, 0.0, "control", "rule", "quota_exhausted")
            return Decision(rule_answer, "rule", "quota_exhausted")
        answer, probability, latency, failure = self._ask(name, point, state)
        if failure:
            reason = failure
        elif probability < point.threshold:
            reason = "low_confidence"
        elif point.safety and point.restrictiveness(answer) < point.restrictiveness(rule_answer):
            reason = "would_grant"  # hardening only: never looser than the rule
        else:
            reason = "confident"
        used = "mirror" if reason == "confident" else "rule"
        self._write(name, state, rule_answer, answer, probability, latency, "control", used, reason)
        return Decision(answer if used == "mirror" else rule_answer, used, reason, answer, probability)

    # -- the mirror ------------------------------------------------------------------------
    def _ask(self, name: str, point: DecisionPoint, state: dict):
        """(answer, probability, latency_s, failure reason or '')."""
        started = time.perf_counter()
        future = self._pool.submit(self.mirrors[name], build_request(name, point, state))
        try:
            response = future.result(timeout=point.timeout_s)
            answer = response["answers"][name]
            option, probability = str(answer["answer"]), float(answer["probabilities"].get(str(answer["answer"]), answer["confidence"]))
        except FutureTimeout:
            return None, None, time.perf_counter() - started, "timeout"
        except Exception:  # noqa: BLE001 - any mirror failure falls back to the rule
            return None, None, time.perf_counter() - started, "mirror_error"
        latency = time.perf_counter() - started
        if option not in point.options:
            return option, probability, latency, "invalid_option"
        return option, probability, latency, ""

    def _take_quota(self, name: str, point: DecisionPoint) -> bool:
        now = time.monotonic()
        with self._quota_lock:
            calls = self._calls[name]
            while calls and now - calls[0] > 60:
                calls.popleft()
            if len(calls) >= point.quota_per_minute:
                return False
            calls.append(now)
            return True

    def _shadow_worker(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            name, state, rule_answer = item
            point = self.config.points[name]
            if not self._take_quota(name, point):
                self._write(name, state, rule_answer, None, None, 0.0, "shadow", "rule", "quota_exhausted")
            else:
                answer, probability, latency, failure = self._ask(name, point, state)
                self._write(name, state, rule_answer, answer, probability, latency, "shadow", "rule",
                            failure or ("agree" if answer == rule_answer else "disagree"))
            self._queue.task_done()

    def _write(self, name, state, rule_answer, mirror_answer, probability, latency_s, mode, used, reason) -> None:
        if self.log is not None:
            self.log.write({
                "decision_point": name, "state_hash": hashlib.sha256(
                    json.dumps(state, sort_keys=True, ensure_ascii=False).encode()).hexdigest(),
                "state": state, "rule_decision": rule_answer, "mirror_decision": mirror_answer,
                "probability": probability, "latency_ms": round(1000 * latency_s, 3),
                "mode": mode, "used": used, "outcome": reason,
            })

    def drain(self, timeout_s: float = 30.0) -> None:
        """Wait until queued shadow samples are logged (tests, replays, shutdown)."""
        deadline = time.monotonic() + timeout_s
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)

    def close(self) -> None:
        self.drain()
        for _ in self._workers:
            self._queue.put(None)
        self._pool.shutdown(wait=False, cancel_futures=True)
