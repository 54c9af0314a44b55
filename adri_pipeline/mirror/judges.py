"""Two judges from different model families label each sampled case on their own; only cases
both agree on count. Offline, judge labels come from a labelled file (state hash -> label)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol

from adri_pipeline.mirror.gate import DecisionPoint
from adri_pipeline.routing.serialize import serialize_facts


class Judge(Protocol):
    name: str

    def label(self, point: DecisionPoint, record: dict) -> str | None: ...


class FileJudge:
    """Labels from JSON lines {"state_hash": ..., "label": ...}, or from each record's `truth`."""

    def __init__(self, name: str, path: Path | None = None):
        self.name = name
        self.labels = {}
        if path is not None:
            for line in Path(path).read_text(encoding="utf-8").splitlines():
                if line.strip():
                    item = json.loads(line)
                    self.labels[item["state_hash"]] = item["label"]

    def label(self, point: DecisionPoint, record: dict) -> str | None:
        return self.labels.get(record["state_hash"], record.get("truth")) if self.labels else record.get("truth")


class OllamaJudge:
    """An LLM judge; the answer is constrained to the point's options by the JSON schema."""

    def __init__(self, model: str, host: str, timeout_s: float = 120.0):
        from adri_pipeline.backends.ollama import make_client

        self.name = f"ollama:{model}"
        self.model = model
        self.client = make_client(host, timeout_s)

    def label(self, point: DecisionPoint, record: dict) -> str | None:
        schema = {"type": "object", "required": ["resposta"],
                  "properties": {"resposta": {"type": "string", "enum": list(point.options)}}}
        options = "\n".join(f"- {o}: {d}" for o, d in point.options.items())
        response = self.client.chat(
            model=self.model, format=schema, think=False, options={"temperature": 0, "seed": 42},
            messages=[{"role": "user", "content": f"{serialize_facts(record['state'])}\n\n{point.question}\n{options}"}])
        try:
            answer = json.loads(response.message.content).get("resposta")
        except json.JSONDecodeError:
            return None
        return answer if answer in point.options else None


def judge_families_differ(first: Judge, second: Judge) -> bool:
    """'ollama:qwen2.5:7b' vs 'ollama:gemma3:4b' -> families qwen2.5 and gemma3."""
    def family(judge):
        return judge.name.split(":")[1].split("-")[0] if judge.name.startswith("ollama:") else judge.name
    return family(first) != family(second)


class JudgeConfigError(ValueError):
    pass


def make_judges(spec: str, host: str) -> tuple[Judge, Judge]:
    """'truth' (labels carried by the log or a file) or two judges 'ollama:<a>,ollama:<b>'."""
    if spec == "truth":
        return FileJudge("truth-a"), FileJudge("truth-b")
    names = [n.strip() for n in spec.split(",")]
    if len(names) != 2:
        raise JudgeConfigError(f"judges {spec!r}: give 'truth' or two judges, ollama:<a>,ollama:<b>")
    missing = [n for n in names if not n.startswith("ollama:") and not Path(n).is_file()]
    if missing:
        raise JudgeConfigError(f"judges {spec!r}: {missing[0]!r} is neither ollama:<model> nor a label file")
    first, second = (OllamaJudge(n.removeprefix("ollama:"), host) if n.startswith("ollama:") else FileJudge(n, Path(n))
                     for n in names)
    if not judge_families_differ(first, second):
        raise JudgeConfigError(f"judges {names} are of the same model family; pick two families")
    return first, second
