"""Judges: labels from a file or the log's truth; two Ollama judges must come from different families."""

import json

import pytest

from adri_pipeline.mirror.gate import DecisionPoint
from adri_pipeline.mirror.judges import FileJudge, JudgeConfigError, make_judges

POINT = DecisionPoint(question="Pode?", options={"sim": "sim", "nao": "não"})


def test_a_label_file_wins_over_the_logs_truth(tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"state_hash": "h1", "label": "nao"}) + "\n")
    judge = FileJudge("file", labels)
    assert judge.label(POINT, {"state_hash": "h1", "truth": "sim"}) == "nao"
    assert judge.label(POINT, {"state_hash": "h2", "truth": "sim"}) == "sim"
    assert FileJudge("truth").label(POINT, {"state_hash": "h1", "truth": "sim"}) == "sim"


@pytest.mark.parametrize("spec", ["ollama:qwen2.5:7b,ollama:qwen2.5:14b", "ollama:qwen2.5:7b", "gpt:x,gpt:y"])
def test_judges_of_one_family_or_an_unknown_spec_are_refused(spec):
    with pytest.raises(JudgeConfigError):
        make_judges(spec, "http://127.0.0.1:9")
