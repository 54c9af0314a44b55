"""Error causes and the D4 slice as routing/evaluation.py reports them."""

import pytest


def test_error_causes_follow_the_jev_designs_list():
    from adri_pipeline.jev.examples import CanonicalExample, Metadata, State
    from adri_pipeline.routing.canonical import load_canonical  # noqa: F401 (the canonical shape)
    from adri_pipeline.routing.evaluation import error_cause

    def example(**metadata):
        return CanonicalExample(
            id="x",
            group_id="g",
            task="D2",
            state=State(active_agent="a"),
            utterance="sim",
            question="?",
            question_type="choice",
            options={"continuar_agente_ativo": "c", "desambiguar": "d"},
            gold_label="continuar_agente_ativo",
            metadata=Metadata(**metadata),
        )

    assert error_cause(example(), "transferir") == "instrucao"
    assert error_cause(example(ambiguity="alta"), "desambiguar") == "ambiguidade"
    assert error_cause(example(adversarial=["curta_dependente_de_contexto"]), "desambiguar") == "contexto_insuficiente"
    assert error_cause(example(adversarial=["abreviacao"]), "desambiguar") == "linguagem"
    assert error_cause(example(adversarial=["regionalismo"]), "desambiguar") == "linguagem"
    assert error_cause(example(), "desambiguar") == "modelo"
    # the design's first cause, "taxonomia", was missing: an annotator gave the answer, or the two options
    # are described alike, so the categories do not tell them apart
    overlapping = example().model_copy(update={"annotator_labels": ["continuar_agente_ativo", "desambiguar"]})
    assert error_cause(overlapping, "desambiguar") == "taxonomia"
    alike = example().model_copy(
        update={"options": {"continuar_agente_ativo": "Seguir  com o agente", "desambiguar": "seguir com o agente"}}
    )
    assert error_cause(alike, "desambiguar") == "taxonomia"


def _six_d4_sets_timed():
    """Six D4 examples, every other one synthetic, answered by a run that got the first five sets right
    and the last half right, the sets timed at 10, 20 ... 60 ms. (examples, run)"""
    import polars as pl

    from adri_pipeline.jev.examples import CanonicalExample, Metadata, State
    from adri_pipeline.routing.performance import Measured
    from adri_pipeline.routing.run import CandidateRun

    def d4(i: int) -> CanonicalExample:
        return CanonicalExample(
            id=f"d4-{i}",
            group_id=f"g{i}",
            task="D4",
            state=State(),
            utterance=f"liga e toca {i}",
            question="?",
            question_type="noul",
            options={"a": "liga", "b": "toca", "c": "x"},
            gold_label=["a", "b"],
            metadata=Metadata(synthetic=i % 2 == 0),
        )

    examples = [d4(i) for i in range(6)]
    frame = pl.DataFrame(
        [
            {
                "example_id": e.id,
                "task": "D4",
                "split": "test",
                "answer": "a|b" if i < 5 else "a",
                "gold": "a|b",
                "confidence": 0.8,
                "valid": True,
                "correct": i < 5,
                "probabilities": "{}",
                "threshold": 0.5,
            }
            for i, e in enumerate(examples)
        ]
    )
    latency = {e.id: [0.010 * (i + 1), 0.010 * (i + 1)] for i, e in enumerate(examples)}  # 10, 20 ... 60 ms
    return examples, CandidateRun("embedded-zeroshot", frame, {"D4": 0.5}, {}, 0.0, Measured([], 0, latency))


def test_d4_reports_its_total_cost_and_every_figure_comes_synthetic_and_real_apart():
    """The JEV design: D4's metric is set F1 "e custo total, que soma as latências"; synthetic and real
    data "são reportados em separado" (they were apart for accuracy only)."""
    from adri_pipeline.prices import PriceTable
    from adri_pipeline.routing.datasets import Dataset
    from adri_pipeline.routing.evaluation import evaluate
    from adri_pipeline.routing.protocol import RunConfig

    examples, run = _six_d4_sets_timed()
    config = RunConfig(runs=0)
    result = evaluate(run, Dataset(examples, {e.id: "test" for e in examples}, "h"), config)
    cost = result.tasks["D4"].set_cost
    hourly = PriceTable.read().hourly("embedded-zeroshot")
    assert cost.sets_timed == 6 and cost.total_latency_s == pytest.approx(0.21)
    assert cost.latency_per_set_ms == pytest.approx(35.0)
    assert cost.total_cost_usd == pytest.approx(0.21 * hourly / 3600)
    origin = result.by_origin
    assert origin["synthetic"]["D4"].n == origin["real"]["D4"].n == 3
    assert origin["synthetic"]["D4"].set_f1 == pytest.approx(1.0)  # d4-0, 2, 4 right; d4-5 half
    assert origin["real"]["D4"].accuracy == pytest.approx(2 / 3) and 0 <= origin["real"]["D4"].ece <= 1


