import pytest

from adri_pipeline.routing.composition import build_dataset
from adri_pipeline.routing.datasets import build, load_source
from adri_pipeline.routing.protocol import RunConfig
from adri_pipeline.routing.splits import (
    FROZEN_DIR,
    FrozenSplitChanged,
    assign_splits,
    check_frozen,
    leaking_groups,
)
from adri_pipeline_tests.conftest import shared


@pytest.fixture
def sample_examples():
    utterances, descriptions = load_source("sample")
    return build_dataset(utterances, descriptions, "sample")[0]


def test_no_group_in_two_splits_and_every_split_used(sample_examples):
    split_of = assign_splits(sample_examples, seed=7)
    assert not leaking_groups(sample_examples, split_of)
    assert set(split_of.values()) == {"dev", "calibration", "test"}


def test_no_utterance_reaches_two_splits_whatever_task_it_feeds():
    """Composed conversations reuse utterances: they are composed within a split, never across."""
    utterances, descriptions = load_source("sample")
    examples, split_of = build_dataset(utterances, descriptions, "sample")
    splits_of_text: dict[str, set[str]] = {}
    for e in examples:
        texts = [e.utterance] + [t.text for t in e.state.recent_turns if t.role == "user"]
        for text in texts:
            if len(text.split()) > 3:  # the short replies are shared on purpose
                splits_of_text.setdefault(text, set()).add(split_of[e.id])
    assert splits_of_text and all(len(s) == 1 for s in splits_of_text.values())


def test_leak_detection_sees_a_group_split_apart(sample_examples):
    split_of = assign_splits(sample_examples, seed=7)
    victim = sample_examples[0]
    twin = next(e for e in sample_examples if e.group_id == victim.group_id and e.id != victim.id)
    split_of[twin.id] = "test" if split_of[victim.id] != "test" else "dev"
    assert leaking_groups(sample_examples, split_of) == {victim.group_id}


def test_frozen_hash_fails_loudly_when_the_test_split_changes(sample_examples, tmp_path):
    split_of = assign_splits(sample_examples, seed=7)
    test = [e for e in sample_examples if split_of[e.id] == "test"]
    digest = check_frozen("sample", test, tmp_path, reference_dir=tmp_path / "reference")
    assert (tmp_path / "sample.test.sha256").read_text().startswith(digest)
    assert check_frozen("sample", test, tmp_path, reference_dir=tmp_path / "reference") == digest  # unchanged: passes
    edited = [test[0].model_copy(update={"utterance": test[0].utterance + "!"}), *test[1:]]
    with pytest.raises(FrozenSplitChanged, match="test split of 'sample' changed"):
        check_frozen("sample", edited, tmp_path, reference_dir=tmp_path / "reference")
    with pytest.raises(FrozenSplitChanged):
        check_frozen("sample", test[1:], tmp_path, reference_dir=tmp_path / "reference")


def test_repository_records_the_frozen_splits_composition_produces():
    assert build(RunConfig(dataset="sample")).test_hash  # raises if it drifted from contracts/jev/frozen
    shared("routing/ohf_intents")
    recorded = (FROZEN_DIR / "ha-pt-BR.test.sha256").read_text().split()[0]
    assert build(RunConfig(dataset="ha-pt-BR")).test_hash == recorded


def test_splits_spread_every_stratum_not_only_the_gold_label():
    """Failed before (stratified by gold label only): one label, and 10 of 50 conversations long,
    active-agent ones; the JEV design stratifies by length, ambiguity, turn position and sessions too."""
    from adri_pipeline.jev.examples import CanonicalExample, Metadata, State

    def example(i: int) -> CanonicalExample:
        special = i % 5 == 0
        return CanonicalExample(
            id=f"e{i}",
            group_id=f"g{i}",
            task="D2",
            state=State(active_agent="a" if special else None),
            utterance="x",
            question="q",
            question_type="choice",
            options={"continuar_agente_ativo": "c"},
            gold_label="continuar_agente_ativo",
            metadata=Metadata(length_bucket="longo" if special else "curto", turn_index=6 if special else 1),
        )

    examples = [example(i) for i in range(50)]
    for seed in range(5):
        split_of = assign_splits(examples, seed=seed)
        special = [split_of[e.id] for e in examples if e.metadata.length_bucket == "longo"]
        assert {s: special.count(s) for s in ("test", "calibration", "dev")} == {"test": 2, "calibration": 2, "dev": 6}


def test_composed_conversations_share_class_ambiguity_and_turn_position_alike_in_every_split():
    """The JEV design stratifies every example by the six strata; composed D2 turns were drawn at
    random within each split (the sample's calibration split had 5 % `desambiguar` against 16 % in
    test). Dealt, each split's count of a stratum value is its share, to within one example per
    dealt (kind, sessions) pair it sums."""
    from collections import Counter

    from adri_pipeline.routing.composition import BARE_COMMAND_KINDS, TURN_KINDS

    dataset = build(RunConfig(dataset="sample", extra_training=[]))  # the composition's own shares
    kinds = TURN_KINDS | BARE_COMMAND_KINDS
    share = {
        "desambiguar": (kinds["ambigua"] + kinds["comando_solto"]) / sum(kinds.values()),
        "iniciar_novo_agente": kinds["novo"] / sum(kinds.values()),
        "continuar_agente_ativo": (kinds["continuar"] + kinds["resposta_curta"]) / sum(kinds.values()),
    }
    for split in ("dev", "calibration", "test"):
        d2 = [e for e in dataset.in_split(split) if e.task == "D2"]
        classes = Counter(e.gold_label.split(":")[0] for e in d2)
        for gold, expected in share.items():
            assert abs(classes[gold] - expected * len(d2)) <= 2, (split, gold, classes[gold], len(d2))
        late = sum(len(e.state.suspended_sessions) == 2 for e in d2)
        assert abs(late - len(d2) / 2) <= 1, (split, late, len(d2))
