"""A gate's configuration: its decision points (what each asks, its mode, who may act and how far),
validated from the YAML a platform team writes, every problem naming the file and the point; and a
point's question on the System One wire. Read by the gate (gate.py), the replays, the evaluation and
the judges."""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, ValidationInfo, model_validator

from adri_pipeline.errors import AdriError, describe_validation_error
from adri_pipeline.jev.contract import DEFAULT_MODEL, NO, YES
from adri_pipeline.jev.drift import CONFIDENCE, DriftMonitor
from adri_pipeline.jev.serialize import serialize_facts
from adri_pipeline.mirror.approval import Approval, check_approval
from adri_pipeline.mirror.results import ApprovalEvidence
from adri_pipeline.privacy import Redactor, folded

logger = logging.getLogger("adri_pipeline.mirror.gate")  # the gate's lines under one name, whichever module writes them

CONTROL_THRESHOLD = 0.85
ACTING_MODES = ("control", "veto", "warn")  # the mirror's answer reaches the caller: needs an approval
MIN_DRIFT_REFERENCE = 50  # an acting point is watched for drift when its evaluation kept this many confidences
HASH_KEY_ENV = "ADRI_MIRROR_HASH_KEY"


class GateConfigError(AdriError, ValueError):
    """The message names the file and the decision point."""


# the mirror design's first rule: "Os factos são decididos pelo código. Se uma ferramenta foi chamada, se
# devolveu erro, se um ficheiro existe ou que permissões tem o utilizador: isso não se pergunta a nenhum
# modelo. O modelo só julga o significado." Questions worded as such a fact, or as what a rule computes
# from its own inputs (a count, a comparison of numbers, a format check, a lookup), are refused at load.
# Matched on the question folded to lower case without accents, Portuguese and English.
FACT_WORDINGS = (
    ("a count", r"\bquant[oa]s\b|\bhow many\b|\bnumero de\b|\bnumber of\b|\bcontagem\b"),
    (
        "a comparison of numbers",
        r"\b(maior|menor)( do)? que\b|\b(mais|menos|acima|abaixo) de \d|\bpelo menos \d|\bpassa de \d"
        r"|\b(greater|less|more|fewer) than\b|\bat (least|most) \d|\bigual a \d|[<>]=?\s*\d"
        r"|\b(excede|ultrapassa|exceeds?)\b",
    ),
    (
        "a format check",
        r"\b(formato|format) (e )?(valido|invalido|valid|invalid|correto|correct)\b"
        r"|\b(valid|invalid)[oa]? (cpf|cnpj|e-?mail|url|cep|phone|telefone)\b"
        r"|\b(cpf|cnpj|e-?mail|url|cep|telefone|phone)\b[^?.]{0,30}\b(valid|invalid)"
        r"|\bbem formad[oa]\b|\bwell[- ]formed\b|\bregex\b|\b(corresponde ao|matches the) (padrao|pattern)\b",
    ),
    (
        "a lookup",
        r"\b(esta|consta|existe|aparece|is it|is|appears?) (na|no|nos|nas|em|in the|on the) "
        r"(lista|tabela|cadastro|base de dados|banco de dados|list|table|database|registry)\b",
    ),
    (
        "whether a tool was called or failed",
        r"\bferramenta (ja )?foi (chamada|usada|executada)\b"
        r"|\b(tool|function) (was|has been) (called|run|used)\b"
        r"|\b(devolveu|retornou|deu) (um |algum )?erro\b|\breturned an error\b",
    ),
    ("whether a file exists", r"\b(ficheiro|arquivo|file) (ja )?exist"),
    (
        "the user's permissions",
        r"\b(que|quais|tem|possui) (as )?permiss(ao|oes)\b|\bpermiss(ao|oes) d[oa]s? "
        r"(utilizador|usuario|cliente)|\b(what|which|has|have) (the )?permissions?\b",
    ),
)


def factual_wording(question: str) -> str | None:
    """What kind of fact `question` asks for (FACT_WORDINGS), or None when it reads as a judgment."""
    folded_question = folded(question).lower()
    return next((what for what, pattern in FACT_WORDINGS if re.search(pattern, folded_question)), None)


