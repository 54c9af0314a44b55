"""A hostile check of the one redactor (adri_pipeline/privacy.py): states full of personal data are
written through every documented path — the gate and its shadow log, a task record, a line the
evaluation quarantines, `adri mirror evaluate` with two model judges on a loopback server, the
routing datasets' anonymization — and no datum is found in the clear in any table, file, stdout or
judge request. Only the mirror's own request carries the fields its point exposes."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import re
import tempfile
import unicodedata
from pathlib import Path

import duckdb
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from adri_pipeline.privacy import Redactor, valid_cnpj, valid_cpf

LISTED = ["João Souza", "Maria Conceição Silva"]  # the gate configuration's redact_names
# names listed nowhere: common Portuguese first names, and rare or foreign names the detector finds by
# its international lists (a first name, or a known surname ending the run)
DETECTED = [
    "Ana Paula",
    "Carlos Eduardo Lima",
    "Beatriz",
    "Miguel",
    "Deusdete Ferreira",
    "Hiroshi Tanaka",
    "Wojciech Kowalski",
]


def digits(n):
    return st.text(alphabet="0123456789", min_size=n, max_size=n)


@st.composite
def cpf(draw):
    body = draw(digits(9).filter(lambda d: len(set(d)) > 1))
    for weights in (range(10, 1, -1), range(11, 1, -1)):
        remainder = sum(int(d) * w for d, w in zip(body, weights)) % 11
        body += str(0 if remainder < 2 else 11 - remainder)
    assert valid_cpf(body)
    a, b, c, d = body[:3], body[3:6], body[6:9], body[9:]
    return draw(
        st.sampled_from(
            [f"{a}.{b}.{c}-{d}", f"{a}{b}{c}{d}", f"{a} {b} {c} {d}", f"cpf{a}{b}{c}{d}", f"face{a}{b}{c}{d}ab"]
        )
    )  # glued, inside a hex-looking token


@st.composite
def cnpj(draw):
    body = draw(digits(12).filter(lambda d: len(set(d)) > 1))
    for weights in ([5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2], [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2]):
        remainder = sum(int(d) * w for d, w in zip(body, weights)) % 11
        body += str(0 if remainder < 2 else 11 - remainder)
    assert valid_cnpj(body)
    return draw(st.sampled_from([f"{body[:2]}.{body[2:5]}.{body[5:8]}/{body[8:12]}-{body[12:]}", body]))


@st.composite
def phone(draw):
    number = f"9{draw(digits(4))}{draw(st.sampled_from(['', '-', ' ']))}{draw(digits(4))}"
    return draw(st.sampled_from(["", "(21) ", "+55 11 ", "tel", "whats:"])) + number  # "tel987654321": glued


@st.composite
def email(draw):
    user = draw(st.text(alphabet="abcdefghij.", min_size=1, max_size=8).filter(lambda s: s.strip(".")))
    return f"{user.strip('.')}@{draw(st.sampled_from(['x.org', 'exemplo.com.br']))}"


def _unaccented(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))


@st.composite
def listed_name(draw):
    """A listed name as people write it: any case, with or without accents, any run of whitespace."""
    name = draw(st.sampled_from(LISTED))
    name = draw(st.sampled_from([name, name.upper(), name.lower(), _unaccented(name), _unaccented(name).lower()]))
    return draw(st.sampled_from([" ", "  ", "\n", "\t "])).join(name.split())


PERSONAL = st.one_of(cpf(), cnpj(), phone(), email(), listed_name(), st.sampled_from(DETECTED))


def in_the_clear(value: str, text: str) -> bool:
    """The datum, or its digits, or (a name) its words in any case, accents and spacing, in `text`."""
    digits = re.sub(r"\D", "", value)
    if re.search(r"\d{8}", digits):
        # its digits in any formatting (dots, dashes, slashes, spaces, parentheses between them), but a whole
        # number, not the inside of a longer one: "900000000" is not in the clear in a score 0.9000000000000001
        formatted = r"[\s.\-/()]*".join(digits)
        return bool(re.search(rf"(?<!\d){formatted}(?!\d)", text.replace("\\n", " ")))
    if "@" in value:
        return value in text
    return " ".join(_unaccented(value).lower().split()) in _plain(text)


@functools.lru_cache(maxsize=32)
def _plain(text: str) -> str:
    """A place's text as names are compared in it: no accents, lower case, one space (made once per place,
    not once per value looked for)."""
    return " ".join(_unaccented(text.replace("\\n", " ").replace("\\t", " ")).lower().split())


def warehouse_text(path: Path) -> str:
    with duckdb.connect(str(path), read_only=True) as db:
        tables = [t for (t,) in db.execute("select table_name from information_schema.tables").fetchall()]
        return "\n".join(str(db.execute(f'select * from "{t}"').fetchall()) for t in tables)


def _gate_config(folder: Path):
    """Two points over the same states: p exposes one field to its mirror, q none, and the names listed
    are redacted; the configuration's path and the configuration loaded from it."""
    from adri_pipeline.mirror.gate_config import load_gate_config

    config_path = folder / "gate.yaml"
    point = {
        "kind": "judgment",
        "question": "Transferir?",
        "question_type": "noul",
        "options": {"sim": "s", "nao": "n"},
        "mode": "shadow",
        "expose_fields": ["exposto"],
    }
    config_path.write_text(
        yaml.safe_dump(
            {"points": {"p": point, "q": {**point, "expose_fields": []}}, "redact_names": LISTED}, allow_unicode=True
        ),
        encoding="utf-8",
    )
    return config_path, load_gate_config(config_path)


