"""A team's own annotated data in the JEV design's canonical format: loaded line by line, errors name the
line and the field, and the same protocol runs on it."""

import json

import pytest

from adri_pipeline.jev.contract import RoutingConfigError
from adri_pipeline.jev.serialize import to_request
from adri_pipeline.routing.canonical import CanonicalFileError, load_canonical, located_canonical
from adri_pipeline.routing.datasets import build, with_external_test
from adri_pipeline.routing.protocol import RunConfig
from adri_pipeline.routing.questions import D2_QUESTION
from adri_pipeline_tests.routing.helpers import line, write

# one performance run and no pilot: these tests are about the team's file, not about H3
QUICK = {"runs": 1, "warmup": 0, "production_batch": {"embedded-logreg": 1}}


def test_a_file_in_the_jev_designs_format_loads_and_keeps_the_teams_metadata(tmp_path):
    [example] = load_canonical(
        write(
            tmp_path / "d2.jsonl",
            [
                line(
                    1,
                    annotator_labels=["continuar_agente_ativo", "desambiguar"],
                    adjudicated_label="continuar_agente_ativo",
                )
            ],
        )
    )
    assert example.state.suspended_sessions == ["listas"] and example.state.recent_turns[1].agent_id == "listas"
    assert example.metadata.model_extra == {"author": "equipe-a"} and example.annotator_labels[1] == "desambiguar"
    assert "- sessão listas: põe leite na lista" in to_request(example)["state"]


@pytest.mark.parametrize(
    "broken, message",
    [
        ({"gold_label": "transferir"}, "line 2: gold_label 'transferir' is not among the options"),
        ({"cliente": "x"}, "line 2: field 'cliente': Extra inputs are not permitted"),
        ({"state": {"recent_turns": [{"role": "usuario", "text": "oi"}]}}, "line 2: field 'state.recent_turns.0.role'"),
        ({"utterance": None}, "line 2: field 'utterance'"),
        # the JEV design: at most 20 options per question
        (
            {
                "options": {f"opcao_{i}": "x" for i in range(24)} | {"continuar_agente_ativo": "continuar"},
                "gold_label": "continuar_agente_ativo",
            },
            "line 2: 25 options: the JEV design allows at most 20",
        ),
    ],
)
def test_a_broken_line_names_the_line_and_the_field(tmp_path, broken, message):
    rows = [line(1), {k: v for k, v in {**line(2), **broken}.items() if v is not None}]
    with pytest.raises(CanonicalFileError, match=message):
        load_canonical(write(tmp_path / "d2.jsonl", rows))


def test_a_line_that_is_not_json_is_named(tmp_path):
    path = tmp_path / "d2.jsonl"
    path.write_text(json.dumps(line(1)) + "\n{oops\n", encoding="utf-8")
    with pytest.raises(CanonicalFileError, match="d2.jsonl: line 2: not valid JSON"):
        load_canonical(path)


TEAM_GOLDS = ["continuar_agente_ativo", "retomar_sessao:listas", "iniciar_novo_agente"]
TEAM_TEXTS = {
    "continuar_agente_ativo": "sim pfv",
    "retomar_sessao:listas": "e a lista de compras?",
    "iniciar_novo_agente": "qual a previsão do tempo amanhã?",
}


def _team_rows() -> list[dict]:
    """36 D2 lines in the three golds' turn, two annotators who disagree on every fourth (9 excluded, none
    adjudicated), and two adversarial categories on every other line."""
    rows = [
        line(
            i,
            gold=TEAM_GOLDS[i % 3],
            utterance=TEAM_TEXTS[TEAM_GOLDS[i % 3]] + f" ({i})",
            annotator_labels=[TEAM_GOLDS[i % 3], TEAM_GOLDS[i % 3] if i % 4 else "desambiguar"],
        )
        for i in range(36)
    ]
    for row in rows[1::2]:  # two adversarial categories on one example
        row["metadata"] = row["metadata"] | {"adversarial": ["curta_dependente_de_contexto", "erro_ortografico"]}
    return rows


def _an_external_test_file(tmp_path, dataset, rows):
    """The dataset with an external file as its test split, after two files that share an id or a group
    with the fit data are refused naming the file and the line."""
    # failed before: refused without naming the file or the line
    with pytest.raises(RoutingConfigError, match=r"mesmo\.jsonl: line \d: id .* is also in the data the candidates"):
        with_external_test(dataset, located_canonical(write(tmp_path / "mesmo.jsonl", rows[:3])))
    same_group = [r | {"id": f"novo-{i}"} for i, r in enumerate(rows[:3])]
    with pytest.raises(RoutingConfigError, match=r"grupo\.jsonl: line \d: group_id .* is also in the data"):
        with_external_test(dataset, located_canonical(write(tmp_path / "grupo.jsonl", same_group)))
    external = load_canonical(
        write(
            tmp_path / "externo.jsonl",
            [line(1000 + i, gold=TEAM_GOLDS[i % 3], utterance=TEAM_TEXTS[TEAM_GOLDS[i % 3]]) for i in range(9)],
        )
    )
    evaluated = with_external_test(dataset, external)
    assert {e.id for e in evaluated.in_split("test")} == {e.id for e in external}
    return evaluated


