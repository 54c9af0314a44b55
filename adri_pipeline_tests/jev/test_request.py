"""The pydantic model `adri routing serve` validates requests with says what the published schema
(contracts/jev/schemas/request.schema.json) says: the same requests accepted, the same refused."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from adri_pipeline.jev.contract import schema_errors
from adri_pipeline.jev.request import parse_request

VALID = {
    "model": "jev-latest",
    "state": "Mensagem: olá",
    "questions": {
        "a": {"type": "choice", "instructions": "Qual?", "criteria": {"x": "um", "y": None}},
        "b": {"type": "noul", "criteria": {"true": "sim", "false": None}},
        "c": {"type": "score", "criteria": ["baixo", {"nivel": 2}, ["alto"]]},
    },
}
PLACES = [
    (),
    ("questions",),
    ("questions", "a"),
    ("questions", "a", "criteria"),
    ("questions", "b"),
    ("questions", "b", "criteria"),
    ("questions", "c"),
    ("questions", "c", "criteria"),
]
KEYS = st.sampled_from(["model", "state", "questions", "type", "criteria", "instructions", "true", "x", "", "extra"])
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5) | st.sampled_from(["noul", "choice", "score"]),
    lambda inner: st.lists(inner, max_size=12) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(place=st.sampled_from(PLACES), key=KEYS, value=VALUES | st.just(...))
def test_the_model_accepts_exactly_what_the_schema_accepts(place, key, value):
    request = json.loads(json.dumps(VALID))
    where = request
    for step in place:
        where = where[step]
    if isinstance(where, dict):
        where.pop(key, None) if value is ... else where.__setitem__(key, value)
    parsed, errors = parse_request(json.dumps(request).encode())
    assert (parsed is not None) == (not schema_errors("request", request)), (request, errors)


def test_every_refusal_names_its_place_in_the_body():
    _, errors = parse_request(json.dumps({**VALID, "questions": {"a": {"type": "score", "criteria": []}}}).encode())
    assert errors and errors[0]["loc"][:3] == ["body", "questions", "a"]