def _through_the_gate(config, log_path: Path, exposed_value, hidden_field: dict, answered: str, written: str):
    """Every way a datum reaches the gate: in the states both points decide on, in a rule's answer and in a
    task's output. The requests the mirror received and the log as the gate wrote it, before two lines
    the evaluation must quarantine are appended to it."""
    from adri_pipeline.mirror.gate import Gate
    from adri_pipeline.mirror.shadow_log import ShadowLog

    mirror_requests = []

    def mirror(request):
        mirror_requests.append(request)
        return {
            "model": "m",
            "usage": {"input_tokens": 1, "output_tokens": 0},
            "answers": {n: {"type": "noul", "noul": 0.2} for n in request["questions"]},
        }

    rules = {"p": lambda s: "sim", "q": lambda s: answered if s.get("responder") else "sim"}
    gate = Gate(config, rules, {"p": mirror, "q": mirror}, ShadowLog(log_path), run_id="r1")
    states = [{"exposto": exposed_value, **hidden_field, "n": i} for i in range(3)]
    for state in states:
        gate.decide_many(state, ["p", "q"])
    gate.decide("q", {"responder": True, **hidden_field})  # the rule answers with a personal datum
    gate.task_finished("t1", 1.0, output=f"resumo para {written}")
    gate.close()
    as_the_gate_wrote_it = log_path.read_text(encoding="utf-8")
    with log_path.open("a", encoding="utf-8") as log:  # two lines the evaluation must quarantine
        log.write(json.dumps({"decision_point": "p", "state": {"x": written}}, ensure_ascii=False) + "\n")
        log.write(f"not json {written}\n")
    return mirror_requests, as_the_gate_wrote_it


def _as_the_evaluation_reads_it(config, log_path: Path) -> dict[str, str]:
    """The records kept and the lines quarantined, each redacted: what the warehouse stores and the judges read."""
    from adri_pipeline.mirror.shadow_log import read_log

    options = {name: list(p.options) for name, p in config.points.items()}
    kept, quarantined = read_log(log_path, config.redactor(), options)
    assert quarantined, "the hostile lines were not quarantined: the check would prove less"
    return {
        "records read": json.dumps([r.model_dump(mode="json") for r in kept], ensure_ascii=False),
        "lines quarantined": json.dumps(quarantined, ensure_ascii=False),
    }


