import re

import polars as pl
import pytest

from adri_pipeline.classification.agreement import CoderFileError, agreement_table, confusion_table, load_coder_labels


def test_agreement_and_kappa_match_a_hand_computed_case(tmp_path, pilot):
    # 4 documents, model vs coder on abordagem: agree on 3 of 4.
    # p_o = 0.75; coder {q,q,t,t}, model {q,q,t,q}: p_e = 0.5*0.75 + 0.5*0.25 = 0.5; kappa = 0.5
    coders = tmp_path / "coders.csv"
    coders.write_text(
        "doc_id,variable,value\nd1,abordagem,qualitativa\nd2,abordagem,qualitativa\n"
        "d3,abordagem,teorica\nd4,abordagem,teorica\nd1,tecnica,entrevista|observacao\n"
    )
    results = pl.DataFrame(
        {
            "model": ["m"] * 5,
            "doc_id": ["d1", "d2", "d3", "d4", "d1"],
            "variable": ["abordagem"] * 4 + ["tecnica"],
            "value": ["qualitativa", "qualitativa", "teorica", "qualitativa", "observacao|entrevista"],
        }
    )
    table = agreement_table(results, load_coder_labels(coders, pilot), pilot)
    abordagem = table.filter(pl.col("variable") == "abordagem").row(0, named=True)
    assert (abordagem["n"], abordagem["agreement_share"], abordagem["kappa"]) == (4, 0.75, 0.5)
    tecnica = table.filter(pl.col("variable") == "tecnica").row(0, named=True)
    assert (tecnica["agreement_share"], tecnica["jaccard"]) == (1.0, 1.0)  # list order does not matter


def test_unknown_variable_in_coder_file_names_the_line(tmp_path, pilot):
    coders = tmp_path / "coders.csv"
    coders.write_text("doc_id,variable,value\nd1,abordagem,qualitativa\nd2,metodo,x\n")
    with pytest.raises(CoderFileError, match="coders.csv: line 3: unknown variable 'metodo'"):
        load_coder_labels(coders, pilot)


@pytest.mark.parametrize(
    "bad_line, message",
    [
        ('sample-002,abordagem,"teorica', r"line 3: unexpected end of data"),
        ("sample-002,abordagem,mista,extra", r"line 3: 4 fields where the header has 3"),
        ("sample-002,abordagem", r"line 3: 2 fields where the header has 3"),  # said "value None" before
        ("sample-002,abordagem,", r"line 3: no value for 'abordagem'"),
    ],
)
def test_a_malformed_line_is_named_by_its_number(tmp_path, pilot, bad_line, message):
    """Failed before: polars' parse error was reported with no line number."""
    path = tmp_path / "codes.csv"
    path.write_text(
        f"doc_id,variable,value\nsample-001,abordagem,qualitativa\n{bad_line}\nsample-004,abordagem,mista\n"
    )
    with pytest.raises(CoderFileError, match=rf"codes\.csv: {message}"):
        load_coder_labels(path, pilot)


def test_a_period_written_as_text_loads_and_is_compared_as_informed_or_not(tmp_path, pilot):
    # failed before: the coder file's periodo had to be one of the codebook's values ("nao_informado")
    coders = tmp_path / "coders.csv"
    coders.write_text(
        "doc_id,variable,value,evidencia\nd1,periodo,entre 2004 e 2013,entre 2004 e 2013\n"
        "d2,periodo,nao_informado,\nd3,periodo,2019,em 2019\n"
    )
    results = pl.DataFrame(
        {
            "model": ["m"] * 3,
            "doc_id": ["d1", "d2", "d3"],
            "variable": ["periodo"] * 3,
            "value": ["de 2004 a 2013", "nao_informado", "nao_informado"],
        }
    )
    table = agreement_table(results, load_coder_labels(coders, pilot), pilot)
    row = table.row(0, named=True)
    assert (row["measure"], row["n"], row["agreement_share"]) == ("informed or not", 3, 0.667)
    confusion = confusion_table(results, load_coder_labels(coders, pilot), pilot, "m", "periodo")
    assert confusion.to_dicts() == [
        {"coder": "informed", "informed": 1, "nao_informado": 1},
        {"coder": "nao_informado", "informed": 0, "nao_informado": 1},
    ]


