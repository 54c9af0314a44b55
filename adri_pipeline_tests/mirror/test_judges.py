"""Judges: labels from a file or the log's truth; two Ollama judges must come from different families."""

import json

import pytest

from adri_pipeline.config import Settings
from adri_pipeline.mirror.gate_config import DecisionPoint
from adri_pipeline.mirror.judges import FileJudge, JudgeConfigError, make_judges
from loopback.model_server import ModelServerStub

POINT = DecisionPoint(kind="judgment", question="Pode?", options={"sim": "sim", "nao": "não"})


def test_a_label_file_labels_only_its_cases_and_never_falls_back_to_the_logs_truth(tmp_path):
    """It used to answer the log's `truth` for a case it lacks: a second copy of the log's labels
    counted as an independent judge."""
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"state_hash": "h1", "label": "nao"}) + "\n")
    judge = FileJudge("file", labels)
    assert judge.label(POINT, {"state_hash": "h1", "truth": "sim"}) == "nao"
    assert judge.label(POINT, {"state_hash": "h2", "truth": "sim"}) is None
    assert FileJudge("truth").label(POINT, {"state_hash": "h1", "truth": "sim"}) == "sim"


def test_only_independent_declared_sources_can_support_a_promotion(tmp_path):
    """Two models of different families, or label files each naming its one annotator (two annotators,
    two contents); never the log's labels, the same file twice, or files naming no annotator."""
    from adri_pipeline.mirror.judges import promotion_blocker

    def labels(name, annotator, labels=("sim", "nao")):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(
            "".join(
                json.dumps({"state_hash": f"h{i}", "label": label, **({"annotator": annotator} if annotator else {})})
                + "\n"
                for i, label in enumerate(labels)
            )
        )
        return path

    ana, bia = labels("ana", "ana"), labels("bia", "bia", ("sim", "sim"))
    assert "one label source" in promotion_blocker("truth")
    assert promotion_blocker(f"{ana},{bia}") is None
    assert "one source" in promotion_blocker(f"{ana},{ana}")
    assert "one source" in promotion_blocker(f"{ana},{labels('ana2', 'ana', ('nao', 'nao'))}")
    assert "name no single annotator" in promotion_blocker(f"{ana},{labels('anon', None)}")
    assert promotion_blocker("ollama:qwen2.5:7b,openai:gemma3:4b") is None


@pytest.mark.parametrize(
    "spec, says",
    [
        ("ollama:qwen2.5:7b,ollama:qwen2.5:14b", "same model family"),
        ("ollama:qwen2.5:7b,openai:qwen2.5:14b", "same model family"),  # the family, not the server, decides
        ("ollama:qwen2.5:7b", "two judges"),
        ("gpt:x,gpt:y", "neither"),
    ],
)
def test_judges_of_one_family_or_an_unknown_spec_are_refused(spec, says):
    with ModelServerStub(models=("qwen2.5:7b", "qwen2.5:14b")) as stub:
        with pytest.raises(JudgeConfigError, match=says):
            make_judges(spec, Settings(ollama_hosts=[stub.host], openai_hosts=[stub.host + "/v1"]))


def test_a_judge_whose_server_is_down_is_named():
    with pytest.raises(JudgeConfigError, match="cannot say what model it serves"):
        make_judges("ollama:qwen2.5:7b,openai:gemma", Settings(ollama_hosts=["http://127.0.0.1:9"]))


@pytest.mark.parametrize(
    "answer, label",
    [
        ({"resposta": {"valor": "sim"}}, None),
        ({"resposta": ["sim"]}, None),
        ({"resposta": "talvez"}, None),
        ({"resposta": "sim"}, "sim"),
    ],
)
def test_a_judge_answer_that_is_not_one_of_the_options_is_no_label(answer, label):
    """Failed before: {"resposta": {...}} crashed `adri mirror evaluate` (unhashable type: 'dict')."""
    from adri_pipeline.mirror.judges import LLMJudge

    with ModelServerStub(models=("qwen2.5:7b",), responder=lambda request: json.dumps(answer)) as stub:
        judge = LLMJudge("ollama:qwen2.5:7b", Settings(ollama_hosts=[stub.host]))
        assert judge.label(POINT, {"state": {"pagina": 1}, "state_hash": "h"}) == label