class DecisionPoint(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # required, and only "judgment" loads: the configuration says its question asks for a meaning, which a
    # model may judge, not a fact, which code decides (FACT_WORDINGS)
    kind: Literal["judgment", "fact"]
    question: str
    question_type: Literal["noul", "choice", "score"] = "choice"
    options: dict[str, str] = Field(default_factory=dict)  # choice / noul (sim, nao)
    score_range: tuple[float, float] = (0.0, 1.0)  # score questions: the answer must lie in it
    mode: Literal["off", "shadow", "control", "veto", "warn"] = "off"
    # the mirror design: "Quando manda, o espelho só decide se a sua probabilidade chega a 0,85": control
    # and veto need at least CONTROL_THRESHOLD; shadow and warn (which never command) may look lower
    threshold: float = Field(default=0.85, ge=0.5, le=1.0)
    timeout_s: float = Field(default=0.5, gt=0)
    quota_per_minute: int = Field(default=600, ge=0)
    safety: bool = False
    harden_order: list[str] = Field(default_factory=list)
    never_control: bool = False  # e.g. the depth of a security audit: shadow or warn at most
    expose_fields: list[str] = Field(default_factory=list)  # state fields the mirror sees unredacted
    # options that make the agent call a tool (e.g. "nao" to "is the HTML enough?" opens a browser):
    # savings count the tool calls the mirror avoided and those it added
    tool_call_options: list[str] = Field(default_factory=list)
    # "Controlo numa única direção" (the mirror design): the (rule's answer, mirror's answer) moves the
    # mirror may make in control, those its evaluation showed it wins clearly (recommended_overrides);
    # e.g. [["nao", "sim"]] for "is the HTML enough?": the mirror spares a browser, never adds one.
    # Without them, a point with harden_order moves toward stricter answers only.
    overrides: list[tuple[str, str]] = Field(default_factory=list)
    approval: Approval | None = None  # required in control, veto and warn (approval.py)
    # the mirror as a System One server, `jev:<url>` or `jev:<url>#<model>` (models/systemone.py);
    # empty: the caller passes the mirror to Gate (a Python callable)
    mirror: str = ""

    @model_validator(mode="before")
    @classmethod
    def _declared_a_judgment(cls, raw):
        if isinstance(raw, dict) and "kind" not in raw:
            raise ValueError(
                "kind: required: say `kind: judgment` when the question asks for a meaning a model "
                "may judge; a fact (a count, a comparison, a format, a lookup, a tool call, a file, "
                "a permission) is decided by the rule's code, never asked of a mirror"
            )
        return raw

    @model_validator(mode="after")
    def _a_judgment_not_a_fact(self) -> "DecisionPoint":
        """The mirror design: "Os factos são decididos pelo código [...] O modelo só julga o significado"."""
        if self.kind == "fact":
            raise ValueError(
                "kind: fact: facts are decided by code, never asked of a model (the mirror design); "
                "compute it in the rule and leave the point out of the gate"
            )
        if (what := factual_wording(self.question)) is not None:
            raise ValueError(
                f"question: {self.question!r} asks for {what}, a fact the rule's own inputs decide "
                "(the mirror design keeps facts to code): compute it in the rule, or ask the judgment "
                "it serves"
            )
        return self

    @model_validator(mode="after")
    def _only_hardening(self) -> "DecisionPoint":
        if self.mode in ("control", "veto") and self.threshold < CONTROL_THRESHOLD:
            raise ValueError(
                f"threshold: mode {self.mode} commands only at p >= {CONTROL_THRESHOLD} "
                f"(got {self.threshold}); a lower threshold is for shadow or warn"
            )
        self._check_the_question()
        self._check_command()
        return self

    def _check_the_question(self) -> None:
        """The point's own shape, whatever its mode: options (or a score range) that make sense, and the
        lists that name options naming real ones."""
        if self.question_type != "score" and not self.options:
            raise ValueError(f"a {self.question_type} question needs options")
        if self.question_type == "score" and self.score_range[0] >= self.score_range[1]:
            raise ValueError(f"score_range must be [low, high] with low < high, got {list(self.score_range)}")
        if unknown := sorted(set(self.tool_call_options) - set(self.options)):
            raise ValueError(f"tool_call_options {unknown} are not options of this point: {sorted(self.options)}")
        if self.harden_order and sorted(self.harden_order) != sorted(self.options):
            raise ValueError(f"harden_order must list every option exactly once: {sorted(self.options)}")

    def _check_command(self) -> None:
        """A point that commands (control, veto) moves in one direction only, and a safety point only in the
        direction that hardens: the mirror may make its decision stricter, never looser."""
        if self.never_control and self.mode in ("control", "veto"):
            raise ValueError(f"never_control: this point may not command (mode {self.mode}); use shadow or warn")
        if self.mode == "veto" and (self.question_type != "noul" or set(self.options) != {"sim", "nao"}):
            raise ValueError("mode veto is for yes/no points (question_type noul, options sim and nao)")
        if self.safety and self.mode == "control" and not self.harden_order and self.question_type != "score":
            raise ValueError(
                "a safety point in control needs harden_order (most permissive first), "
                "otherwise the mirror could grant what the rule denied"
            )
        if (
            self.safety
            and self.mode == "veto"
            and (not self.harden_order or self.restrictiveness("nao") < self.restrictiveness("sim"))
        ):
            raise ValueError(
                "a safety point in veto needs harden_order [sim, nao]: a veto turns 'sim' into 'nao', "
                "which hardens only when 'nao' is the stricter answer (e.g. 'may it run?', not "
                "'must it be blocked?')"
            )
        if self.safety and self.mode == "control" and self.question_type == "score":
            raise ValueError("a safety point cannot be a score in control: nothing says which way hardens")
        if bad := [
            list(pair)
            for pair in self.overrides
            if pair[0] not in self.options or pair[1] not in self.options or pair[0] == pair[1]
        ]:
            raise ValueError(
                f"overrides {bad}: each is [rule's answer, mirror's answer], two different options "
                f"of {sorted(self.options)}"
            )
        if self.safety and (
            loose := [list(p) for p in self.overrides if self.restrictiveness(p[1]) < self.restrictiveness(p[0])]
        ):
            raise ValueError(f"overrides {loose} would loosen a safety point (harden_order)")
        if self.mode == "control" and self.question_type != "score" and not self.overrides and not self.harden_order:
            raise ValueError(
                "control moves one way only (the mirror design): give overrides, the [rule's answer, "
                "mirror's answer] moves its evaluation recommended (recommended_overrides), or "
                "harden_order"
            )

    def allows(self, rule_answer, mirror_answer) -> bool:
        """Whether control lets the mirror turn the rule's answer into its own: along `overrides`, else
        toward a stricter answer of harden_order (score questions: any answer in range)."""
        if mirror_answer == rule_answer or self.question_type == "score":
            return True
        if self.overrides:
            return (rule_answer, mirror_answer) in {tuple(p) for p in self.overrides}
        return self.restrictiveness(mirror_answer) > self.restrictiveness(rule_answer)

    def restrictiveness(self, option: str) -> int:
        return self.harden_order.index(option)

    def accepts(self, answer) -> bool:
        """An answer this point can return: one of its options, or a number in its score range."""
        if self.question_type == "score":
            try:
                value = float(answer)
            except (TypeError, ValueError):
                return False
            return self.score_range[0] <= value <= self.score_range[1]
        return isinstance(answer, str) and answer in self.options

    def describe(self) -> str:
        """What this point will do, in one line (printed when a configuration loads)."""
        what = {
            "off": "rule only; the mirror is not asked",
            "shadow": "rule decides; the mirror answers in the background and is logged",
            "control": f"the mirror decides at p >= {self.threshold}, else the rule"
            + (f"; hardening only ({' < '.join(self.harden_order)})" if self.safety else ""),
            "veto": f"the mirror may turn the rule's 'sim' into 'nao' at p >= {self.threshold}, never the reverse",
            "warn": f"rule decides; the mirror's answer at p >= {self.threshold} is returned as an advisory",
        }[self.mode]
        return what + ("; may never command" if self.never_control else "")


class GateConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    points: dict[str, DecisionPoint]
    queue_size: int = Field(default=1000, ge=1)
    shadow_workers: int = Field(default=2, ge=1)
    redact_names: list[str] = Field(default_factory=list)
    # common Portuguese first names the list does not hold (privacy.py); off only where a state's
    # capitalized words are no one's name and the mirror needs them
    detect_names: bool = True
    state_hash_key_env: str = HASH_KEY_ENV  # environment variable holding the secret for state_hash
    note: str = ""
    evidence: dict = Field(default_factory=dict)
    _base: Path = PrivateAttr(default=Path("."))  # the configuration file's folder: relative evaluation paths
    _evidence: dict[str, ApprovalEvidence] = PrivateAttr(default_factory=dict)  # acting points' evaluations

    def redactor(self) -> Redactor:
        """The one redactor of everything this configuration's gate sends, logs and has evaluated."""
        return Redactor(self.redact_names, self.detect_names)

    def evaluation_path(self, point: "DecisionPoint") -> Path | None:
        """The evaluation file an acting point's approval is bound to, resolved."""
        if point.approval is None:
            return None
        path = point.approval.evaluation
        return path if path.is_absolute() else self._base / path

    @model_validator(mode="before")
    @classmethod
    def _no_bare_approval(cls, raw):
        if isinstance(raw, dict) and "approved" in raw:
            raise ValueError(
                "approved: a configuration-wide flag approves nothing; each acting point carries "
                "an approval bound to its evaluation (adri mirror approve POINT --evaluation FILE)"
            )
        return raw

    @model_validator(mode="after")
    def _acting_needs_evidence(self, info: ValidationInfo) -> "GateConfig":
        """Nothing acts on the caller's path without the evaluation that recommended it; relative
        evaluation paths are read from the configuration file's folder (context `base`)."""
        base = Path((info.context or {}).get("base", "."))
        for name, point in self.points.items():
            evidence = check_approval(name, point.mode, point.threshold, point.approval, base, point.overrides)
            if evidence is not None:
                self._evidence[name] = evidence
        self._base = base
        return self

    def describe(self) -> dict[str, str]:
        return {name: f"{point.mode}: {point.describe()}" for name, point in self.points.items()}

    def drift_monitors(self) -> dict[str, DriftMonitor]:
        """One drift monitor per acting point whose evaluation kept at least MIN_DRIFT_REFERENCE of the
        mirror's confidences: the live ones are compared with those (jev/drift.py, CONFIDENCE)."""
        monitors = {}
        for name, evidence in self._evidence.items():
            if len(evidence.confidence_reference) >= MIN_DRIFT_REFERENCE:
                monitors[name] = DriftMonitor(
                    evidence.confidence_reference, signal=replace(CONFIDENCE, watcher=f"mirror point {name}")
                )
            else:
                logger.info(
                    "point %s is not watched for drift: its evaluation kept %d of the mirror's confidences "
                    "(%d needed; an evaluation written before gates watched drift keeps none: evaluate again)",
                    name,
                    len(evidence.confidence_reference),
                    MIN_DRIFT_REFERENCE,
                )
        return monitors


def parse_gate_config(raw, path: Path) -> GateConfig:
    """Validate a configuration read from `path`; every problem is reported naming the file and point."""
    try:
        return GateConfig.model_validate(raw, context={"base": path.parent})
    except ValidationError as exc:
        problems = "; ".join(describe_validation_error(e, "points", "point") for e in exc.errors())
        raise GateConfigError(f"{path}: {problems}") from None


def load_gate_config(path: str | Path) -> GateConfig:
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GateConfigError(f"{path}: gate configuration not found") from None
    except yaml.YAMLError as exc:
        raise GateConfigError(f"{path}: not valid YAML: {exc}") from None
    config = parse_gate_config(raw, path)
    for name, what in config.describe().items():
        logger.info("gate %s: point %s -> %s", path.name, name, what)
    return config


SCORE_LEVELS = ["mínimo", "máximo"]  # a score point asks for two levels, 0 and 1, mapped onto its score_range


def question_of(point: DecisionPoint) -> dict:
    """The point's question on the System One wire."""
    if point.question_type == "score":
        return {"type": "score", "instructions": point.question, "criteria": SCORE_LEVELS}
    if point.question_type == "noul":
        return {
            "type": "noul",
            "instructions": point.question,
            "criteria": {"true": point.options.get(YES, "sim"), "false": point.options.get(NO, "não")},
        }
    return {"type": "choice", "instructions": point.question, "criteria": dict(point.options)}


def build_request(points: dict[str, DecisionPoint], state: dict) -> dict:
    """One System One request: one state, one question per point."""
    return {
        "model": DEFAULT_MODEL,
        "state": serialize_facts(state),
        "questions": {name: question_of(point) for name, point in points.items()},
    }
