"""The freeze between calibration and the final test (routing/freeze.py): what answers the test is
what was written down, and every test split is hashed beside the warehouse, never in the package."""

import json

import pytest

from adri_pipeline.config import CONTRACTS, Settings
from adri_pipeline.routing.calibration import Calibrated
from adri_pipeline.routing.candidates import Candidate, Kind
from adri_pipeline.routing.datasets import build, frozen_folder, with_external_test
from adri_pipeline.routing.freeze import FrozenStateChanged, check_freeze, freeze
from adri_pipeline.routing.protocol import RunConfig
from adri_pipeline.routing.service import build_examples
from adri_pipeline.routing.splits import FrozenSplitChanged
from adri_pipeline_tests.routing.helpers import line, write


class FirstOption(Candidate):
    """Prefers the first option by `margin`: a fitted state small enough to read."""

    kind = Kind(role="candidate", trains=True, batching="in_process", confidence="test")

    def __init__(self):
        self.name, self.margin = "first-option", 1.0

    def logits(self, request):
        return {
            q: {o: (self.margin if i == 0 else 0.0) for i, o in enumerate(spec["criteria"])}
            for q, spec in request["questions"].items()
        }


def test_the_final_test_refuses_a_state_that_changed_after_the_freeze(tmp_path):
    calibrated = Calibrated(FirstOption())
    calibrated.temperature = {"D1": 1.5}
    thresholds = {"D1": 0.7}
    record = freeze(calibrated, thresholds, "ab" * 32, tmp_path)
    assert check_freeze(record, calibrated, thresholds, "ab" * 32).thresholds == thresholds

    with pytest.raises(FrozenStateChanged, match="thresholds changed after the freeze"):
        check_freeze(record, calibrated, {"D1": 0.5}, "ab" * 32)  # a threshold tuned after the freeze
    with pytest.raises(FrozenStateChanged, match="test_split_sha256"):
        check_freeze(record, calibrated, thresholds, "cd" * 32)
    calibrated.candidate.margin = 2.0  # refitted after the freeze: its artifact differs
    with pytest.raises(FrozenStateChanged, match="artifact_sha256"):
        check_freeze(record, calibrated, thresholds, "ab" * 32)
    calibrated.candidate.margin = 1.0
    edited = json.loads(record.read_text()) | {"temperature": {"D1": 1.0}}  # the record edited on disk
    record.write_text(json.dumps(edited))
    with pytest.raises(FrozenStateChanged, match="temperature"):
        check_freeze(record, calibrated, thresholds, "ab" * 32)


def test_a_later_evaluation_is_compared_with_the_candidates_earlier_freeze(tmp_path):
    """Failed before: the record was written and checked in the same call, so a later run that fitted
    another state overwrote it and nothing compared the two."""
    calibrated = Calibrated(FirstOption())
    calibrated.temperature = {"D1": 1.5}
    first = freeze(calibrated, {"D1": 0.7}, "ab" * 32, tmp_path)
    frozen = first.read_text()
    assert freeze(calibrated, {"D1": 0.7}, "ab" * 32, tmp_path) == first  # the same state: accepted
    calibrated.temperature = {"D1": 1.25}  # refitted on other data since
    with pytest.raises(FrozenStateChanged, match=r"temperatures changed since it was frozen on .*1\.5.*1\.25"):
        freeze(calibrated, {"D1": 0.7}, "ab" * 32, tmp_path)
    calibrated.temperature = {"D1": 1.5}
    with pytest.raises(FrozenStateChanged, match="'s test split changed"):
        freeze(calibrated, {"D1": 0.7}, "cd" * 32, tmp_path)
    assert first.read_text() == frozen  # a refused evaluation leaves the record as it was
    first.unlink()  # deleted on purpose: frozen anew
    assert freeze(calibrated, {"D1": 0.7}, "ab" * 32, tmp_path).exists()


def test_a_teams_file_and_a_test_file_are_hashed_beside_the_warehouse_not_in_the_package(tmp_path):
    golds = ["continuar_agente_ativo", "iniciar_novo_agente"]
    team = write(tmp_path / "equipe.jsonl", [line(i, gold=golds[i % 2]) for i in range(30)])
    settings = Settings(warehouse=tmp_path / "w" / "adri.duckdb", routing_dataset=str(team))
    dataset = build_examples(settings)
    record = frozen_folder(tmp_path / "w") / "file-equipe.test.sha256"
    assert record.read_text().split()[0] == dataset.test_hash
    assert not (CONTRACTS / "jev" / "frozen" / "file-equipe.test.sha256").exists()

    external = write(
        tmp_path / "outro.jsonl", [line(i, gold=golds[i % 2]) | {"id": f"x{i}", "group_id": f"gx{i}"} for i in range(6)]
    )
    from adri_pipeline.routing.canonical import located_canonical

    on_external = with_external_test(dataset, located_canonical(external), "file-outro", frozen_folder(tmp_path / "w"))
    assert (frozen_folder(tmp_path / "w") / "file-outro.test.sha256").read_text().startswith(on_external.test_hash)
    rows = [line(i, gold=golds[i % 2]) | {"id": f"x{i}", "group_id": f"gx{i}"} for i in range(6)]
    rows[0]["utterance"] = "mudei depois de ver o resultado"
    write(external, rows)  # the test file changed after it was first used
    with pytest.raises(FrozenSplitChanged, match="test split of 'file-outro' changed"):
        with_external_test(dataset, located_canonical(external), "file-outro", frozen_folder(tmp_path / "w"))


def test_personal_data_in_a_message_never_reaches_a_candidate(tmp_path):
    """The JEV design's sources are anonymized: the mirror's redactor runs on every message and turn."""
    golds = ["continuar_agente_ativo", "iniciar_novo_agente"]
    rows = [line(i, gold=golds[i % 2]) for i in range(30)]
    rows[3]["utterance"] = "meu cpf é 123.456.789-09 e o e-mail ana@exemplo.com.br"
    rows[4]["state"] = rows[4]["state"] | {"recent_turns": [{"role": "user", "text": "liga pra 11 98765-4321"}]}
    dataset = build(
        RunConfig(dataset=str(write(tmp_path / "equipe.jsonl", rows)), extra_training=[]), tmp_path / "frozen"
    )
    by_id = {e.id: e for e in dataset.examples}
    assert by_id[rows[3]["id"]].utterance == "meu cpf é [CPF] e o e-mail [EMAIL]"
    assert by_id[rows[4]["id"]].state.recent_turns[0].text == "liga pra [TELEFONE]"
    assert dataset.anonymized == 2
    from adri_pipeline.jev.serialize import to_request

    sent = json.dumps([to_request(e) for e in dataset.examples], ensure_ascii=False)  # what every candidate gets
    assert "123.456.789-09" not in sent and "ana@exemplo" not in sent and "98765-4321" not in sent