def test_lists_are_measured_by_jaccard_and_confused_per_value(tmp_path, pilot):
    coders = tmp_path / "coders.csv"
    coders.write_text("doc_id,variable,value\nd1,tecnica,entrevista|observacao\nd2,tecnica,nao_informado\n")
    results = pl.DataFrame(
        {
            "model": ["m"] * 2,
            "doc_id": ["d1", "d2"],
            "variable": ["tecnica"] * 2,
            "value": ["entrevista|questionario", "nao_informado"],
        }
    )
    labels = load_coder_labels(coders, pilot)
    row = agreement_table(results, labels, pilot).row(0, named=True)
    # d1: {entrevista} / {entrevista, observacao, questionario} = 1/3; d2: 1
    assert (row["agreement_share"], row["jaccard"], row["kappa"]) == (0.5, round((1 / 3 + 1) / 2, 3), None)
    confusion = {
        r["value"]: (r["both"], r["coder_only"], r["model_only"])
        for r in confusion_table(results, labels, pilot, "m", "tecnica").iter_rows(named=True)
    }
    assert confusion == {
        "entrevista": (1, 0, 0),
        "observacao": (0, 1, 0),
        "questionario": (0, 0, 1),
        "nao_informado": (1, 0, 0),
    }


@pytest.mark.parametrize(
    "header, first, again, message",
    [
        (
            "doc_id,variable,value",
            "d1,abordagem,qualitativa",
            "d1,abordagem,qualitativa",
            "line 4: the file's coder coded document 'd1', variable 'abordagem' again (line 2)",
        ),
        (
            "doc_id,variable,value,coder,pass,round",
            "d1,abordagem,qualitativa,a@x.org,blind,r1",
            "d1,abordagem,teorica,a@x.org,blind,r1",
            "line 4: coder 'a@x.org' coded document 'd1', variable 'abordagem', round 'r1', pass 'blind' again "
            "(line 2)",
        ),
    ],
)
def test_a_coder_coding_the_same_document_and_variable_twice_is_refused(tmp_path, pilot, header, first, again, message):
    """Failed before: the second line was read and counted twice in agreement and training."""
    path = tmp_path / "codes.csv"
    path.write_text(f"{header}\n{first}\n{first.replace('d1', 'd2', 1)}\n{again}\n", encoding="utf-8")
    with pytest.raises(CoderFileError, match=re.escape(f"codes.csv: {message}; keep one of the two lines")):
        load_coder_labels(path, pilot)


def test_two_coders_or_two_passes_on_the_same_document_and_variable_are_read(tmp_path, pilot):
    path = tmp_path / "codes.csv"
    path.write_text(
        "doc_id,variable,value,coder,pass,round\nd1,abordagem,qualitativa,a@x.org,blind,r1\n"
        "d1,abordagem,teorica,b@x.org,blind,r1\nd1,abordagem,teorica,a@x.org,review,r1\n"
        "d1,abordagem,teorica,a@x.org,blind,r2\n",
        encoding="utf-8",
    )
    assert load_coder_labels(path, pilot).height == 1  # the latest round's gold


def test_agree_refuses_a_repeated_code_in_one_line_and_stores_nothing(tmp_path, pilot, capsys):
    from adri_pipeline.cli import main

    path = tmp_path / "codes.csv"
    path.write_text("doc_id,variable,value\nd1,abordagem,qualitativa\nd1,abordagem,qualitativa\n", encoding="utf-8")
    assert main(["agree", "--coders", str(path), "--warehouse", str(tmp_path / "w.duckdb")]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        f"error: {path}: line 3: the file's coder coded document 'd1', variable 'abordagem' "
        "again (line 2); keep one of the two lines"
    )
    assert not (tmp_path / "w.duckdb").exists()
