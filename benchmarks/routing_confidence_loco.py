"""Does a routing confidence rank on catalogues never fitted on? (issue 56) A leave-one-catalogue-out
measurement on the hand-written D2 turns every fit learns from (protocol.TEAM_TRAINING, **synthetic**:
the project engineer's 293 in data/routing/handwritten_d2.jsonl and team_d2_2026-12-0{2,3,4}.jsonl, and
the outside authors' sealed sets already opened and data/routing/outside_authors/, 120 each);
`--by-author` leaves one author out instead, and also prints D2's threshold and prediction sets certified on the
other authors, on each author left out (`certified_per_author`, `sets_per_author`).

**Catalogues and folds** as routing/new_catalogues.py makes them (the product cross-fits D2's
confidence the same way). On the four team files this gives 31 catalogues; where a turn carries
`metadata.catalogue` (the team_d2 files and the sealed sets) the
components are exactly those labels, and handwritten_d2.jsonl's 40 turns form one catalogue of the
sample's own home agents (aspirador, casa, clima, jardim, listas, midia, timers).

For each of K = 5 folds, every candidate is fitted as `adri routing evaluate --dataset SOURCE --runs 0
--extra-training FILE --test FILE` fits it (datasets.build with RunConfig.extra_training = the other
folds' turns, datasets.with_external_test, run.prepare: fit on dev, temperature and familiarity on
the source's calibration split) and answers the held-out fold's turns once (run.answer_test).

**Signals** (each comes with an answer, whose accuracy is reported): per candidate its wire
confidence ((max p - 1/n) / (1 - 1/n), what the thresholds read now), its calibrated max p, the margin
max p - runner-up, its native max p (T = 1, before the familiarity blend), the message's familiarity
(cosine to the nearest fit message, calibration.Familiarity), and the option-text gap: the cosine of
the message to the chosen option's text minus the best other option's, with the candidate's own
encoder (session options: the text embedded.py's session model compares, agent + description +
exchanges; the new-agent and ask options: their description); then the ensemble (mean of the two
logreg candidates' calibrated probabilities: its max and margin) and agreement (1 when they answer
alike, plus the ensemble's max p to order within each group; with the zero-shot candidate, all three).
Starred (*): signals added after the first run (2026-12-06) showed the native max p ranking better than
the calibrated one: each candidate's native margin, and the logreg pair's ensemble of native
probabilities; and, to tell the temperature from the familiarity blend, each candidate's max p at its
calibration temperature before the blend. Chosen after seeing data: leads to confirm on turns not yet read.

Pooled over folds, per signal: accuracy, the share wrong among its 20/40/60/80/100 % most confident
(jev/metrics.risk_at_coverage), AURC (jev/metrics.aurc), and a 95 % interval of the share wrong at 40 %
resampling whole catalogues (jev/metrics.bootstrap_interval). Twice: on the catalogues sharing no
agent id with the source (the headline: catalogues never fitted on) and on all turns.

    .venv/bin/python benchmarks/routing_confidence_loco.py [--source sample] [--folds 5] [--seed 56]
        [--candidates embedded-logreg,static-logreg,embedded-zeroshot] [--vectors DIR] [--out FILE] [--smoke]
        [--by-author]

`--smoke`: two folds, static-logreg alone, 50 resamples (seconds; the figures mean nothing).
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adri_pipeline.jev import metrics  # noqa: E402
from adri_pipeline.jev.contract import descriptions_of  # noqa: E402
from adri_pipeline.jev.examples import CanonicalExample  # noqa: E402
from adri_pipeline.jev.serialize import parse_state, to_request  # noqa: E402
from adri_pipeline.routing.candidates import kind_of, softmax  # noqa: E402
from adri_pipeline.routing.canonical import located_canonical  # noqa: E402
from adri_pipeline.routing.datasets import build, with_external_test  # noqa: E402
from adri_pipeline.routing.embedded import _session_texts  # noqa: E402
from adri_pipeline.routing.new_catalogues import SEED, agents_of, catalogues, folds  # noqa: E402
from adri_pipeline.routing.protocol import TEAM_AUTHORS, TEAM_TRAINING, RunConfig  # noqa: E402
from adri_pipeline.routing.run import answer_test, prepare  # noqa: E402
from adri_pipeline.routing.thresholds import learn_then_test, per_group  # noqa: E402

COVERAGES = (0.2, 0.4, 0.6, 0.8, 1.0)
CANDIDATES = ("embedded-logreg", "static-logreg", "embedded-zeroshot")
LOGREGS = ("embedded-logreg", "static-logreg")


def team_turns() -> list[CanonicalExample]:
    """The team's D2 turns, read as every fit reads them (located_canonical: adjudicated gold)."""
    return [e for path in TEAM_TRAINING for e in located_canonical(Path(path)).examples if e.task == "D2"]


