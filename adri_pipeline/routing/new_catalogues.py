"""Answers to D2 turns of catalogues a candidate never fitted on, for what D2's confidence promises
there: its temperature, its certified threshold and its prediction sets (issue 56).

Why: calibrated on the fit source's own calibration split, a D2 candidate's confidence described the
source's catalogue. Blended toward uniform on unfamiliar messages (calibration.Familiarity), it fell
to near uniform on every new catalogue, so the certified threshold answered none of its turns; and the
blend scrambled the order of right and wrong answers there (leave-one-catalogue-out over the team's
293 turns, benchmarks/routing_confidence_loco.py: the 40 % most confident answers 14 % wrong, 7 %
before the blend). A new catalogue's turns are what D2 meets in service, so its confidence is fitted
and certified on turns of catalogues the fit did not see: each hand-written turn that joined dev
(Dataset.fit_weight: the team's and, since 2026-12-07, the read outside authors' sets,
protocol.TEAM_TRAINING) is answered by the candidate fitted without its author's turns (cross-fitting, K
folds by author). By author, not by catalogue, since 2026-12-07: a new team's catalogue comes with its
author's conventions, and a turn answered by a fit that had learned its author's other catalogues looked
surer than a new author's turns bear out (left out one author at a time, the ten authors' turns; the
threshold certified per author then answered 23-47 % of a new author's turns where per catalogue it
answered 17-32 %, docs/guide-routing.md). What these answers certify assumes new authors exchangeable
with theirs. The temperature also hears the other sources' D2 calibration splits
(run._temper_on_new_catalogues): fitted on the team's turns alone, it was confidently wrong on the sources
unlike them.

**Catalogue rule.** A turn's agents are every agent id it names: the active agent, the suspended
sessions, the agent ids of its recent turns and the `<id>` of each `retomar_sessao:<id>` option. Two
agent ids belong to one catalogue when some turn names both; a catalogue is a connected component of
that relation, named by its agent ids sorted and joined with "+"; a turn naming no agent is a
catalogue of its own (its group_id). So no agent id a held-out turn names is named by a turn fitted
on. **Folds.** Each author's turns go whole to one fold, joined with every other author's that share a
catalogue with them (`_joined`); with fewer authors than folds (a file is one author unless
RunConfig.authors says otherwise), each catalogue goes whole. The units are shuffled
(random.Random(seed)), sorted by turn count, largest first (stable), and each goes whole to the fold with
the fewest turns so far."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

from adri_pipeline.jev.examples import CanonicalExample
from adri_pipeline.jev.serialize import to_request
from adri_pipeline.progress import note
from adri_pipeline.routing.candidates import Candidate, Logits, make_candidate
from adri_pipeline.routing.datasets import Dataset

TASK = "D2"  # the task whose catalogue changes from one deployment to the next
SEED = 56
NEW_CATALOGUES = "the hand-written turns, catalogues never fitted on"  # how thresholds.Bound names them


def agents_of(example: CanonicalExample) -> set[str]:
    """Every agent id a turn names: active, suspended, its recent turns', its `retomar_sessao:<id>` options."""
    state = example.state
    named = {state.active_agent, *state.suspended_sessions, *(t.agent_id for t in state.recent_turns)}
    named |= {o.partition(":")[2] for o in example.options if o.startswith("retomar_sessao:")}
    return {a for a in named if a}


def _root(parent: dict[str, str], node: str) -> str:
    """The representative of `node`'s connected component in a union-find forest (`parent`), halving the path."""
    while parent.setdefault(node, node) != node:
        parent[node] = parent[parent[node]]
        node = parent[node]
    return node


def catalogues(examples: list[CanonicalExample]) -> dict[str, str]:
    """Example id -> its catalogue: the connected component of its agent ids (module docstring)."""
    parent: dict[str, str] = {}
    for example in examples:
        first, *rest = sorted(agents_of(example)) or [""]
        for agent in [first, *rest] if first else []:
            parent[_root(parent, agent)] = _root(parent, first)
    members: dict[str, set[str]] = {}
    for agent in list(parent):
        members.setdefault(_root(parent, agent), set()).add(agent)
    name = {top: "+".join(sorted(agents)) for top, agents in members.items()}
    return {e.id: name[_root(parent, min(agents_of(e)))] if agents_of(e) else e.group_id for e in examples}


def folds(catalogue_of: dict[str, str], k: int, seed: int = SEED) -> dict[str, int]:
    """Catalogue -> fold in range(k): shuffled, largest first, each whole to the fold with fewest turns."""
    sizes: dict[str, int] = {}
    for catalogue in catalogue_of.values():
        sizes[catalogue] = sizes.get(catalogue, 0) + 1
    order = sorted(sizes)
    random.Random(seed).shuffle(order)
    order.sort(key=sizes.get, reverse=True)
    load, fold_of = [0] * k, {}
    for catalogue in order:
        fold = min(range(k), key=lambda f: (load[f], f))
        fold_of[catalogue], load[fold] = fold, load[fold] + sizes[catalogue]
    return fold_of