# 200 examples each write through the gate and read the log back as the evaluation does, in process
# (~0.15 s each): the records kept and the lines quarantined are what the warehouse stores and the judges
# read. The whole documented path (`adri mirror evaluate`, its warehouse, two judges on loopback, ~3 s each)
# runs for the explicit examples below, one per position, every kind of datum among them.
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(PERSONAL, min_size=4, max_size=4, unique=True),
    st.sampled_from(["value", "key", "nested", "number"]),
    st.just(False),
)
@example(["900000000", "00.100.000/0008-30", "João Souza", "Ana Paula"], "number", True)  # failed in CI: a CNPJ
@example(["ana@x.org", "123.456.789-09", "(21) 98765-4321", "Deusdete Ferreira"], "value", True)  # as a number
@example(["Hiroshi Tanaka", "maria  conceição SILVA", "face12345678909ab", "tel987654321"], "key", True)
@example(["12.345.678/0001-95", "Wojciech Kowalski", "joao souza", "+55 11 3333-4444"], "nested", True)
# a low-entropy number inside the scores the evaluation writes (0.9000000000000001) is not a leak
@example(["900000000", "00.100.000/0008-30", "João Souza", "Ana Paula"], "number", True)
def test_no_personal_datum_leaves_by_any_documented_path(values, position, through_the_cli):
    exposed_value, hidden, answered, written = values
    as_number = int(re.sub(r"\D", "", hidden)) if re.fullmatch(r"[\d.\-/ ]+", hidden) else hidden
    hidden_field = {
        "value": {"cliente": f"fala com {hidden} hoje"},
        "key": {hidden: "sim"},
        "nested": {"historico": [{"texto": [f"({hidden})"]}]},
        "number": {"doc": as_number},
    }[position]
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        config_path, config = _gate_config(folder)
        log_path = folder / "shadow.jsonl"
        mirror_requests, as_the_gate_wrote_it = _through_the_gate(
            config, log_path, exposed_value, hidden_field, answered, written
        )
        places = {
            "mirror requests but the exposed field": json.dumps(mirror_requests, ensure_ascii=False).replace(
                json.dumps(exposed_value, ensure_ascii=False)[1:-1], ""
            )
        }
        if through_the_cli:
            places |= _through_adri_mirror_evaluate(folder, log_path, config_path)
        else:  # what the evaluation reads: the records kept and the lines quarantined, each redacted
            places |= _as_the_evaluation_reads_it(config, log_path)
        places[log_path.name] = as_the_gate_wrote_it  # the hostile lines appended after it are the test's own
        written_as = [str(as_number)] if position == "number" and as_number != hidden else []  # leading zeros gone
        for value in [*values, *written_as]:
            leaks = [where for where, text in places.items() if in_the_clear(value, text)]
            assert not leaks, f"{value!r} in the clear in {leaks}"
        assert any(
            json.dumps(exposed_value, ensure_ascii=False)[1:-1] in json.dumps(r, ensure_ascii=False)
            for r in mirror_requests
        )  # the point's choice: its mirror reads the exposed field


def _through_adri_mirror_evaluate(folder: Path, log_path: Path, config_path: Path) -> dict[str, str]:
    """`adri mirror evaluate` over the log with two model judges on loopback: what it printed, what the
    judges were asked, the warehouse and every file it wrote."""
    from adri_pipeline.cli import main
    from loopback.model_server import ModelServerStub

    with ModelServerStub(
        models=("qwen2.5:7b", "gemma3:4b"), responder=lambda request: json.dumps({"resposta": "nao"})
    ) as judges:
        stdout = io.StringIO()
        environment = {"ADRI_OLLAMA_HOSTS": judges.host, "ADRI_WAREHOUSE": str(folder / "w.duckdb")}
        saved = {k: os.environ.get(k) for k in environment}
        os.environ.update(environment)
        try:
            with contextlib.redirect_stdout(stdout):
                assert (
                    main(
                        [
                            "mirror",
                            "evaluate",
                            "--log",
                            str(log_path),
                            "--config",
                            str(config_path),
                            "--judges",
                            "ollama:qwen2.5:7b,ollama:gemma3:4b",
                        ]
                    )
                    == 0
                )
        finally:
            for key, value in saved.items():
                os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)
        judge_requests = json.dumps(judges.chats(), ensure_ascii=False)
    assert judges.chats(), "the judges were asked nothing: the check would prove nothing"
    places = {
        "stdout": stdout.getvalue(),
        "judge requests": judge_requests,
        "warehouse": warehouse_text(folder / "w.duckdb"),
    }
    places |= {
        p.name: p.read_text(encoding="utf-8")
        for p in folder.rglob("*")
        if p.is_file() and p.suffix in (".jsonl", ".json", ".yaml", ".html", ".csv") and p != config_path
    }
    assert (
        "recommended_gate.yaml" in places and "shadow.quarantine.jsonl" in places and "mirror_evaluation.json" in places
    )
    return places


@functools.cache
def _a_sample_example():
    """Built once: the sample's build takes a quarter of a second, and each example below copies it."""
    from adri_pipeline.routing.datasets import build
    from adri_pipeline.routing.protocol import RunConfig

    return build(RunConfig(dataset="sample")).examples[0]


@settings(max_examples=30, deadline=None)
@given(PERSONAL, PERSONAL)
def test_routing_datasets_are_anonymized_of_names_and_numbers(in_message, in_turn):
    from adri_pipeline.routing.datasets import anonymized

    example = _a_sample_example()
    turns = example.state.recent_turns
    example = example.model_copy(
        update={
            "utterance": f"oi, {in_message} aqui",
            "state": example.state.model_copy(
                update={
                    "recent_turns": [turns[0].model_copy(update={"text": f"falei com {in_turn}"}) if turns else None][
                        : len(turns)
                    ]
                }
            ),
        }
    )
    [clean], changed = anonymized([example], names=LISTED)
    text = clean.model_dump_json()
    for value, where in ((in_message, True), (in_turn, bool(turns))):
        if where and value not in DETECTED:  # the detector stays off for the datasets (places)
            assert changed == 1 and not in_the_clear(value, text)