def test_a_d4_decision_with_one_intent_is_reported_apart():
    """The JEV design applies D4 only to messages annotated with two or more intents."""
    import polars as pl

    from adri_pipeline.routing.evaluation import ONE_INTENT_D4, multi_intent_d4_apart

    frame = pl.DataFrame({"task": ["D4", "D4", "D4", "D1"], "gold": ["a|b", "a", "", "x|y"]})
    assert multi_intent_d4_apart(frame)["task"].to_list() == ["D4", ONE_INTENT_D4, ONE_INTENT_D4, "D1"]


def test_a_prediction_set_of_one_is_answered_two_or_three_asked_and_the_rest_abstained():
    from adri_pipeline.routing.evaluation import prediction_sets
    from adri_pipeline.routing.protocol import RunConfig

    probabilities = [
        {"a": 0.9, "b": 0.05, "c": 0.03, "d": 0.02},  # {a}: answered, right
        {"a": 0.5, "b": 0.45, "c": 0.03, "d": 0.02},  # {a, b}: asked, covered
        {"a": 0.3, "b": 0.3, "c": 0.3, "d": 0.1},  # {a, b, c}: asked, not covered (gold d)
        {"a": 0.25, "b": 0.25, "c": 0.25, "d": 0.25},  # all four: more than 3, abstained
        {"a": 0.8, "b": 0.1, "c": 0.05, "d": 0.05},
    ]  # {a}: answered, wrong
    figures = prediction_sets(probabilities, ["a", "b", "d", "c", "b"], 0.8, RunConfig())  # p >= 0.2
    assert figures["answered"] == pytest.approx(0.4) and figures["answered_accuracy"] == pytest.approx(0.5)
    assert figures["asked"] == pytest.approx(0.4) and figures["abstained"] == pytest.approx(0.2)
    assert figures["coverage"] == pytest.approx(0.6) and figures["mean_size"] == pytest.approx(11 / 5)
    assert figures["stated_coverage"] == 0.90


def test_a_threshold_that_answers_nothing_out_of_source_is_called_safe_but_mute():
    from adri_pipeline.routing.results import TaskFigures, mute
    from adri_pipeline.routing.risk_coverage import verdict

    def figures(coverage):
        return TaskFigures(
            n=10,
            accuracy=0.6,
            majority_baseline_accuracy=0.4,
            high_confidence_wrong_rate=0.0,
            high_confidence_wrong_rate_fixed=0.0,
            ece=0.1,
            mce=0.2,
            aurc=0.3,
            coverage_at_threshold=coverage,
            selective_accuracy_at_threshold=float("nan"),
            reliability=[],
        )

    out_of_source = {"file-a": {"D2": figures(0.0)}, "file-b": {"D2": figures(0.3)}}
    assert mute(out_of_source) == ["file-a/D2"]
    line = verdict("x", {"D2": figures(0.5)}, out_of_source)
    assert "safe but mute" in line and "file-a/D2" in line and "file-b" not in line
    assert "safe but mute" not in verdict("x", {"D2": figures(0.5)}, {"file-b": {"D2": figures(0.3)}})


def test_d1_with_out_of_scope_requests_reports_larsons_figures_beside_theirs():
    """Issue 56, item 5: out-of-scope recall and in-scope accuracy on the accepted, at the threshold."""
    import json

    import polars as pl

    from adri_pipeline.routing.evaluation import task_figures
    from adri_pipeline.routing.protocol import RunConfig
    from adri_pipeline.routing.results import CandidateResult, TaskFigures
    from adri_pipeline.routing.risk_coverage import out_of_scope

    gold = ["a", "b", "sem_correspondencia", "sem_correspondencia"]
    answer = ["a", "a", "sem_correspondencia", "b"]
    confidence = [0.9, 0.9, 0.9, 0.4]
    group = pl.DataFrame(
        {
            "task": ["D1"] * 4,
            "gold": gold,
            "answer": answer,
            "confidence": confidence,
            "correct": [g == a for g, a in zip(gold, answer)],
            "threshold": [0.5] * 4,
            "probabilities": [json.dumps({a: c}) for a, c in zip(answer, confidence)],
        }
    )
    figures = TaskFigures.model_validate(task_figures(group, RunConfig()))
    assert figures.scope["out_of_scope_recall"] == 1.0 and figures.scope["in_scope_accuracy_on_accepted"] == 0.5
    result = CandidateResult.model_construct(tasks={"D1": figures}, out_of_source={})
    lines = "\n".join(out_of_scope({"embedded-logreg": result}, []))
    assert "### Out of scope (D1)" in lines and "| embedded-logreg | in source | 2 | 2 | 100% | 50% | 100% |" in lines
    assert "59%" in lines  # BERT's out-of-scope recall in Larson et al.'s table
    in_scope_only = group.filter(pl.col("gold") != "sem_correspondencia")
    assert task_figures(in_scope_only, RunConfig()).get("scope") is None


