"""A coding round's codes (classification/coding.py, agreement.py): gold, disagreements, coder vs coder
agreement and the coders' evidence audit, from a round's CSV as `adri code pull` writes it. The
documents are the project's synthetic sample."""

import polars as pl
import pytest

from adri_pipeline.classification.agreement import (
    CoderFileError,
    coder_agreement,
    load_coder_labels,
    load_codes,
)
from adri_pipeline.classification.coding import audit_codes, audit_shares, disagreements, gold_codes
from adri_pipeline.classification.context import RunContext
from adri_pipeline.classification.corpus import as_documents, load_corpus
from adri_pipeline.classification.labeling import Code, Span, codes_of, result_items
from adri_pipeline.config import SAMPLE_CORPUS
from adri_pipeline.warehouse import Warehouse, coding_projects, read_codes, store_codes, store_coding_project
from adri_pipeline_tests.classification.helpers import EVIDENCE, ROUND, round_file


def test_the_gold_is_the_adjudicated_value_else_the_value_both_blind_coders_gave(tmp_path, pilot):
    codes = load_codes(round_file(tmp_path, ROUND), pilot)
    gold, unresolved = gold_codes(codes)
    assert dict(gold.select("doc_id", "value").iter_rows()) == {
        "sample-001": "qualitativa",
        "sample-002": "quantitativa",
        "sample-003": "teorica",
        "sample-004": "mista",
    }
    assert gold.filter(pl.col("doc_id") == "sample-004")["source"].to_list() == ["adjudicated"]
    assert unresolved.is_empty()
    # the review pass saw the model's answer: never gold (sample-001 stays qualitativa)
    assert load_coder_labels(round_file(tmp_path, ROUND), pilot).height == 4


def test_a_disagreement_not_yet_adjudicated_has_no_gold(tmp_path, pilot):
    codes = load_codes(round_file(tmp_path, ROUND[:8]), pilot)
    gold, unresolved = gold_codes(codes)
    assert "sample-004" not in set(gold["doc_id"])
    assert unresolved.select("doc_id", "values").row(0) == (
        "sample-004",
        ["ana@example.org: qualitativa", "bruno@example.org: quantitativa"],
    )
    assert disagreements(codes).height == 1


def test_coder_vs_coder_kappa_and_alpha_match_a_hand_computed_case(tmp_path, pilot):
    """Four documents, agreement on 3. Ana {q,n,t,q}, Bruno {q,n,t,n} (q qualitativa, n quantitativa,
    t teorica). Cohen: p_o = 0.75, p_e = 0.5*0.25 + 0.25*0.5 + 0.25*0.25 = 0.3125, kappa = 0.6364.
    Krippendorff (nominal): coincidences q 3, n 3, t 2 (n = 8); D_o = 2/8; D_e = (64 - 9 - 9 - 4)/(8*7)
    = 42/56; alpha = 1 - (2/8)/(42/56) = 0.6667."""
    table = coder_agreement(load_codes(round_file(tmp_path, ROUND), pilot), pilot)
    row = table.row(0, named=True)
    assert (row["round"], row["variable"], row["coders"], row["n"], row["agreement_share"]) == (
        "round-1",
        "abordagem",
        2,
        4,
        0.75,
    )
    assert row["kappa"] == pytest.approx(0.636, abs=1e-3) and row["alpha"] == pytest.approx(0.667, abs=1e-3)


def test_the_coders_evidence_is_audited_as_the_models(tmp_path, pilot):
    codes = load_codes(round_file(tmp_path, ROUND), pilot)
    documents = {d.doc_id: d for d in as_documents(load_corpus(SAMPLE_CORPUS).documents)}
    audits = audit_codes(codes, documents, pilot)
    first = audits.filter((pl.col("doc_id") == "sample-001") & (pl.col("pass") == "blind")).row(0, named=True)
    abstract = documents["sample-001"].abstract
    assert first["audit_status"] == "literal" and first["field"] == "abstract"
    assert abstract[first["evidence_start"] : first["evidence_end"]] == EVIDENCE
    bruno = audits.filter((pl.col("doc_id") == "sample-002") & (pl.col("coder") == "bruno@example.org"))
    assert bruno["audit_status"].to_list() == ["absent"]  # a quote the text does not hold
    ana = audits.filter((pl.col("doc_id") == "sample-002") & (pl.col("coder") == "ana@example.org"))
    assert ana["audit_status"].to_list() == ["absent"]  # an informative answer with no evidence
    shares = audit_shares(audits).filter((pl.col("pass") == "blind") & (pl.col("coder") == "bruno@example.org"))
    assert shares.select("codes", "literal", "absent").row(0) == (4, 1, 3)


