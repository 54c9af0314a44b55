"""The temperature fit (routing/calibration.py) on a candidate whose logits are fixed."""

import numpy as np

from adri_pipeline.routing.calibration import Calibrated
from adri_pipeline_tests.routing.helpers import Fixed, PrefersTheSecond, TwoMessages


def _fit(n: int, right: float) -> float:
    calibrated = Calibrated(Fixed())
    golds = ["a" if i < round(n * right) else "b" for i in range(n)]
    requests = [
        {"state": f"Mensagem: {i}", "questions": {"D2": {"type": "choice", "criteria": {"a": "", "b": ""}}}}
        for i in range(n)
    ]
    calibrated.fit_temperature(requests, golds, ["D2"] * n)
    return calibrated.temperature["D2"]


def test_a_small_calibration_split_the_model_got_all_right_does_not_make_it_near_certain():
    """Plain NLL on 19 right answers drives T to its 0.005 floor (p = 1.0 on every later answer); the
    prior on log T keeps it near 1."""
    assert 0.3 < _fit(19, 1.0) < 1.0


def test_with_many_answers_the_data_decide_the_temperature():
    """On 2,000 answers right 73 % of the time, the margin 2 should read p = 0.73: T ~ 2 / logit(0.73)."""
    expected = 2.0 / np.log(0.73 / 0.27)
    assert abs(_fit(2000, 0.73) - expected) < 0.05


def test_a_foreign_message_lowers_the_confidence_and_keeps_the_models_answer():
    """Failed before: the most foreign message's probabilities were blended all the way to uniform, every
    option tied and the first listed became the answer (Familiarity.FOREIGN)."""
    from adri_pipeline.routing.calibration import Familiarity

    calibrated = Calibrated(PrefersTheSecond())
    calibrated.familiarity = Familiarity(TwoMessages(), ["familiar"], ["familiar"])
    question = {"type": "choice", "criteria": {"a": "", "b": ""}}

    def answer(message: str) -> dict:
        response, _ = calibrated.respond({"state": f"Mensagem: {message}", "questions": {"D2": question}}, "D2")
        return response["answers"]["D2"]

    familiar, foreign = answer("familiar"), answer("foreign")
    assert familiar["choice"] == "b" and np.isclose(familiar["probabilities"]["b"], 0.8808, atol=1e-4)
    assert foreign["choice"] == "b" and np.isclose(foreign["probabilities"]["b"], 0.5, atol=1e-4)