def test_a_hash_keeps_its_digits_but_a_valid_cpf_inside_a_hex_token_does_not():
    """Failed before: `face12345678909ab` kept its CPF, set aside as a hash; `tel987654321` passed."""
    redact = Redactor()
    digest = "0123456789abcdef" * 4
    assert redact.text(f"sha256 {digest}") == f"sha256 {digest}"
    assert redact.text("face12345678909ab") == "face[CPF]ab"
    assert redact.text("tel987654321") == "tel[TELEFONE]"


def test_listed_names_match_across_case_accents_and_whitespace_and_common_ones_are_detected():
    """Failed before: "MARIA SILVA" and "Maria  Silva" were caught but "joao souza" (no accent) was
    not, and a name nobody listed always passed."""
    redact = Redactor(["João Souza", "Maria Silva"], detect_names=True)
    for written in ("joao souza", "JOÃO  SOUZA", "Joao\nSouza", "MARIA SILVA", "maria  silva"):
        assert redact.text(f"ligar para {written}.") == "ligar para [NOME]."
    assert redact.text("Bom dia, aqui é a Ana Paula da Costa") == "Bom dia, aqui é a [NOME]"
    assert redact.text("o pedido chegou sem nota") == "o pedido chegou sem nota"
    assert redact.text("o tempo em São Paulo") == "o tempo em São Paulo"  # a saint's name is a place


def test_a_cpf_or_cnpj_kept_as_a_number_is_redacted_though_its_leading_zeros_are_gone():
    """Failed before (found by the hostile check in CI): `00.100.000/0008-30` stored as the number
    100000000830 has 12 digits, which neither pattern takes."""
    redact = Redactor()
    assert redact({"doc": 100000000830, "cpf": 123456797}) == {"doc": "[CNPJ]", "cpf": "[CPF]"}  # 001.234.567-97
    assert redact({"count": 191, "total": 1234567}) == {"count": 191, "total": 1234567}  # counts stay


NAME_FLOORS = {
    "written first (the rules were chosen reading its misses)": (0.90, 0.05),
    "written after, never used to tune": (0.75, 0.25),
}  # (least recall, most false-positive rate)


def test_the_name_detector_catches_names_outside_the_list_on_the_written_sets(capsys):
    """Failed before (recall 8/60 and 1/20: Faker's pt_BR and pt_PT first names after a capital only):
    rare, foreign and lower-case names, surnames after a title. The sets (adri_pipeline_tests/name_set.py,
    **synthetic**) were written and committed before the detector ran on them; the figures are printed
    with the floors asserted (NAME_FLOORS). Recall: a name counts as caught when none of its words is
    left; false positive: a sentence with no name that comes out changed."""
    from adri_pipeline_tests import name_set

    redact = Redactor(detect_names=True)
    sets = {
        "written first (the rules were chosen reading its misses)": (name_set.WITH_NAMES, name_set.WITHOUT_NAMES),
        "written after, never used to tune": (name_set.UNSEEN_WITH_NAMES, name_set.UNSEEN_WITHOUT_NAMES),
    }
    for label, (with_names, without) in sets.items():
        caught = sum(not any(word in redact.text(text) for word in name.split()) for text, name in with_names)
        changed = sum(redact.text(text) != text for text in without)
        recall, false_positive_rate = caught / len(with_names), changed / len(without)
        with capsys.disabled():
            print(
                f"\nname detector, set {label}: recall {caught}/{len(with_names)} = {recall:.0%}, "
                f"false positives {changed}/{len(without)} = {false_positive_rate:.0%} (synthetic sentences)"
            )
        least_recall, most_false_positives = NAME_FLOORS[label]
        assert recall >= least_recall and false_positive_rate <= most_false_positives


@pytest.mark.slow  # importing Faker's 86 locales: 3 s idle, 12 s on a loaded machine
def test_the_bundled_name_lists_are_what_faker_gives():
    """The lists are read from a file (importing Faker's 86 locales takes seconds); regenerate it with
    `privacy.faker_name_lists()` when Faker changes."""
    from adri_pipeline.privacy import NAME_LISTS, faker_name_lists

    assert json.loads(NAME_LISTS.read_text(encoding="utf-8")) == faker_name_lists()