@pytest.mark.parametrize(
    "line, message",
    [
        ("sample-001,abordagem,qualitativa,,ana@example.org,second,round-1", "line 2: pass 'second' is not one of"),
        ("sample-001,abordagem,qualitativa,,,blind,round-1", "line 2: empty coder"),
    ],
)
def test_a_round_file_with_a_bad_pass_or_no_coder_names_the_line(tmp_path, pilot, line, message):
    with pytest.raises(CoderFileError, match=f"round-1.csv: {message}"):
        load_codes(round_file(tmp_path, [line]), pilot)


def test_a_code_goes_to_label_studio_and_comes_back_the_same(pilot):
    """result_items writes what codes_of reads: values (a list as a set), text, evidence spans."""
    codes = {
        "abordagem": Code("qualitativa", (Span("abstract", 10, 20, "o estudo a"),)),
        "tecnica": Code("analise_documental|entrevista", (Span("title", 0, 5, "Alime"), Span("abstract", 1, 4, "esu"))),
        "periodo": Code("2012 a 2018"),
        "brasil_caso": Code("true"),
    }
    back = codes_of(pilot, result_items(pilot, codes))
    assert back == {
        name: Code(code.value, tuple(sorted(code.spans, key=lambda s: (s.field != "title", s.start))))
        for name, code in codes.items()
    }
    assert back["tecnica"].evidencia == "Alime … esu"
    assert "abordagem" not in codes_of(pilot, result_items(pilot, {"abordagem": Code("nao_e_um_valor")}))


def test_a_pull_replaces_the_rounds_codes_and_keeps_its_projects(tmp_path):
    warehouse = Warehouse(tmp_path / "adri.duckdb")
    store_coding_project(
        warehouse,
        {
            "round": "r1",
            "pass": "blind",
            "coder": "ana@example.org",
            "project_id": 3,
            "url": "http://127.0.0.1:8081/projects/3",
            "doc_ids": ["a", "b"],
            "codebook_hash": "h",
            "model": "",
        },
    )
    first = pl.DataFrame(
        {
            "round": ["r1", "r1"],
            "pass": ["blind"] * 2,
            "coder": ["ana@example.org"] * 2,
            "doc_id": ["a", "b"],
            "variable": ["abordagem"] * 2,
            "value": ["teorica", "mista"],
        }
    )
    store_codes(warehouse, "r1", first)
    store_codes(warehouse, "r1", first.head(1))  # b's annotation deleted in Label Studio
    assert read_codes(warehouse, "r1")["doc_id"].to_list() == ["a"]
    assert coding_projects(warehouse, "r1")["doc_ids"].to_list() == [["a", "b"]]


@pytest.mark.slow  # end to end, over 6 s: the slow suite (.ci/run runs it)
def test_suggest_never_offers_a_document_of_the_round_even_one_without_gold_yet(tmp_path, pilot):
    """sample-004's dispute is open, so it has no gold and is not trained on; it is still being coded."""
    from adri_pipeline.classification.coders import suggest
    from adri_pipeline.config import Settings

    others = {
        "tecnica": "entrevista",
        "recorte": "nacional",
        "brasil_caso": "true",
        "subarea": "saude_coletiva",
        "periodo": "nao_informado",
    }
    every_variable = [
        f"sample-00{n},{variable},{value},,{coder},blind,round-1"
        for n in (1, 2, 3)
        for variable, value in others.items()
        for coder in ("ana@example.org", "bruno@example.org")
    ]
    settings = Settings(
        warehouse=tmp_path / "wh" / "adri.duckdb",
        corpus=SAMPLE_CORPUS,
        coders=round_file(tmp_path, ROUND[:8] + every_variable),
        holdout=None,
    )
    offered = {s.doc_id for s in suggest(RunContext.load(settings), n=30)}
    assert offered and not offered & {"sample-001", "sample-002", "sample-003", "sample-004"}


