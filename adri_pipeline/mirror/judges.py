"""Two judges from different model families label each sampled case on their own; only cases
both agree on count. Offline, judge labels come from a labelled file (state hash -> label)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Protocol

from adri_pipeline.errors import AdriError
from adri_pipeline.jev.serialize import serialize_facts
from adri_pipeline.mirror.gate_config import DecisionPoint
from adri_pipeline.models.base import family_from_name


class JudgeConfigError(AdriError, ValueError):
    pass


class Judge(Protocol):
    name: str

    def label(self, point: DecisionPoint, record: dict) -> str | None: ...

    def describe(self) -> dict: ...


class FileJudge:
    """Labels from JSON lines {"state_hash": ..., "label": ..., "annotator": ...}; without a file, each
    record's own `truth`. A case the file does not label has no label (None: not an agreed case) — never
    the log's `truth`, which would make the file a second copy of the log's labels. A file names its one
    annotator on every line: two files are independent judges only with two annotators and two
    contents (promotion_blocker)."""

    def __init__(self, name: str, path: Path | None = None):
        self.name = name
        self.path = path
        self.labels: dict[str, str] = {}
        self.annotators: set[str] = set()
        self.sha256 = ""
        if path is not None:
            content = Path(path).read_bytes()
            self.sha256 = hashlib.sha256(content).hexdigest()
            for number, line in enumerate(content.decode("utf-8").splitlines(), start=1):
                if line.strip():
                    try:
                        item = json.loads(line)
                        self.labels[item["state_hash"]] = item["label"]
                    except (json.JSONDecodeError, KeyError, TypeError):
                        raise JudgeConfigError(
                            f"{path}: line {number}: expected a JSON object with state_hash and label (and annotator)"
                        ) from None
                    if isinstance(item.get("annotator"), str) and item["annotator"].strip():
                        self.annotators.add(item["annotator"].strip())

    @property
    def annotator(self) -> str | None:
        """The one annotator the file names on every line, or None (unnamed, or more than one)."""
        return next(iter(self.annotators)) if len(self.annotators) == 1 else None

    def describe(self) -> dict:
        if self.path is None:
            return {"name": self.name, "source": "the log's own labels (truth)"}
        return {
            "name": self.name,
            "source": "label file",
            "annotator": self.annotator,
            "sha256": self.sha256,
            "labels": len(self.labels),
        }

    def label(self, point: DecisionPoint, record: dict) -> str | None:
        return record.get("truth") if self.path is None else self.labels.get(record["state_hash"])


class LLMJudge:
    """An LLM judge (ollama:<model> or openai:<model>); the answer is constrained to the point's
    options by the JSON schema. Its family is what the server reports about the model."""

    def __init__(self, name: str, settings=None, timeout_s: float = 120.0):
        from adri_pipeline.models.select import chat_server

        self.name = name
        self.server, self.model = chat_server(name, settings, timeout_s)
        self._family: str | None = None

    @property
    def family(self) -> str:
        if self._family is None:
            # Ollama says "qwen2", a file name says "qwen-2.5...": both are the qwen family
            self._family = family_from_name(self.server.family(self.model) or self.model)
        return self._family

    def describe(self) -> dict:
        return {"name": self.name, "source": "model", "family": self.family}

    def label(self, point: DecisionPoint, record: dict) -> str | None:
        schema = {
            "type": "object",
            "required": ["resposta"],
            "properties": {"resposta": {"type": "string", "enum": list(point.options)}},
        }
        options = "\n".join(f"- {o}: {d}" for o, d in point.options.items())
        answer = self.server.chat(
            self.model,
            schema=schema,
            options={"temperature": 0.0, "seed": 42, "max_tokens": 64},
            messages=[
                {"role": "user", "content": f"{serialize_facts(record['state'])}\n\n{point.question}\n{options}"}
            ],
        )
        try:
            parsed = json.loads(answer.raw)
        except json.JSONDecodeError:
            return None
        label = parsed.get("resposta") if isinstance(parsed, dict) else None
        return label if isinstance(label, str) and label in point.options else None  # {"resposta": {...}} too


def judge_families_differ(first: Judge, second: Judge) -> bool:
    """By the family each server reports for its model (Ollama's `show` details, the weights' file or
    repository name for OpenAI-compatible servers); a label file is its own family."""

    def family(judge):
        return getattr(judge, "family", judge.name)

    return family(first) != family(second)


def promotion_blocker(spec: str) -> str | None:
    """Why judges configured as `spec` (ADRI_MIRROR_JUDGES) can never support a promotion, or None.
    The mirror design asks for two judges labelling each case on their own: two models of different
    families (make_judges checks the families before any case is judged), or label files that each
    name their one annotator, two annotators and two contents. `truth` is the log's own labels read
    twice; the same file twice, or two files by one (or no named) annotator, are one source."""
    if spec.strip() == "truth":
        return "one label source (the log's own labels): promotion needs two independent judges that agree"
    from adri_pipeline.models.select import is_served_model

    files = [
        FileJudge(n.strip(), Path(n.strip()))
        for n in spec.split(",")
        if not is_served_model(n.strip()) and Path(n.strip()).is_file()
    ]
    if unnamed := [f.name for f in files if f.annotator is None]:
        return (
            f"label file(s) {', '.join(unnamed)} name no single annotator (an `annotator` on every line): "
            "their independence is not shown"
        )
    if len(files) == 2 and (files[0].sha256 == files[1].sha256 or files[0].annotator == files[1].annotator):
        return f"the two label files are one source (same content or same annotator {files[0].annotator!r})"
    return None


def make_judges(spec: str, settings=None) -> tuple[Judge, Judge]:
    """'truth' (labels carried by the log or a file) or two judges such as 'ollama:<a>,openai:<b>';
    `settings` (config.Settings) says where their servers are."""
    if spec == "truth":  # one source read twice: the evaluation says so and never recommends promotion
        return FileJudge("log-labels"), FileJudge("log-labels")
    names = [n.strip() for n in spec.split(",")]
    if len(names) != 2:
        raise JudgeConfigError(f"judges {spec!r}: give 'truth' or two judges, e.g. ollama:<a>,openai:<b>")
    from adri_pipeline.models.select import is_served_model

    missing = [n for n in names if not is_served_model(n) and not Path(n).is_file()]
    if missing:
        raise JudgeConfigError(
            f"judges {spec!r}: {missing[0]!r} is neither ollama:<model>, openai:<model> nor a label file"
        )
    first, second = (LLMJudge(n, settings) if is_served_model(n) else FileJudge(n, Path(n)) for n in names)
    from adri_pipeline.models.base import ModelMissing, ServerUnreachable, TimedOut

    try:
        differ = judge_families_differ(first, second)
    except (ServerUnreachable, TimedOut, ModelMissing) as exc:
        raise JudgeConfigError(f"judges {spec!r}: a judge's server cannot say what model it serves ({exc})") from None
    if not differ:
        raise JudgeConfigError(f"judges {names} are of the same model family; pick two families")
    return first, second