def author_of(path: str) -> str:
    """Who wrote a TEAM_TRAINING file, as every fit reads it (RunConfig.authors: the project's engineer wrote
    four; any other file is its own author)."""
    return TEAM_AUTHORS.get(path, Path(path).name)


def fold_by_author(turns: list[CanonicalExample]) -> dict[str, int]:
    """Example id -> fold, one fold per author (leave-one-author-out): a new author's conventions, not only
    a new catalogue, are what the held-out fold tests. Folds follow authors, not catalogues: the nine
    catalogues the engineer's files share agent ids with the first outsider's set are on both sides of
    those two folds."""
    authors = list(dict.fromkeys(author_of(path) for path in TEAM_TRAINING))
    fold = {
        e.id: authors.index(author_of(path))
        for path in TEAM_TRAINING
        for e in located_canonical(Path(path)).examples
        if e.task == "D2"
    }
    return {e.id: fold[e.id] for e in turns}


# one fold -------------------------------------------------------------------------------------------
def write_turns(path: Path, examples: list[CanonicalExample]) -> Path:
    path.write_text("".join(e.model_dump_json() + "\n" for e in examples), encoding="utf-8")
    return path


def fold_dataset(source: str, train: Path, test: Path):
    """(config, dataset whose test split is the held-out turns, the source's own D2 agent ids)."""
    config = RunConfig(dataset=source, runs=0, extra_training=[str(train)])
    dataset = build(config, None)  # no record beside a warehouse: nothing here is frozen
    own = [e for e in dataset.examples if e.task == "D2" and e.id not in dataset.fit_weight]
    source_agents = set().union(*(agents_of(e) for e in own)) if own else set()
    return config, with_external_test(dataset, located_canonical(test), "", None, config.redact_names), source_agents


def option_gap(encoder, example: CanonicalExample, answer: str) -> float:
    """Cosine of the message to the chosen option's text minus the best other option's (module docstring)."""
    request = to_request(example)
    state = parse_state(request["state"])
    criteria = descriptions_of(request["questions"][example.task])
    texts = {**criteria, **_session_texts(state, criteria)}
    similarity = dict(zip(texts, (encoder(list(texts.values())) @ encoder.message(state["message"])).tolist()))
    return similarity.get(answer, 0.0) - max((v for o, v in similarity.items() if o != answer), default=0.0)


def unblended(calibrated, example: CanonicalExample) -> dict[str, dict[str, float]]:
    """The candidate's own probabilities, as Calibrated.respond starts from them: native (T = 1) and tempered
    (its calibration temperature), both before the familiarity blend."""
    candidate = calibrated.candidate
    candidate.begin_decision()
    logits = candidate.logits(candidate.fitted(to_request(example)))[example.task]
    return {
        "native_probabilities": softmax(logits),
        "tempered_probabilities": softmax(logits, calibrated.temperature.get(example.task, 1.0)),
    }


def answer_fold(name: str, dataset, config, encoder) -> tuple[dict[str, dict], dict[str, float]]:
    """The candidate fitted for this fold and its answers to the held-out turns: per example id, its answer,
    probabilities and signals; and the seconds its fit and its answers took."""
    calibrated, fit_seconds = prepare(name, dataset, config, encoder if kind_of(name).embeds else None)
    started = time.perf_counter()
    held = dataset.in_split("test")
    rows, _, _ = answer_test(calibrated, {}, held, f"{name}: answering the held-out catalogues")
    by_id = {e.id: e for e in held}
    answers = {
        row["example_id"]: {
            "answer": row["answer"],
            "probabilities": json.loads(row["probabilities"]),
            "confidence": row["confidence"],
            "native_confidence": row["native_confidence"],
            "familiarity": row["familiarity"],
            "option_gap": option_gap(calibrated.candidate.encoder, by_id[row["example_id"]], row["answer"]),
            **unblended(calibrated, by_id[row["example_id"]]),
        }
        for row in rows.iter_rows(named=True)
    }
    if encoder is not None:
        encoder.keep_vectors()
    return answers, {"fit_s": round(fit_seconds, 1), "answer_s": round(time.perf_counter() - started, 1)}