def test_agree_measures_the_model_against_each_rounds_gold(tmp_path, pilot):
    """Two rounds, round-9 then round-10 in the file (round-10 sorts first by name); a stored model
    that answered qualitativa everywhere. Round 9's gold (ROUND) has one qualitativa in four
    documents; round 10 recodes sample-002 as qualitativa."""
    from adri_pipeline.classification.coders import agreement
    from adri_pipeline.config import Settings
    from adri_pipeline.warehouse import store_results

    first = [line.replace("round-1", "round-9") for line in ROUND]
    second = [line.replace("round-1", "round-10").replace("quantitativa", "qualitativa") for line in ROUND[2:4]]
    settings = Settings(
        warehouse=tmp_path / "wh" / "adri.duckdb",
        corpus=SAMPLE_CORPUS,
        holdout=None,
        coders=round_file(tmp_path, first + second),
    )
    values = pl.DataFrame(
        {
            "doc_id": [f"sample-00{n}" for n in (1, 2, 3, 4)],
            "model": "m",
            "codebook_hash": pilot.content_hash,
            "variable": "abordagem",
            "value": "qualitativa",
        }
    )
    store_results(
        Warehouse(settings.warehouse), values, pl.DataFrame(schema={"doc_id": pl.String}), "m", pilot.content_hash
    )
    measured = agreement(RunContext.load(settings))
    rounds = dict(measured.round.models_by_round.select("round", "agreement_share").iter_rows())
    assert rounds == {"round-9": 0.25, "round-10": 1.0}
    # the models' table takes each document's latest gold: sample-002 from round 10
    assert measured.table.filter(pl.col("model") == "m")["agreement_share"].to_list() == [0.5]


def test_a_round_without_a_reachable_label_studio_says_so_and_stores_nothing(tmp_path):
    from adri_pipeline.classification import rounds
    from adri_pipeline.classification.label_studio import LabelStudioError
    from adri_pipeline.config import Settings
    from loopback.systemone_servers import free_port

    url = f"http://127.0.0.1:{free_port()}"
    settings = Settings(
        warehouse=tmp_path / "wh" / "adri.duckdb",
        corpus=SAMPLE_CORPUS,
        holdout=None,
        label_studio_url=url,
        label_studio_token="f" * 40,
    )
    with pytest.raises(
        LabelStudioError,
        match=rf"{url} cannot be reached to create a project|label-studio-sdk is "
        r"not installed",
    ):
        rounds.start(
            RunContext.load(settings),
            "round-1",
            "blind",
            ["ana@example.org", "bruno@example.org"],
            ["sample-001", "sample-002"],
        )
    assert coding_projects(Warehouse(settings.warehouse), "round-1").is_empty()
    with pytest.raises(rounds.RoundError, match="two coders or more"):
        rounds.start(RunContext.load(settings), "round-1", "blind", ["ana@example.org"], ["sample-001"])
    with pytest.raises(rounds.RoundError, match="no blind pass yet"):
        rounds.start(RunContext.load(settings), "round-1", "review", [])
    with pytest.raises(LabelStudioError, match="ADRI_LABEL_STUDIO_TOKEN"):
        rounds.start(
            RunContext.load(settings.model_copy(update={"label_studio_token": None})),
            "round-1",
            "blind",
            ["ana@example.org", "bruno@example.org"],
            ["sample-001"],
        )


def test_adri_code_names_what_is_missing(tmp_path, capsys):
    from adri_pipeline.cli import main

    with pytest.raises(SystemExit) as stopped:
        main(["code", "start"])
    assert stopped.value.code == 2 and "--round" in capsys.readouterr().err
    warehouse = tmp_path / "wh" / "adri.duckdb"
    assert main(["code", "pull", "--rodada", "round-9", "--warehouse", str(warehouse)]) == 2
    assert "no coding round 'round-9'; `adri code start --round round-9`" in capsys.readouterr().err
    ids = tmp_path / "ids.txt"
    ids.write_text("# the round\nsample-001\n")
    assert (
        main(
            [
                "codificar",
                "start",
                "--round",
                "r",
                "--coder",
                "ana@example.org",
                "--ids",
                str(ids),
                "--warehouse",
                str(warehouse),
            ]
        )
        == 2
    )
    assert "two coders or more" in capsys.readouterr().err