@dataclass
class HeldOutAnswers:
    """The hand-written D2 turns in the fit, each with the logits of a candidate that never fitted on its
    author's turns (or, with fewer authors than folds, on its catalogue)."""

    examples: list[CanonicalExample]
    logits: list[Logits]
    catalogues: int
    folds: int  # 0: the candidate learns nothing from dev, so it answered them as it is
    seconds: float
    # example id -> its author, when the folds held out whole authors (`authors_held_out`); empty: by catalogue
    author_of: dict[str, str] = field(default_factory=dict)

    def statement(self) -> str:
        authors = len(set(self.author_of.values()))
        by = f"{authors} authors, cross-fitted in {self.folds} folds by author" if authors else None
        how = (
            (by or f"cross-fitted in {self.folds} folds by catalogue") if self.folds else "the candidate learns no turn"
        )
        return f"{len(self.examples)} hand-written turns over {self.catalogues} catalogues never fitted on ({how})"


def team_turns(dataset: Dataset) -> list[CanonicalExample]:
    """The D2 turns that joined dev from RunConfig.extra_training."""
    return [e for e in dataset.in_split("dev") if e.task == TASK and e.id in dataset.fit_weight]


def authors_held_out(turns: list[CanonicalExample], author_of: dict[str, str], k: int) -> dict[str, str]:
    """Example id -> its author, when every turn has one and they are at least k authors (the folds then hold
    out whole authors); else empty (whole catalogues). A new team's catalogue comes with a new author's
    conventions, and a turn answered by a fit that learned its author's other catalogues looked surer than a
    new author's turns bear out (module docstring)."""
    authors = {e.id: author_of[e.id] for e in turns if e.id in author_of}
    return authors if len(authors) == len(turns) and len(set(authors.values())) >= k else {}


def _joined(author_of: dict[str, str], catalogue_of: dict[str, str]) -> dict[str, str]:
    """Example id -> its author's turns joined with every other author's that share a catalogue with them
    (agent ids named by two authors' turns): held out together, no agent id a held-out turn names is fitted on."""
    parent: dict[str, str] = {}
    for example_id, author in author_of.items():
        parent[_root(parent, f"catalogue {catalogue_of[example_id]}")] = _root(parent, f"author {author}")
    return {example_id: _root(parent, f"author {author}") for example_id, author in author_of.items()}


def fold_units(turns: list[CanonicalExample], author_of: dict[str, str], k: int) -> tuple[dict, dict]:
    """(example id -> what its fold holds out whole, example id -> its author): whole authors, joined where
    their turns share a catalogue (`_joined`), when they make at least k units (a fold of no turns would fit
    once more for nothing); else whole catalogues, and no author."""
    catalogue_of, by_author = catalogues(turns), authors_held_out(turns, author_of, k)
    joined = _joined(by_author, catalogue_of) if by_author else {}
    return (joined, by_author) if len(set(joined.values())) >= k else (catalogue_of, {})


def held_out_answers(
    fitted: Candidate, dataset: Dataset, k: int, fit, encoder=None, settings=None
) -> HeldOutAnswers | None:
    """The hand-written D2 turns in the fit answered by candidates that never saw their author (`authors_held_out`);
    None without such turns, with k < 2, or when the catalogues are fewer than k. `fitted`: the candidate fitted
    on all of dev (it answers them itself when it learns nothing from dev); `fit(candidate, dev)` fits a fresh
    one as run.prepare fits (the same weights), for each fold's dev without that fold's turns."""
    turns = team_turns(dataset)
    catalogue_of = catalogues(turns)
    if k < 2 or len(set(catalogue_of.values())) < k:
        return None
    started = time.perf_counter()
    requests = {e.id: to_request(e) for e in turns}
    if not fitted.kind.trains or fitted.source_only:
        answers = {}
        for e in turns:
            fitted.begin_decision()
            answers[e.id] = fitted.logits(fitted.fitted(requests[e.id]))
        return HeldOutAnswers(turns, [answers[e.id] for e in turns], len(set(catalogue_of.values())), 0, 0.0)
    held_out_unit, by_author = fold_units(turns, dataset.author_of, k)
    unseen = "authors" if by_author else "catalogues"
    fold_of = folds(held_out_unit, k)
    answers: dict[str, Logits] = {}
    for fold in range(k):
        held = {e.id for e in turns if fold_of[held_out_unit[e.id]] == fold}
        note(f"{fitted.name}: fold {fold + 1} of {k}, fitted without {len(held)} hand-written turns, unseen {unseen}")
        candidate = make_candidate(fitted.name, encoder, settings)
        fit(candidate, [e for e in dataset.in_split("dev") if e.id not in held])
        for example_id in held:
            candidate.begin_decision()
            answers[example_id] = candidate.logits(candidate.fitted(requests[example_id]))
    seconds = time.perf_counter() - started
    return HeldOutAnswers(turns, [answers[e.id] for e in turns], len(set(catalogue_of.values())), k, seconds, by_author)
