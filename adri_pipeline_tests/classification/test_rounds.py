"""A whole coding round against a real Label Studio on loopback (sqlite, `make label-studio`): ten
documents of the project's synthetic sample, two coders (then a third) annotating through Label
Studio's API with their own tokens, one disagreement adjudicated by a third user, the codes pulled back, and
`adri agree` on the round's CSV."""

import httpx
import polars as pl
import pytest

from adri_pipeline.classification.codebook import load_codebook
from adri_pipeline.classification.context import RunContext
from adri_pipeline.classification.corpus import as_documents, load_corpus
from adri_pipeline.classification.label_studio import LabelStudioError
from adri_pipeline.classification.labeling import Code, Span, result_items
from adri_pipeline.cli import main
from adri_pipeline.config import PILOT_CODEBOOK, SAMPLE_CORPUS, Settings

ANA, BRUNO, CARLA, DORA = "ana@example.org", "bruno@example.org", "carla@example.org", "dora@example.org"
DOCUMENTS = [f"sample-{n:03d}" for n in range(1, 11)]
DISPUTED = "sample-003"


def _tasks(api: httpx.Client, project: int) -> list[dict]:
    answer = api.get("/api/tasks", params={"project": project, "page_size": 100})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    return body["tasks"] if isinstance(body, dict) else body


def _annotate(server, token: str, project: int, codes_for) -> int:
    """Every task of the project annotated as the token's user would in the editor."""
    api = httpx.Client(base_url=server.url, headers={"Authorization": f"Token {token}"}, timeout=30)
    codebook = load_codebook(PILOT_CODEBOOK)
    tasks = _tasks(api, project)
    for task in tasks:
        made = api.post(
            f"/api/tasks/{task['id']}/annotations",
            json={"result": result_items(codebook, codes_for(task["data"])), "lead_time": 30.0},
        )
        assert made.status_code == 201, made.text
    return len(tasks)


def _blind_codes(coder: str):
    def codes(data: dict) -> dict[str, Code]:
        first_words = " ".join(data["abstract"].split()[:6])
        start = data["abstract"].index(first_words)
        evidence = (Span("abstract", start, start + len(first_words), first_words),)
        disputed = data["doc_id"] == DISPUTED and coder == BRUNO
        return {
            "abordagem": Code("quantitativa" if disputed else "qualitativa", evidence),
            "brasil_caso": Code("true", evidence),
            "periodo": Code("nao_informado"),
        }

    return codes


def _start_blind_pass(server, warehouse, ids):
    """The blind pass for Ana and Bruno, after a token Label Studio refuses is turned away with a message
    that names it; each project shows its coder no model answer."""
    from adri_pipeline.classification import rounds

    settings = Settings.load(
        warehouse=warehouse, corpus=SAMPLE_CORPUS, label_studio_url=server.url, label_studio_token=server.token
    )
    refused = Settings.load(
        warehouse=warehouse, corpus=SAMPLE_CORPUS, label_studio_url=server.url, label_studio_token="f" * 40
    )
    with pytest.raises(LabelStudioError, match=r"refused to create a project: HTTP 401.*API token"):
        rounds.start(RunContext.load(refused), "round-1", "blind", [ANA, BRUNO], rounds.read_ids(ids))
    blind = rounds.start(RunContext.load(settings), "round-1", "blind", [ANA, BRUNO], rounds.read_ids(ids))
    assert blind.documents == 10 and [p.coder for p in blind.projects] == [ANA, BRUNO]
    api = httpx.Client(base_url=server.url, headers={"Authorization": f"Token {server.token}"}, timeout=30)
    for project in blind.projects:  # blind: no model answer in the project, none shown
        settings_of = api.get(f"/api/projects/{project.project_id}").json()
        assert settings_of["show_collab_predictions"] is False
        assert all(
            not task.get("predictions") and task.get("total_predictions", 0) == 0
            for task in _tasks(api, project.project_id)
        )
    return settings, blind, api


def _code_the_blind_pass(server, settings, blind) -> None:
    """Dora joins late and gets a project of her own; the review waits until every blind task is coded."""
    from adri_pipeline.classification import rounds

    with pytest.raises(rounds.RoundError, match="already has its blind pass"):
        rounds.start(RunContext.load(settings), "round-1", "blind", [ANA, BRUNO], DOCUMENTS[:2])
    # a coder added later (or a start cut short): only the coder without a project gets one, same documents
    added = rounds.start(RunContext.load(settings), "round-1", "blind", [ANA, BRUNO, DORA], DOCUMENTS[:2])
    assert [p.coder for p in added.projects] == [DORA] and added.documents == 10
    assert _annotate(server, server.others[ANA], blind.projects[0].project_id, _blind_codes(ANA)) == 10
    _annotate(server, server.others[DORA], added.projects[0].project_id, _blind_codes(DORA))
    with pytest.raises(rounds.RoundError, match="10 blind task"):  # Bruno has not coded yet
        rounds.start(RunContext.load(settings), "round-1", "review", [])
    _annotate(server, server.others[BRUNO], blind.projects[1].project_id, _blind_codes(BRUNO))