def run_folds(source: str, k: int, seed: int, candidates: list[str], encoder, folder: Path, by_author=False) -> dict:
    """Every fold fitted and answered, one candidate at a time: the per-turn records and what it took."""
    turns = team_turns()
    catalogue_of = catalogues(turns)
    fold_of = folds(catalogue_of, k, seed)
    fold_of_turn = fold_by_author(turns) if by_author else {e.id: fold_of[catalogue_of[e.id]] for e in turns}
    if by_author:
        k, fold_of = len(set(fold_of_turn.values())), {catalogue_of[i]: f for i, f in fold_of_turn.items()}
    records, timings, source_agents = [], {}, set()
    for fold in range(k):
        held = [e for e in turns if fold_of_turn[e.id] == fold]
        fit = [e for e in turns if fold_of_turn[e.id] != fold]
        train, test = (
            write_turns(folder / f"loco-{part}-{fold}.jsonl", part_turns)
            for part, part_turns in (("train", fit), ("test", held))
        )
        config, dataset, source_agents = fold_dataset(source, train, test)
        answered, timings[fold] = {}, {}
        for name in candidates:
            answered[name], timings[fold][name] = answer_fold(name, dataset, config, encoder)
            print(f"fold {fold}: {name} {timings[fold][name]}", file=sys.stderr, flush=True)
        records += [
            {
                "id": e.id,
                "catalogue": catalogue_of[e.id],
                "fold": fold,
                "gold": str(e.gold_label),
                "n_options": len(e.options),
                "candidates": {name: answered[name][e.id] for name in candidates},
            }
            for e in held
        ]
    for record in records:  # "never fitted on": no agent id of its catalogue is one of the source's
        record["new_catalogue"] = not (set(record["catalogue"].split("+")) & source_agents)
    return {"records": records, "timings": timings, "fold_of": fold_of, "source_agents": sorted(source_agents)}


# signals --------------------------------------------------------------------------------------------
def _top_two(probabilities: dict[str, float]) -> tuple[str, float, float]:
    ranked = sorted(probabilities.items(), key=lambda item: -item[1])
    return ranked[0][0], ranked[0][1], ranked[0][1] - (ranked[1][1] if len(ranked) > 1 else 0.0)


def _mean(record: dict, names, key: str = "probabilities") -> dict[str, float]:
    options = record["candidates"][names[0]][key]
    return {o: float(np.mean([record["candidates"][n][key].get(o, 0.0) for n in names])) for o in options}


def candidate_signals(name: str) -> dict:
    """Label -> (answer, confidence) of one record, for one candidate's own signals."""

    def own(record):
        return record["candidates"][name]

    return {
        f"{name}: wire confidence": lambda r: (own(r)["answer"], own(r)["confidence"]),
        f"{name}: max p": lambda r: (own(r)["answer"], max(own(r)["probabilities"].values())),
        f"{name}: margin": lambda r: (own(r)["answer"], _top_two(own(r)["probabilities"])[2]),
        f"{name}: native max p (T=1)": lambda r: (own(r)["answer"], own(r)["native_confidence"]),
        f"{name}: native margin (T=1)*": lambda r: (own(r)["answer"], _top_two(own(r)["native_probabilities"])[2]),
        f"{name}: tempered max p, no blend*": lambda r: (
            own(r)["answer"],
            max(own(r)["tempered_probabilities"].values()),
        ),
        f"{name}: message familiarity": lambda r: (own(r)["answer"], own(r)["familiarity"]),
        f"{name}: option-text gap": lambda r: (own(r)["answer"], own(r)["option_gap"]),
    }


