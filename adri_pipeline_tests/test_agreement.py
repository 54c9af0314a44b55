import polars as pl
import pytest

from adri_pipeline.agreement import CoderFileError, agreement_table, load_coder_labels


def test_agreement_and_kappa_match_a_hand_computed_case(tmp_path, pilot):
    # 4 documents, model vs coder on abordagem: agree on 3 of 4.
    # p_o = 0.75; coder {q,q,t,t}, model {q,q,t,q}: p_e = 0.5*0.75 + 0.5*0.25 = 0.5; kappa = 0.5
    coders = tmp_path / "coders.csv"
    coders.write_text("doc_id,variable,value\nd1,abordagem,qualitativa\nd2,abordagem,qualitativa\n"
                      "d3,abordagem,teorica\nd4,abordagem,teorica\nd1,tecnica,entrevista|observacao\n")
    results = pl.DataFrame({
        "model": ["m"] * 5, "doc_id": ["d1", "d2", "d3", "d4", "d1"],
        "variable": ["abordagem"] * 4 + ["tecnica"],
        "value": ["qualitativa", "qualitativa", "teorica", "qualitativa", "observacao|entrevista"],
    })
    table = agreement_table(results, load_coder_labels(coders, pilot))
    abordagem = table.filter(pl.col("variable") == "abordagem").row(0, named=True)
    assert (abordagem["n"], abordagem["agreement_pct"], abordagem["kappa"]) == (4, 75.0, 0.5)
    tecnica = table.filter(pl.col("variable") == "tecnica").row(0, named=True)
    assert tecnica["agreement_pct"] == 100.0  # list order does not matter


def test_unknown_variable_in_coder_file_names_the_line(tmp_path, pilot):
    coders = tmp_path / "coders.csv"
    coders.write_text("doc_id,variable,value\nd1,abordagem,qualitativa\nd2,metodo,x\n")
    with pytest.raises(CoderFileError, match="coders.csv: line 3: unknown variable 'metodo'"):
        load_coder_labels(coders, pilot)
