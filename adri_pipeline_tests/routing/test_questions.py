"""Every task's question carries its decision rule to the candidate."""


def test_every_task_sends_its_decision_rule_and_a_ruleless_team_question_is_a_departure(tmp_path):
    """The JEV design, task 21: "Cada tarefa tem pergunta, opções com descrição e regra de decisão";
    D1, D3, D4 and D5 went out with a question alone."""
    from adri_pipeline.jev.serialize import to_request
    from adri_pipeline.routing.datasets import build
    from adri_pipeline.routing.departures import departures
    from adri_pipeline.routing.protocol import RunConfig
    from adri_pipeline_tests.routing.helpers import line, write

    dataset = build(RunConfig(dataset="sample"))
    seen = set()
    for example in dataset.examples:
        questions = to_request(example)["questions"].values()
        if example.task == "D4":
            assert all("mesmo que peça outras" in q["criteria"]["true"] for q in questions)
        else:
            assert all("Regra:" in q["instructions"] for q in questions), example.task
        if example.task == "D2":  # the design's own words reach the candidate, not only the constant
            assert all("mesmo que seja curto" in q["instructions"] for q in questions)
        seen.add(example.task)
    assert seen >= {"D1", "D2", "D3", "D4"}
    assert not any("no decision rule" in d for d in departures(dataset, RunConfig(dataset="sample"), {}))

    team = build(RunConfig(dataset=str(write(tmp_path / "t.jsonl", [line(i) for i in range(12)]))), tmp_path)
    assert any("questions of D2 state no decision rule" in d for d in departures(team, RunConfig(), {}))