@pytest.mark.slow  # end to end, over 7 s: the slow suite (.ci/run runs it)
def test_run_and_evaluate_on_a_teams_file_produce_metrics(tmp_path):
    from adri_pipeline.routing.service import run_benchmark
    from adri_pipeline.warehouse import Warehouse

    rows = _team_rows()
    team_file = write(tmp_path / "equipe.jsonl", rows)
    frozen = tmp_path / "frozen"
    dataset = build(RunConfig(dataset=str(team_file)), frozen)
    assert (frozen / "file-equipe.test.sha256").exists()
    report = run_benchmark(
        RunConfig(dataset=str(team_file), **QUICK),
        ["embedded-logreg"],
        Warehouse(tmp_path / "w.duckdb"),
        tmp_path / "run",
        dataset=dataset,
    ).report
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["results"]["embedded-logreg"]["tasks"]["D2"]["n"] == len(dataset.in_split("test"))
    assert "metadata.author" in metrics["results"]["embedded-logreg"]["slices"] and report.exists()
    agreement = metrics["annotator_agreement"]
    assert agreement["examples"] == 36 and 0 < agreement["cohen_kappa"] < 1 and "Annotation" in report.read_text()
    assert len(dataset.excluded) == 9 and "Excluded: 9 example(s)" in report.read_text()  # disagreed, not adjudicated
    adversarial = metrics["results"]["embedded-logreg"]["slices"]["adversarial"]  # failed before: one joined slice
    assert set(adversarial) == {"curta_dependente_de_contexto", "erro_ortografico"}
    assert adversarial["curta_dependente_de_contexto"]["n"] == metrics["results"]["embedded-logreg"]["tasks"]["D2"]["n"]

    evaluated = _an_external_test_file(tmp_path, dataset, rows)
    run_benchmark(
        RunConfig(dataset=str(team_file), runs=0),
        ["embedded-logreg"],  # quality only
        Warehouse(tmp_path / "w.duckdb"),
        tmp_path / "eval",
        dataset=evaluated,
    )
    evaluation = json.loads((tmp_path / "eval" / "metrics.json").read_text())
    assert evaluation["results"]["embedded-logreg"]["tasks"]["D2"]["n"] == 9
    assert evaluation["results"]["embedded-logreg"]["performance"]["independent_runs"] == 0
    assert evaluation["hypotheses"]["embedded-logreg"]["H3"]["verdict"] == "not evaluated"
    # the file is never called "in source": the candidates were fitted on none of it
    assert "| embedded-logreg | D2 | external test (out of source: fitted on none of it) | 9 |" in (
        tmp_path / "eval" / "report.md"
    ).read_text(encoding="utf-8")
    # failed before: the evaluation's rows replaced the run's (both were stored under the fit data's name)
    stored = (
        Warehouse(tmp_path / "w.duckdb")
        .query("SELECT dataset, count(*) AS n FROM routing_predictions GROUP BY dataset ORDER BY dataset")
        .rows()
    )
    assert stored == [("eval", 9), ("run", len(dataset.in_split("test")))]


def test_the_json_schema_in_contracts_is_the_models_own():
    from adri_pipeline.jev.contract import SCHEMAS
    from adri_pipeline.jev.examples import CanonicalExample

    stored = json.loads((SCHEMAS / "canonical_example.schema.json").read_text(encoding="utf-8"))
    expected = json.loads(json.dumps(CanonicalExample.model_json_schema()))
    assert {k: v for k, v in stored.items() if k not in ("$schema", "$id")} == expected


def test_the_projects_hand_written_d2_turns_are_in_the_jev_designs_format_and_balanced():
    """data/routing/handwritten_d2.jsonl: 40 D2 turns written by hand (synthetic, labelled so), ten per
    decision, with the D2 rule in every question."""
    from collections import Counter

    from adri_pipeline.config import DATA

    examples = load_canonical(DATA / "routing" / "handwritten_d2.jsonl")
    kinds = Counter(e.gold_label.split(":")[0] for e in examples)
    assert kinds == {"continuar_agente_ativo": 10, "retomar_sessao": 10, "iniciar_novo_agente": 10, "desambiguar": 10}
    assert all(e.question == D2_QUESTION and e.metadata.synthetic and e.metadata.language == "pt-BR" for e in examples)
    assert all(t.role in ("user", "agent") and t.agent_id for e in examples for t in e.state.recent_turns)


def test_the_adjudicated_label_is_gold_and_unadjudicated_disagreements_are_excluded(tmp_path):
    """Failed before: adjudicated_label was read and never used; disagreeing annotators were scored."""
    rows = [
        line(
            1,
            gold="continuar_agente_ativo",
            annotator_labels=["continuar_agente_ativo", "desambiguar"],
            adjudicated_label="desambiguar",
        ),
        line(2, annotator_labels=["continuar_agente_ativo", "iniciar_novo_agente"]),  # nobody adjudicated
        line(3, annotator_labels=["continuar_agente_ativo", "continuar_agente_ativo"]),
    ]
    loaded = located_canonical(write(tmp_path / "equipe.jsonl", rows))
    assert [e.gold_label for e in loaded.examples] == ["desambiguar", "continuar_agente_ativo"]
    assert [where for where, _ in loaded.excluded] == [f"{tmp_path / 'equipe.jsonl'}: line 2"]
    with pytest.raises(CanonicalFileError, match=r"line 1: adjudicated_label: .*not among the options"):
        located_canonical(write(tmp_path / "ruim.jsonl", [line(1, adjudicated_label="pular")]))


def test_a_canonical_file_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "d2.jsonl"
    path.write_bytes(json.dumps(line(1), ensure_ascii=False).encode("latin-1", errors="replace") + b"\n\xe9\n")
    with pytest.raises(CanonicalFileError, match=r"d2.jsonl: not UTF-8 at byte \d+"):
        load_canonical(path)