def signals(candidates: list[str]) -> dict:
    """Every signal the candidates run allow: each candidate's, then the logreg pair's ensemble and agreement."""
    found = {label: fn for name in candidates for label, fn in candidate_signals(name).items()}
    if not all(n in candidates for n in LOGREGS):
        return found
    pair = list(LOGREGS)

    def agree(record, names) -> float:
        return float(len({record["candidates"][n]["answer"] for n in names}) == 1)

    found["ensemble E+S: max p"] = lambda r: _top_two(_mean(r, pair))[:2]
    found["ensemble E+S: margin"] = lambda r: _top_two(_mean(r, pair))[::2]
    found["ensemble E+S native (T=1)*: max p"] = lambda r: _top_two(_mean(r, pair, "native_probabilities"))[:2]
    found["ensemble E+S native (T=1)*: margin"] = lambda r: _top_two(_mean(r, pair, "native_probabilities"))[::2]
    found["agreement E=S, then ensemble max p"] = lambda r: (
        _top_two(_mean(r, pair))[0],
        agree(r, pair) + _top_two(_mean(r, pair))[1],
    )
    if "embedded-zeroshot" in candidates:
        trio = [*pair, "embedded-zeroshot"]
        found["agreement E=S=Z, then ensemble E+S max p"] = lambda r: (
            _top_two(_mean(r, pair))[0],
            agree(r, trio) + _top_two(_mean(r, pair))[1],
        )
        found["ensemble E+S+Z: max p"] = lambda r: _top_two(_mean(r, trio))[:2]
    return found


def figures(records: list[dict], signal, resamples: int, seed: int) -> dict:
    """Accuracy, share wrong at each coverage, AURC and a catalogue-resampled interval of the share at 40 %."""
    answered = [signal(r) for r in records]
    correct = np.array([answer == r["gold"] for r, (answer, _) in zip(records, answered)], float)
    confidence = np.array([c if c is not None else -np.inf for _, c in answered], float)
    by_catalogue: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        by_catalogue.setdefault(r["catalogue"], []).append(i)
    groups = list(by_catalogue.values())

    def at_40(drawn: np.ndarray) -> float:
        kept = [i for g in drawn for i in groups[g]]
        return metrics.risk_at_coverage(correct[kept], confidence[kept], 0.4)

    interval = metrics.bootstrap_interval(at_40, len(groups), np.random.default_rng(seed), resamples)
    return {
        "n": len(records),
        "catalogues": len(groups),
        "accuracy": float(correct.mean()) if len(correct) else float("nan"),
        **{f"wrong_at_{c:.0%}": metrics.risk_at_coverage(correct, confidence, c) for c in COVERAGES},
        "aurc": metrics.aurc(correct, confidence),
        "wrong_at_40%_interval": list(interval) if isinstance(interval, tuple) else str(interval),
    }


def certified_per_author(records: list[dict], name: str, alpha: float = 0.05, delta: float = 0.10) -> dict:
    """`--by-author`: for each author left out, D2's threshold certified on the other authors' held-out answers
    (the candidate's wire confidence) by each rule, and on the author's own turns the share it answers and the
    share of all it answers wrongly. Rules (routing/thresholds.py): per author (what the product certifies
    since 2026-12-07), per catalogue (before), Learn then Test turn by turn."""
    rules = {
        "per author": lambda c, p, r: per_group(c, p, [x["fold"] for x in r], alpha, delta),
        "per catalogue": lambda c, p, r: per_group(c, p, [x["catalogue"] for x in r], alpha, delta),
        "turn by turn": lambda c, p, r: learn_then_test(c, p, alpha, delta).threshold,
    }

    def arrays(rows):
        answers = [x["candidates"][name] for x in rows]
        return np.array([a["answer"] == x["gold"] for a, x in zip(answers, rows)]), np.array(
            [a["confidence"] for a in answers], float
        )

    found: dict[str, list] = {rule: [] for rule in rules}
    for fold in sorted({r["fold"] for r in records}):
        others, own = [r for r in records if r["fold"] != fold], [r for r in records if r["fold"] == fold]
        (correct, confidence), (own_correct, own_confidence) = arrays(others), arrays(own)
        for rule, certify in rules.items():
            threshold = certify(correct, confidence, others)
            answered = own_confidence >= (np.inf if threshold is None else threshold)
            found[rule].append((len(own), float(answered.mean()), float((answered & ~own_correct).mean())))
    return found


