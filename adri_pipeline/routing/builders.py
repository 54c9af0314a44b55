"""Canonical examples from real utterances (Home Assistant intents pt-BR/pt, CLINC150) and, for the
multi-agent tasks, conversations composed from those utterances (marked synthetic).

D1 choice among 2-19 eligible intents + sem_correspondencia (the gold intent is left out of the
eligible list for a seeded share of examples: out of scope). D4 asks the same as one yes/no per
option. D2 session continuity and D3 "can route without asking" are composed conversations.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import yaml

from adri_pipeline.routing.examples import (
    NO_MATCH,
    CanonicalExample,
    Metadata,
    Session,
    State,
    Turn,
    length_bucket,
)

D1_QUESTION = "Qual intenção a mensagem expressa? Responda sem_correspondencia se nenhuma opção servir."
D2_QUESTION = "A mensagem continua o agente ativo, retoma uma sessão suspensa, inicia um novo agente ou é ambígua?"
D3_QUESTION = "É possível encaminhar a mensagem sem perguntar nada ao usuário?"
NO_MATCH_DESCRIPTION = "Nenhuma das opções corresponde à mensagem"
MIN_OPTIONS, MAX_OPTIONS = 2, 19

# Agents of the composed conversations: families of Home Assistant intents.
AGENT_OF_PREFIX = (
    ("HassMedia", "midia"), ("HassSetVolume", "midia"), ("HassMediaPlayer", "midia"),
    ("HassList", "listas"), ("HassShoppingList", "listas"),
    ("HassClimate", "clima"), ("HassGetWeather", "clima"),
    ("HassVacuum", "aspirador"), ("HassLawnMower", "jardim"),
    ("HassStartTimer", "timers"), ("HassCancel", "timers"), ("HassIncreaseTimer", "timers"),
    ("HassDecreaseTimer", "timers"), ("HassPauseTimer", "timers"), ("HassUnpauseTimer", "timers"),
    ("HassTimerStatus", "timers"),
    ("HassTurn", "casa"), ("HassLightSet", "casa"), ("HassSetPosition", "casa"), ("HassFanSetSpeed", "casa"),
)
SHORT_REPLIES = ("sim", "o outro", "esse", "pode ser", "isso")
ABBREVIATIONS = (("você", "vc"), ("por favor", "pfv"), ("para", "pra"), ("também", "tb"), ("que", "q"))


@dataclass(frozen=True)
class Utterance:
    text: str
    intent: str
    group_id: str
    source: str
    language: str


def agent_of(intent: str) -> str | None:
    return next((agent for prefix, agent in AGENT_OF_PREFIX if intent.startswith(prefix)), None)


def load_ha_utterances(tests_folder: Path, language: str) -> list[Utterance]:
    """One group per test case: its sentences are variants of one request and never split apart."""
    utterances = []
    for path in sorted((tests_folder / language).glob("*/*.yaml")):
        intent = path.parent.name
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for index, case in enumerate(data.get("tests", [])):
            for sentence in case.get("sentences", []):
                utterances.append(Utterance(sentence, intent, f"ha-{language}/{intent}/{path.stem}#{index}",
                                            str(path.relative_to(tests_folder.parent)), language))
    return utterances


def load_ha_descriptions(intents_yaml: Path) -> dict[str, str]:
    data = yaml.safe_load(intents_yaml.read_text(encoding="utf-8"))
    return {name: spec.get("description", name) for name, spec in data.items() if isinstance(spec, dict)}


def load_clinc_utterances(data_full: Path, split: str = "test", limit_per_intent: int = 10) -> list[Utterance]:
    """CLINC150 (English); out-of-scope utterances get gold sem_correspondencia."""
    data = json.loads(data_full.read_text(encoding="utf-8"))
    rows = data[split] + data[f"oos_{split}"]
    seen: dict[str, int] = {}
    utterances = []
    for index, (text, intent) in enumerate(rows):
        if seen.get(intent, 0) >= limit_per_intent:
            continue
        seen[intent] = seen.get(intent, 0) + 1
        gold = NO_MATCH if intent == "oos" else intent
        utterances.append(Utterance(text, gold, f"clinc-{split}-{index}", f"clinc150/{split}", "en"))
    return utterances


def clinc_descriptions(data_full: Path) -> dict[str, str]:
    data = json.loads(data_full.read_text(encoding="utf-8"))
    return {intent: intent.replace("_", " ") for _, intent in data["train"]}


def _adversarial(text: str, rng: random.Random) -> tuple[str, list[str]]:
    """A seeded share of utterances get an abbreviation or a misspelling; the original is kept too."""
    roll = rng.random()
    for full, short in ABBREVIATIONS:
        if roll < 0.1 and full in text:
            return text.replace(full, short, 1), ["abreviacao"]
    words = text.split()
    if 0.1 <= roll < 0.2 and words:
        longest = max(range(len(words)), key=lambda i: len(words[i]))
        if len(words[longest]) > 4:
            word = words[longest]
            cut = rng.randrange(1, len(word) - 1)
            words[longest] = word[:cut] + word[cut + 1:]
            return " ".join(words), ["erro_ortografico"]
    return text, []


def build_d1(utterances: list[Utterance], descriptions: dict[str, str], seed: int = 13,
             p_gold_eligible: float = 0.85, dataset: str = "") -> list[CanonicalExample]:
    rng = random.Random(seed)
    intents = sorted({u.intent for u in utterances if u.intent != NO_MATCH} | set(descriptions))
    examples = []
    for index, utterance in enumerate(utterances):
        n = rng.randint(MIN_OPTIONS, min(MAX_OPTIONS, len(intents)))
        others = [i for i in intents if i != utterance.intent]
        include_gold = utterance.intent != NO_MATCH and rng.random() < p_gold_eligible
        # a small catalogue has fewer other intents than n (same draws as before for large ones)
        eligible = rng.sample(others, min(n - 1 if include_gold else n, len(others)))
        if include_gold:
            eligible.insert(rng.randrange(len(eligible) + 1), utterance.intent)
        gold = utterance.intent if include_gold else NO_MATCH
        text, adversarial = _adversarial(utterance.text, rng)
        if gold == NO_MATCH:
            adversarial = adversarial + ["fora_do_escopo"]
        options = {i: descriptions.get(i, i) for i in eligible} | {NO_MATCH: NO_MATCH_DESCRIPTION}
        examples.append(CanonicalExample(
            id=f"{dataset or utterance.source}:D1:{index}", group_id=utterance.group_id, task="D1",
            state=State(eligible_intents=eligible), utterance=text, question=D1_QUESTION,
            question_type="choice", options=options, gold_label=gold,
            metadata=Metadata(domain=agent_of(utterance.intent) or "geral", language=utterance.language,
                              source=utterance.source, length_bucket=length_bucket(text),
                              adversarial=adversarial, n_options=len(options)),
        ))
    return examples


def build_d4(d1: list[CanonicalExample]) -> list[CanonicalExample]:
    """The D1 decision as one yes/no per eligible intent, all in one request."""
    return [
        example.model_copy(update={
            "id": example.id.replace(":D1:", ":D4:"), "task": "D4", "question_type": "noul",
            "question": "Para cada intenção: a mensagem pede isto?",
            "options": {k: v for k, v in example.options.items() if k != NO_MATCH},
            "gold_label": [] if example.gold_label == NO_MATCH else [example.gold_label],
        })
        for example in d1
    ]


def build_conversations(utterances: list[Utterance], seed: int = 17, dataset: str = "") -> list[CanonicalExample]:
    """D2 and D3 from composed conversations (synthetic): an active agent with recent turns, one or
    two suspended sessions, and a new message that continues, resumes, starts anew or is ambiguous."""
    rng = random.Random(seed)
    by_agent: dict[str, list[Utterance]] = {}
    for utterance in utterances:
        agent = agent_of(utterance.intent)
        if agent:
            by_agent.setdefault(agent, []).append(utterance)
    agents = sorted(a for a, items in by_agent.items() if len(items) >= 3)
    if len(agents) < 4:
        return []
    examples = []
    for index in range(len(utterances) // 2):
        active, *suspended_agents = rng.sample(agents, 1 + rng.randint(1, 2))
        newcomer = rng.choice([a for a in agents if a != active and a not in suspended_agents])
        first = rng.choice(by_agent[active])
        sessions = [Session(agent=a, topic=rng.choice(by_agent[a]).intent.removeprefix("Hass"),
                            turns=[Turn(role="usuario", text=rng.choice(by_agent[a]).text)])
                    for a in suspended_agents]
        turns = [Turn(role="usuario", text=first.text), Turn(role="agente", agent=active, text="Certo, feito.")]
        kind = rng.choices(["continuar", "retomar", "novo", "ambigua"], weights=[3, 3, 3, 1])[0]
        if kind == "continuar":
            pick = rng.choice([u for u in by_agent[active] if u.text != first.text] or by_agent[active])
            message, gold, tags = pick.text, "continuar_agente_ativo", []
        elif kind == "retomar":
            target = rng.choice(suspended_agents)
            pick = rng.choice(by_agent[target])
            message, gold, tags = pick.text, f"retomar_sessao:{target}", ["volta_a_topico_anterior"]
        elif kind == "novo":
            pick = rng.choice(by_agent[newcomer])
            message, gold, tags = pick.text, "iniciar_novo_agente", ["mudanca_de_topico"]
        else:
            message, gold, tags = rng.choice(SHORT_REPLIES), "desambiguar", ["curta_dependente_de_contexto"]
            turns[-1] = Turn(role="agente", agent=active,
                             text="Você quer continuar aqui ou voltar ao assunto anterior?")
        options = {"continuar_agente_ativo": f"continuar com o agente ativo ({active})"}
        options |= {f"retomar_sessao:{s.agent}": f"retomar a sessão suspensa de {s.agent} ({s.topic})" for s in sessions}
        options |= {"iniciar_novo_agente": "iniciar um agente novo para outro assunto",
                    "desambiguar": "a mensagem é ambígua: perguntar ao usuário"}
        state = State(active_agent=active, suspended_sessions=sessions, recent_turns=turns)
        metadata = Metadata(domain=active, language=first.language, source="composto", synthetic=True,
                            length_bucket=length_bucket(message), ambiguity="alta" if gold == "desambiguar" else "baixa",
                            turn_index=len(turns), adversarial=tags, n_options=len(options))
        group = f"{dataset}:conversa-{index}"
        examples.append(CanonicalExample(
            id=f"{dataset}:D2:{index}", group_id=group, task="D2", state=state, utterance=message,
            question=D2_QUESTION, question_type="choice", options=options, gold_label=gold, metadata=metadata))
        examples.append(CanonicalExample(
            id=f"{dataset}:D3:{index}", group_id=group, task="D3", state=state, utterance=message,
            question=D3_QUESTION, question_type="noul", options={"sim": "sim", "nao": "não"},
            gold_label="nao" if gold == "desambiguar" else "sim",
            metadata=metadata.model_copy(update={"n_options": 2})))
    return examples


def build_dataset(utterances: list[Utterance], descriptions: dict[str, str], dataset: str,
                  seed: int = 13) -> list[CanonicalExample]:
    d1 = build_d1(utterances, descriptions, seed=seed, dataset=dataset)
    return d1 + build_d4(d1) + build_conversations(utterances, seed=seed + 4, dataset=dataset)