def test_out_of_scope_is_read_per_kind_the_sources_own_and_intents_never_fitted_on():
    import polars as pl

    from adri_pipeline.jev.examples import CanonicalExample, Metadata, State
    from adri_pipeline.routing.composition import UNSEEN_TAG
    from adri_pipeline.routing.evaluation import scope_by_kind

    def example(i, task, gold, tags=()):
        return CanonicalExample(
            id=f"{task}-{i}",
            group_id=f"g{i}",
            task=task,
            state=State(),
            utterance=f"u{i}",
            question="?",
            question_type="choice",
            options={"a": "a", gold: gold},
            gold_label=gold,
            metadata=Metadata(adversarial=list(tags)),
        )

    d1 = [
        example(0, "D1", "a"),
        example(1, "D1", "sem_correspondencia"),
        example(2, "D1", "sem_correspondencia"),
        example(3, "D1", "sem_correspondencia", [UNSEEN_TAG]),
    ]
    by_id = {e.id: e for e in d1 + [example(1, "D5", "fora_do_escopo"), example(0, "D5", "no_escopo")]}
    frame = pl.DataFrame(
        {
            "example_id": [e.id for e in d1],
            "task": "D1",
            "gold": [e.gold_label for e in d1],
            "answer": ["a", "sem_correspondencia", "a", "a"],
            "confidence": [0.9] * 4,
            "threshold": [0.5] * 4,
        }
    )
    kinds = scope_by_kind(frame, by_id)
    assert kinds["annotated out of scope by the source"]["out_of_scope"] == 1  # D1-1: its D5 gold says so
    assert kinds["annotated out of scope by the source"]["out_of_scope_recall"] == 1.0
    assert kinds["intents never fitted on"]["out_of_scope_recall"] == 0.0  # D1-3 routed to "a"
    assert scope_by_kind(frame.head(3), {k: v for k, v in by_id.items() if k != "D5-1"}) is None


def test_d2_set_coverage_comes_with_an_interval_over_its_catalogues_in_the_report():
    """Issue 56: D2's sets are stated for a new catalogue's turns; a set of 12 catalogues can fall far
    from the stated coverage, so the report draws the coverage's interval over catalogues (failed
    before: no such figure)."""
    from adri_pipeline.jev.metrics import NotEnoughData
    from adri_pipeline.routing.evaluation import prediction_sets
    from adri_pipeline.routing.protocol import RunConfig
    from adri_pipeline.routing.results import PredictionSets
    from adri_pipeline.routing.risk_coverage import _across

    probabilities = [{"a": 0.9, "b": 0.1}] * 20
    gold = ["a", "a"] * 6 + ["a", "b"] * 4  # sets {a}: the first 6 catalogues all covered, the last 4 half
    catalogue_of = [f"k{i}" for i in range(10) for _ in range(2)]
    figures = prediction_sets(probabilities, gold, 0.5, RunConfig(), catalogue_of)
    across = figures["coverage_across_catalogues"]
    assert figures["coverage"] == pytest.approx(0.8) and across["catalogues"] == 10
    low, high = across["interval"]
    assert low < 0.8 < high <= 1.0
    assert _across(PredictionSets.model_validate(figures)).startswith(" [") and "over 10 catalogues" in _across(
        PredictionSets.model_validate(figures)
    )
    one = prediction_sets(probabilities, gold, 0.5, RunConfig(), ["k1"] * 20)
    assert isinstance(one["coverage_across_catalogues"]["interval"], NotEnoughData)
    assert _across(PredictionSets.model_validate(one)) == " (1 catalogue: too few for an interval)"
    assert prediction_sets(probabilities, gold, 0.5, RunConfig())["coverage_across_catalogues"] is None
