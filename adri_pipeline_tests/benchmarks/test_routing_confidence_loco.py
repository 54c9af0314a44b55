"""benchmarks/routing_confidence_loco.py's catalogue rule: a catalogue is the connected component of the
agent ids its turns name together, and a fold holds whole catalogues, so no agent id a held-out turn names
is named by a turn the candidates were fitted on."""

import importlib.util
from pathlib import Path

import pytest

from adri_pipeline.jev.examples import CanonicalExample

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "routing_confidence_loco.py"


@pytest.fixture(scope="module")
def loco():
    spec = importlib.util.spec_from_file_location("benchmark_routing_confidence_loco", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def turn(i: int, active: str | None, suspended: list[str] = (), spoken: list[str] = ()) -> CanonicalExample:
    """A D2 turn naming `active`, the `suspended` sessions (options too) and agents only its turns name."""
    options = {"continuar_agente_ativo": "continuar", **{f"retomar_sessao:{a}": a for a in suspended}}
    return CanonicalExample(
        id=f"t{i}",
        group_id=f"g{i}",
        task="D2",
        state={
            "active_agent": active,
            "suspended_sessions": list(suspended),
            "recent_turns": [{"role": "agent", "agent_id": a, "text": "ok"} for a in spoken],
        },
        utterance="sim",
        question="?",
        question_type="choice",
        options=options | {"iniciar_novo_agente": "novo", "desambiguar": "perguntar"},
        gold_label="continuar_agente_ativo",
    )


def test_turns_sharing_an_agent_even_through_a_third_are_one_catalogue_and_others_are_not(loco):
    turns = [
        turn(0, "banco", ["cartao"]),  # banco-cartao
        turn(1, "investimentos", spoken=["cartao"]),  # cartao-investimentos: joins the first through cartao
        turn(2, "clima", ["midia"]),  # an exact agent set of its own ...
        turn(3, "midia"),  # ... a subset of it: the same catalogue
        turn(4, "pets"),
        turn(5, None),  # names no agent: a catalogue of its own, by its conversation
    ]
    found = loco.catalogues(turns)
    assert found == {
        "t0": "banco+cartao+investimentos",
        "t1": "banco+cartao+investimentos",
        "t2": "clima+midia",
        "t3": "clima+midia",
        "t4": "pets",
        "t5": "g5",
    }


def test_no_team_catalogue_is_split_across_folds_and_no_agent_is_on_both_sides(loco):
    turns = loco.team_turns()
    catalogue_of = loco.catalogues(turns)
    fold_of = loco.folds(catalogue_of, 5)
    assert len(turns) == 293 + 13 * 120 and len(set(catalogue_of.values())) == 180  # the team's 31, 13 outsiders' 149
    assert set(fold_of) == set(catalogue_of.values()) and set(fold_of.values()) == set(range(5))
    agents_in = {fold: set() for fold in range(5)}
    for example in turns:
        agents_in[fold_of[catalogue_of[example.id]]] |= loco.agents_of(example)
    for fold in range(5):
        assert not agents_in[fold] & set().union(*(agents_in[f] for f in range(5) if f != fold)), fold
    sizes = [sum(fold_of[catalogue_of[e.id]] == f for e in turns) for f in range(5)]
    assert max(sizes) - min(sizes) <= 11, sizes  # balanced to within one team catalogue
    assert loco.folds(catalogue_of, 5) == fold_of  # the seed fixes them


def test_by_author_each_fold_is_one_authors_file_whole(loco):
    turns = loco.team_turns()
    fold_of = loco.fold_by_author(turns)
    files = {path: {e.id for e in loco.located_canonical(Path(path)).examples} for path in loco.TEAM_TRAINING}
    assert set(fold_of) == {e.id for e in turns} and len(set(fold_of.values())) == 14  # the engineer and 13 outsiders
    for path, ids in files.items():
        assert len({fold_of[i] for i in ids}) == 1, path
    team = [p for p in files if Path(p).parent.name == "routing"]
    assert len({fold_of[next(iter(files[p]))] for p in team}) == 1  # one engineer wrote the four team files


def test_each_author_left_out_is_answered_at_the_threshold_the_other_authors_certify(loco):
    """Ten authors of twelve 10-turn catalogues, right wherever confidence is above 0.5: every rule answers the
    turns above 0.5 and at most the 5 % of wrong ones just below. One author whose surest answers are all
    wrong (a convention of its own): left out, it is answered wrongly; among the others, per author the
    threshold rises above its mistakes (9 of 9 authors must stay within 5 %), where per catalogue and turn by
    turn it keeps answering half."""

    def records(wrong_author=None):
        rows = []
        for author in range(10):
            for i in range(120):
                confidence = (i % 60) / 60 + author / 1000
                right = confidence > 0.5 if author != wrong_author else confidence < 0.9
                answer = "continuar_agente_ativo" if right else "desambiguar"
                rows.append(
                    {
                        "fold": author,
                        "catalogue": f"{author}-{i // 10}",
                        "gold": "continuar_agente_ativo",
                        "candidates": {"static-logreg": {"answer": answer, "confidence": confidence}},
                    }
                )
        return rows

    found = loco.certified_per_author(records(), "static-logreg")
    for rule, rows in found.items():
        assert [n for n, _, _ in rows] == [120] * 10
        assert all(0.5 <= answered <= 0.55 + 1e-9 and wrong <= 0.05 + 1e-9 for _, answered, wrong in rows), rule
    hard = loco.certified_per_author(records(wrong_author=3), "static-logreg")
    assert hard["per author"][3][2] > 0.05  # the author with surest answers wrong, left out, is answered wrongly
    assert all(answered < 0.1 for i, (_, answered, _) in enumerate(hard["per author"]) if i != 3)
    assert all(answered >= 0.5 for i, (_, answered, _) in enumerate(hard["per catalogue"]) if i != 3)
    assert "| static-logreg | per author |" in "\n".join(loco.certified_table({"static-logreg": hard}))


def test_d2_sets_per_author_cover_a_new_author_where_pooled_sets_cover_only_on_average(loco):
    """Ten authors of 120 turns whose gold probabilities spread more the higher the author: author a's
    LAC scores are uniform below (a + 1) / 10. Pooled over the other authors' turns, the sets cover the
    turns on average, so every author harder than the mix is left below 90 %; per author (each author's
    own quantile, then the quantile over authors at 90 %), only the hardest author left out falls below
    it, and the questions asked are what that costs."""
    records = [
        {
            "fold": author,
            "gold": "continuar_agente_ativo",
            "candidates": {
                "static-logreg": {
                    "probabilities": {
                        "continuar_agente_ativo": 1 - (author + 1) / 10 * i / 120,
                        "desambiguar": (author + 1) / 10 * i / 120,
                    }
                }
            },
        }
        for author in range(10)
        for i in range(120)
    ]
    found = loco.sets_per_author(records, "static-logreg")
    below = {rule: [a for a, (_, covered, _) in enumerate(rows) if covered < 0.9] for rule, rows in found.items()}
    assert below["per author"] == [9]
    assert len(below["pooled over turns"]) >= 4 and 9 in below["pooled over turns"]
    asked = {rule: sum(a for _, _, a in rows) for rule, rows in found.items()}
    assert asked["per author"] > asked["pooled over turns"]
    assert "| static-logreg | per author |" in "\n".join(loco.sets_table({"static-logreg": found}))
