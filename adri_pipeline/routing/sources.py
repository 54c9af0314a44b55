"""The built-in routing sources, each read from its own files: Home Assistant intents (pt-BR, pt) and
CLINC150 as utterances that composition makes examples of; Schema-Guided Dialogue's real multi-service
conversations as examples already (D1, D2, D4). A new source is a loader here; nothing composed changes."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import yaml

from adri_pipeline.jev.examples import NO_MATCH, CanonicalExample, Metadata, State, Turn, length_bucket
from adri_pipeline.routing.questions import D1_QUESTION, D2_QUESTION, D4_QUESTION, MAX_OPTIONS, NO_MATCH_DESCRIPTION


@dataclass(frozen=True)
class Utterance:
    """One request as its source wrote it: its intent, the group of its variants (never split apart) and
    where it was read."""

    text: str
    intent: str
    group_id: str
    source: str
    language: str
    synthetic: bool = False  # written for the project, not collected


def load_ha_utterances(tests_folder: Path, language: str, synthetic: bool = False) -> list[Utterance]:
    """One group per test case: its sentences are variants of one request and never split apart.
    `synthetic`: the files were written for the project (the bundled sample), not collected."""
    utterances = []
    for path in sorted((tests_folder / language).glob("*/*.yaml")):
        intent = path.parent.name
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for index, case in enumerate(data.get("tests", [])):
            for sentence in case.get("sentences", []):
                utterances.append(
                    Utterance(
                        sentence,
                        intent,
                        f"ha-{language}/{intent}/{path.stem}#{index}",
                        str(path.relative_to(tests_folder.parent)),
                        language,
                        synthetic,
                    )
                )
    return utterances


def load_ha_descriptions(intents_yaml: Path) -> dict[str, str]:
    data = yaml.safe_load(intents_yaml.read_text(encoding="utf-8"))
    return {name: spec.get("description", name) for name, spec in data.items() if isinstance(spec, dict)}


def load_clinc_utterances(
    data_full: Path, split: str = "test", limit_per_intent: int = 10, out_of_scope: int = 150
) -> list[Utterance]:
    """CLINC150 (English): `limit_per_intent` utterances of each intent and `out_of_scope` of its
    out-of-scope ones, whose gold is sem_correspondencia (and fora_do_escopo in D5)."""
    data = json.loads(data_full.read_text(encoding="utf-8"))
    rows = data[split] + data[f"oos_{split}"]
    seen: dict[str, int] = {}
    utterances = []
    for index, (text, intent) in enumerate(rows):
        if seen.get(intent, 0) >= (out_of_scope if intent == "oos" else limit_per_intent):
            continue
        seen[intent] = seen.get(intent, 0) + 1
        gold = NO_MATCH if intent == "oos" else intent
        utterances.append(Utterance(text, gold, f"clinc-{split}-{index}", f"clinc150/{split}", "en"))
    return utterances


def clinc_descriptions(data_full: Path) -> dict[str, str]:
    data = json.loads(data_full.read_text(encoding="utf-8"))
    return {intent: intent.replace("_", " ") for _, intent in data["train"]}


# -- real multi-service conversations: Schema-Guided Dialogue (English, CC BY-SA 4.0) ------------

SGD_CONTINUE_PER_DIALOGUE = 3  # every service switch is kept; continue turns are sampled (85 % of turns)
SGD_D1_PER_DIALOGUE = 2


def _sgd_turn(turn: dict) -> Turn:
    service = turn["frames"][0]["service"] if turn["frames"] else None
    return Turn(role="user" if turn["speaker"] == "USER" else "agent", text=turn["utterance"], agent_id=service)


def _sgd_two_intents(
    example_id: str,
    group: str,
    turn: dict,
    index: int,
    intents: list[str],
    eligible: list[str],
    history: list[Turn],
    intent_text: dict[str, str],
) -> CanonicalExample:
    """One SGD user turn whose frames name two services with an active intent each, as D4."""
    return CanonicalExample(
        id=f"{example_id}:D4",
        group_id=group,
        task="D4",
        state=State(eligible_intents=eligible, recent_turns=history),
        utterance=turn["utterance"],
        question=D4_QUESTION,
        question_type="noul",
        options={i: intent_text[i] for i in eligible},
        gold_label=sorted(set(intents)),
        metadata=Metadata(
            taxonomy_version="sgd-dstc8",
            domain="multi",
            language="en",
            source="sgd",
            length_bucket=length_bucket(turn["utterance"]),
            turn_index=index,
            adversarial=["varias_intencoes"],
            n_options=len(eligible),
        ),
    )


def _sgd_session_turn(
    example_id: str,
    group: str,
    turn: dict,
    index: int,
    service: str,
    active: str,
    suspended: list[str],
    history: list[Turn],
    schemas: dict,
) -> CanonicalExample:
    """One SGD user turn as D2: the service of its frame against the last system turn's (continue),
    the services seen before (return) or none (a new service)."""
    gold = (
        "continuar_agente_ativo"
        if service == active
        else f"retomar_sessao:{service}"
        if service in suspended
        else "iniciar_novo_agente"
    )
    options = {"continuar_agente_ativo": f"continue with {active}: {schemas[active]['description']}"}
    options |= {f"retomar_sessao:{s}": f"return to {s}: {schemas[s]['description']}" for s in suspended}
    options |= {
        "iniciar_novo_agente": "start a new service for another request",
        "desambiguar": "not safe to decide: ask the user",
    }
    return CanonicalExample(
        id=f"{example_id}:D2",
        group_id=group,
        task="D2",
        state=State(active_agent=active, suspended_sessions=suspended, recent_turns=history),
        utterance=turn["utterance"],
        question=D2_QUESTION,
        question_type="choice",
        options=options,
        gold_label=gold,
        metadata=Metadata(
            taxonomy_version="sgd-dstc8",
            domain=active,
            language="en",
            source="sgd",
            length_bucket=length_bucket(turn["utterance"]),
            ambiguity="baixa",
            turn_index=index,
            adversarial=[]
            if gold == "continuar_agente_ativo"
            else ["volta_a_topico_anterior" if gold.startswith("retomar") else "mudanca_de_topico"],
            n_options=len(options),
        ),
    )


def load_sgd(folder: Path, dialogues: int = 300, seed: int = 11) -> list[CanonicalExample]:
    """Real D1, D2 and D4 from SGD dialogues (a seeded sample of `dialogues`; group = dialogue).

    D2 at every user turn after the first: the service of the user's frame against the service of
    the last system turn (continue), the services seen before (return: retomar_sessao:<service>) or
    none (a new service); the state is the real preceding turns. D1: the user's active intent among
    the intents of the services in play plus distractors, described by schemas.json. D4: user turns
    whose frames name two services with an active intent each (two intents in one message). Every such turn in
    the shared data names the service the system was just speaking for, the one the message carries
    context over from ("a rental car there" after a bus booking): the gold set is the new request plus
    the service it refers back to, not two requests in one message."""
    rng = random.Random(seed)
    schemas = json.loads((folder / "schemas.json").read_text(encoding="utf-8"))
    intent_text = {
        f"{service}.{intent}": f"{spec['description']}: {text}"
        for service, spec in schemas.items()
        for intent, text in spec["intents"].items()
    }
    lines = (folder / "dialogues_multiservice.jsonl").read_text(encoding="utf-8").splitlines()
    chosen = sorted(rng.sample(range(len(lines)), min(dialogues, len(lines))))
    examples: list[CanonicalExample] = []
    for number in chosen:
        examples += _sgd_dialogue(json.loads(lines[number]), schemas, intent_text, rng)
    return examples


def _sgd_dialogue(
    dialogue: dict, schemas: dict, intent_text: dict[str, str], rng: random.Random
) -> list[CanonicalExample]:
    """One SGD dialogue's examples: every D2 turn that switches service and every D4 turn, then a seeded
    sample of its D2 turns that continue and of its D1 turns, so that the plain turns (85 % of SGD's) do
    not outweigh the switches."""
    group = f"sgd:{dialogue['dialogue_id']}"
    turns = dialogue["turns"]
    seen: list[str] = []
    examples, d2_continue, d1_here = [], [], []
    for index, turn in enumerate(turns):
        frames = [f for f in turn["frames"] if f.get("service")]
        if turn["speaker"] != "USER" or not frames:
            if frames and frames[0]["service"] not in seen:
                seen.append(frames[0]["service"])
            continue
        service = frames[0]["service"]
        previous = [t for t in turns[:index] if t["speaker"] == "SYSTEM" and t["frames"]]
        history = [_sgd_turn(t) for t in turns[:index]]
        if previous:
            active = previous[-1]["frames"][0]["service"]
            suspended = [s for s in seen if s != active]
            example = _sgd_session_turn(
                f"{group}:t{index:02d}", group, turn, index, service, active, suspended, history, schemas
            )
            (d2_continue if example.gold_label == "continuar_agente_ativo" else examples).append(example)
        intents = [f"{f['service']}.{f['active_intent']}" for f in frames if f.get("active_intent")]
        in_play = sorted(
            {f"{s}.{i}" for s in set(seen) | {f["service"] for f in frames} for i in schemas[s]["intents"]}
        )
        distractors = rng.sample(sorted(set(intent_text) - set(in_play)), 3)
        eligible = sorted(set(in_play) | set(distractors))[:MAX_OPTIONS]
        if len(intents) == 1 and intents[0] in eligible:
            d1_here.append(
                _sgd_intent_choice(
                    f"{group}:t{index:02d}", group, turn, index, intents[0], eligible, seen, history, intent_text
                )
            )
        elif len(intents) >= 2 and all(i in eligible for i in intents):
            examples.append(
                _sgd_two_intents(f"{group}:t{index:02d}", group, turn, index, intents, eligible, history, intent_text)
            )
    examples += rng.sample(d2_continue, min(SGD_CONTINUE_PER_DIALOGUE, len(d2_continue)))
    return examples + rng.sample(d1_here, min(SGD_D1_PER_DIALOGUE, len(d1_here)))


def _sgd_intent_choice(
    example_id: str,
    group: str,
    turn: dict,
    index: int,
    intent: str,
    eligible: list[str],
    seen: list[str],
    history: list[Turn],
    intent_text: dict[str, str],
) -> CanonicalExample:
    """One SGD user turn with a single active intent, as D1: that intent among the intents in play and
    the distractors, the last service seen as the active agent."""
    options = {i: intent_text[i] for i in eligible} | {NO_MATCH: NO_MATCH_DESCRIPTION}
    frames = [f for f in turn["frames"] if f.get("service")]
    return CanonicalExample(
        id=f"{example_id}:D1",
        group_id=group,
        task="D1",
        state=State(active_agent=seen[-1] if seen else None, eligible_intents=eligible, recent_turns=history),
        utterance=turn["utterance"],
        question=D1_QUESTION,
        question_type="choice",
        options=options,
        gold_label=intent,
        metadata=Metadata(
            taxonomy_version="sgd-dstc8",
            domain=frames[0]["service"],
            language="en",
            source="sgd",
            length_bucket=length_bucket(turn["utterance"]),
            turn_index=index,
            n_options=len(options),
        ),
    )