def _review_and_adjudicate(server, settings, api, screenshot) -> None:
    """The review pass shows the model's answers; the one disputed document goes to Carla, whose last
    annotation is the one that counts."""
    from adri_pipeline.classification import rounds
    from adri_pipeline_tests.label_studio_server import labeling_page

    review = rounds.start(RunContext.load(settings), "round-1", "review", [ANA])
    shown = _tasks(api, review.projects[0].project_id)
    assert len(shown) == 10 and all(task["total_predictions"] == 1 for task in shown)
    # the review pass's page: the model's answer and its evidence pre-filled (docs/images/ has one)
    text, errors = labeling_page(server, review.projects[0].project_id, "abordagem:", screenshot)
    assert not errors, errors
    assert all(f"{name}:" in text for name in ("abordagem", "tecnica", "periodo"))

    adjudication = rounds.start(RunContext.load(settings), "round-1", "adjudication", [CARLA])
    assert adjudication.documents == 1
    disputed = _tasks(api, adjudication.projects[0].project_id)
    assert [t["data"]["doc_id"] for t in disputed] == [DISPUTED]
    assert f"{ANA}: qualitativa" in disputed[0]["data"]["disputes"]
    for decided in ("quantitativa", "mista"):  # Carla's second thought is her last word
        _annotate(
            server,
            server.others[CARLA],
            adjudication.projects[0].project_id,
            lambda data, value=decided: {
                "abordagem": Code(value),
                "brasil_caso": Code("true"),
                "periodo": Code("nao_informado"),
            },
        )


def _assert_the_pulled_codes(pulled) -> None:
    """Three coders' blind codes, the adjudicated variable alone from the third pass, evidence that quotes
    the document literally, and the period, coded with no evidence, waived."""
    codes = pulled.codes
    assert pulled.uncoded_blind_tasks == 0 and pulled.disagreements.height == 1
    blind_codes = codes.filter(pl.col("pass") == "blind")
    assert blind_codes.group_by("coder").len().sort("coder").rows() == [(ANA, 30), (BRUNO, 30), (DORA, 30)]
    assert codes.filter(pl.col("pass") == "adjudication").select("doc_id", "variable", "value").rows() == [
        (DISPUTED, "abordagem", "mista")
    ]  # only the disputed variable is read from the third pass
    documents = {d.doc_id: d for d in as_documents(load_corpus(SAMPLE_CORPUS).documents)}
    quoted = blind_codes.filter(pl.col("variable") == "abordagem").row(0, named=True)
    assert quoted["audit_status"] == "literal" and quoted["span_field"] == "abstract"
    assert (
        documents[quoted["doc_id"]].abstract[quoted["evidence_start"] : quoted["evidence_end"]] == quoted["evidencia"]
    )
    assert set(blind_codes.filter(pl.col("variable") == "periodo")["audit_status"]) == {"waived"}


@pytest.mark.slow
def test_a_round_of_ten_documents_two_coders_and_one_adjudication(tmp_path, capsys):
    from adri_pipeline.classification import rounds
    from adri_pipeline_tests.label_studio_server import label_studio

    warehouse = tmp_path / "wh" / "adri.duckdb"
    ids = tmp_path / "round-1.txt"
    ids.write_text("\n".join(DOCUMENTS) + "\n")
    assert (
        main(["classify", "--corpus", str(SAMPLE_CORPUS), "--backend", "embedded", "--warehouse", str(warehouse)]) == 0
    )  # the principal model the review pass shows
    with label_studio(other_users=(ANA, BRUNO, CARLA, DORA)) as server:
        settings, blind, api = _start_blind_pass(server, warehouse, ids)
        _code_the_blind_pass(server, settings, blind)
        _review_and_adjudicate(server, settings, api, tmp_path / "review.png")
        pulled = rounds.pull(RunContext.load(settings), "round-1")

    _assert_the_pulled_codes(pulled)
    capsys.readouterr()
    assert main(["agree", "--coders", str(pulled.csv), "--warehouse", str(warehouse)]) == 0
    printed = capsys.readouterr().out
    assert "coder vs coder" in printed and "adjudicated" in printed and "literal" in printed
    assert "90.0" in printed  # abordagem: the three coders agree on 9 of 10 documents