def certified_table(found: dict[str, dict], alpha: float = 0.05) -> list[str]:
    lines = [
        "### D2's threshold certified on the other authors, on each author left out",
        "",
        "| candidate | rule | answered (all turns) | answered, per author | wrong of all (all turns) | "
        f"wrong of all, worst author | authors above {alpha:.0%} |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, rules in found.items():
        for rule, rows in rules.items():
            n, answered, wrong = (np.array(column) for column in zip(*rows))
            above = f"{int((wrong > alpha).sum())} of {len(n)}"
            lines.append(
                f"| {name} | {rule} | {np.average(answered, weights=n):.1%} | {answered.min():.0%}–{answered.max():.0%}"
                f" | {np.average(wrong, weights=n):.1%} | {wrong.max():.1%} | {above} |"
            )
    return lines + [""]


def sets_per_author(records: list[dict], name: str, config: RunConfig | None = None, delta: float = 0.10) -> dict:
    """`--by-author`: for each author left out, D2's prediction-set quantile (LAC, jev/metrics.py) from the
    other authors' held-out answers (the candidate's wire probabilities), and on the author's own turns the
    sets' coverage and how often the question would be asked. Rules: pooled over the turns (before: coverage
    on average over turns, so over authors), and per author (what the product states: each author's own
    quantile at the stated coverage, then the split-conformal quantile of those over authors at 1 - delta,
    jev/metrics.conformal_quantile_per_group: a statement for one new author's catalogue)."""

    def gold_probabilities(rows) -> list[float]:
        return [x["candidates"][name]["probabilities"].get(x["gold"], 0.0) for x in rows]

    def per_author(others) -> float:
        return metrics.conformal_quantile_per_group(
            gold_probabilities(others), [r["fold"] for r in others], alpha, delta
        )

    config = config or RunConfig()
    alpha = 1 - config.set_coverage
    rules = {"pooled over turns": lambda others: metrics.conformal_quantile(gold_probabilities(others), alpha)}
    rules["per author"] = per_author
    found: dict[str, list] = {rule: [] for rule in rules}
    for fold in sorted({r["fold"] for r in records}):
        others, own = [r for r in records if r["fold"] != fold], [r for r in records if r["fold"] == fold]
        for rule, quantile_of in rules.items():
            quantile = quantile_of(others)
            sets = [metrics.conformal_set(x["candidates"][name]["probabilities"], quantile) for x in own]
            covered = np.mean([x["gold"] in chosen for x, chosen in zip(own, sets)])
            asked = np.mean([2 <= len(chosen) <= config.question_max_options for chosen in sets])
            found[rule].append((len(own), float(covered), float(asked)))
    return found


def sets_table(found: dict[str, dict], coverage: float = RunConfig.set_coverage) -> list[str]:
    lines = [
        f"### D2's sets ({coverage:.0%} stated) from the other authors, on each author left out",
        "",
        f"| candidate | rule | coverage (all turns) | coverage, worst author | authors below {coverage:.0%} | asked |",
        "|---|---|---|---|---|---|",
    ]
    for name, rules in found.items():
        for rule, rows in rules.items():
            n, covered, asked = (np.array(column) for column in zip(*rows))
            lines.append(
                f"| {name} | {rule} | {np.average(covered, weights=n):.1%} | {covered.min():.1%} | "
                f"{int((covered < coverage).sum())} of {len(n)} | {np.average(asked, weights=n):.1%} |"
            )
    return lines + [""]


# report ---------------------------------------------------------------------------------------------
def table(title: str, rows: dict[str, dict]) -> list[str]:
    def pct(value) -> str:
        return "—" if value != value else f"{value:.0%}"

    def interval(value) -> str:
        return f"[{value[0]:.0%}, {value[1]:.0%}]" if isinstance(value, list) else value

    lines = [
        f"### {title}",
        "",
        "| signal | accuracy | " + " | ".join(f"wrong at {c:.0%}" for c in COVERAGES) + " | 95 % interval at 40 % "
        "(catalogues resampled) | AURC | n |",
        "|---" * (5 + len(COVERAGES)) + "|",
    ]
    lines += [
        f"| {label} | {pct(f['accuracy'])} | "
        + " | ".join(pct(f[f"wrong_at_{c:.0%}"]) for c in COVERAGES)
        + f" | {interval(f['wrong_at_40%_interval'])} | {f['aurc']:.3f} | {f['n']} |"
        for label, f in rows.items()
    ]
    return lines + [""]


def parsed(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default="sample", help="the built-in source fitted on (sample, ha-pt-BR, sgd)")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--candidates", default=",".join(CANDIDATES))
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--vectors", default=None, help="the vector cache folder (default: ADRI_VECTOR_CACHE's)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--smoke", action="store_true", help="two folds, static-logreg alone, 50 resamples")
    parser.add_argument("--by-author", action="store_true", help="one fold per author instead of --folds")
    args = parser.parse_args(argv)
    if args.smoke:
        args.folds, args.candidates, args.resamples = 2, "static-logreg", 50
    args.candidates = [c.strip() for c in args.candidates.split(",") if c.strip()]
    if args.vectors is None:
        from adri_pipeline.config import Settings

        args.vectors = Settings.load().vector_cache
    args.out = args.out or Path(tempfile.gettempdir()) / f"routing_confidence_loco-{args.source}-k{args.folds}.json"
    return args


def summary(run: dict, candidates: list[str], resamples: int, seed: int) -> dict:
    """Per subset (catalogues never fitted on; all turns), per signal, its figures."""
    subsets = {
        "catalogues sharing no agent with the source": [r for r in run["records"] if r["new_catalogue"]],
        "all team turns": run["records"],
    }
    return {
        subset: {label: figures(records, fn, resamples, seed) for label, fn in signals(candidates).items()}
        for subset, records in subsets.items()
        if records
    }


def main(argv: list[str] | None = None) -> None:
    from adri_pipeline.routing.encoder import Encoder, VectorFile

    args = parsed(sys.argv[1:] if argv is None else argv)
    started = time.perf_counter()
    embeds = any(kind_of(c).embeds for c in args.candidates)
    encoder = Encoder(VectorFile.in_folder(args.vectors)) if embeds else None
    with tempfile.TemporaryDirectory() as folder:
        run = run_folds(args.source, args.folds, args.seed, args.candidates, encoder, Path(folder), args.by_author)
    args.folds = len(run["timings"])
    results = summary(run, args.candidates, args.resamples, args.seed)
    fold_turns = {f: sum(r["fold"] == f for r in run["records"]) for f in range(args.folds)}
    fold_catalogues = {f: sum(v == f for v in run["fold_of"].values()) for f in range(args.folds)}
    elapsed = round(time.perf_counter() - started, 1)
    folding = "one fold per author" if args.by_author else "folds by catalogue"
    print(
        f"## Held-out confidence ranking: source {args.source}, {args.folds} folds (seed {args.seed}), "
        f"{len(run['records'])} synthetic hand-written turns ({folding}) over "
        f"{len(run['fold_of'])} catalogues; turns per fold {fold_turns}, catalogues per fold {fold_catalogues}; "
        f"{elapsed} s\n"
    )
    for subset, rows in results.items():
        print("\n".join(table(subset, rows)))
    certified = {name: certified_per_author(run["records"], name) for name in args.candidates} if args.by_author else {}
    sets = {name: sets_per_author(run["records"], name) for name in args.candidates} if args.by_author else {}
    if certified:
        print("\n".join(certified_table(certified) + sets_table(sets)))
    print("seconds per fold and candidate:", json.dumps(run["timings"]))
    report = {
        "source": args.source,
        "folds": args.folds,
        "seed": args.seed,
        "candidates": args.candidates,
        "turns_per_fold": fold_turns,
        "catalogues_per_fold": fold_catalogues,
        "elapsed_s": elapsed,
        **run,
        "signals": results,
        "certified_per_author": certified,
        "sets_per_author": sets,
    }
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False, default=float) + "\n", encoding="utf-8")
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
