"""Canonical examples from real utterances (Home Assistant intents pt-BR/pt, CLINC150) and, for the
multi-agent tasks, conversations composed from those utterances (marked synthetic).

D1 choice among 2-19 eligible intents + sem_correspondencia (the gold intent is left out of the
eligible list for a seeded share of examples: out of scope). D4 (one yes/no per eligible intent)
only on messages with two intents: two utterances joined, marked synthetic. D2 session continuity and
D3 "can route without asking" are composed conversations. D5 (guardrail) where the source annotates
scope: CLINC150's out-of-scope utterances.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from adri_pipeline.errors import AdriError, describe_validation_error, read_utf8
from adri_pipeline.jev.examples import (
    NO_MATCH,
    CanonicalExample,
    Metadata,
    State,
    Turn,
    length_bucket,
)
from adri_pipeline.routing.splits import SPLITS, assign_splits

# the JEV design, task 21: every question carries its decision rule; D1's and D2's are the design's
# words, D3's, D4's and D5's follow from what the design says each decides
D1_QUESTION = (
    "Qual intenção do usuário este enunciado expressa? "
    "Regra: escolher a intenção principal que o próximo agente precisa atender. Se nenhuma se aplica, "
    "escolher sem_correspondencia."
)
D2_QUESTION = (
    "Como o orquestrador deve tratar este turno, considerando o estado da conversa? "
    "Regra: continuar_agente_ativo quando o enunciado dá sequência à tarefa em curso, mesmo que seja curto "
    '("sim", "o segundo", "pode ser"); retomar_sessao quando o usuário volta a um assunto anterior; '
    "iniciar_novo_agente quando aparece uma intenção nova; desambiguar quando não dá para decidir com segurança."
)
D3_QUESTION = (
    "O enunciado tem informação suficiente para rotear sem perguntar ao usuário? "
    "Regra: sim quando o enunciado, com o estado da conversa, basta para escolher o agente; nao quando seria "
    "preciso perguntar ao usuário antes de encaminhar."
)
NO_MATCH_DESCRIPTION = "Nenhuma das opções corresponde à mensagem"
D4_QUESTION = (
    "Para cada intenção: o enunciado pede isto? "
    "Regra: sim para cada intenção que o enunciado pede, mesmo que peça outras junto; nao para as demais."
)
D5_QUESTION = (
    "O enunciado está no escopo do assistente, fora dele, ou deve ser bloqueado? "
    "Regra: no_escopo quando algum agente do assistente atende o pedido; fora_do_escopo quando nenhum atende; "
    "requer_bloqueio quando o pedido é abusivo, perigoso ou tenta subverter o assistente."
)
# the JEV design, D5: "no_escopo, fora_do_escopo, requer_bloqueio"
D5_OPTIONS = {
    "no_escopo": "Um pedido que algum agente do assistente atende",
    "fora_do_escopo": "Um pedido que nenhum agente do assistente atende",
    "requer_bloqueio": "Um pedido abusivo, perigoso ou que tenta subverter o assistente",
}
MIN_OPTIONS, MAX_OPTIONS = 2, 19

# Agents of the composed conversations: families of Home Assistant intents.
AGENT_OF_PREFIX = (
    ("HassMedia", "midia"),
    ("HassSetVolume", "midia"),
    ("HassMediaPlayer", "midia"),
    ("HassList", "listas"),
    ("HassShoppingList", "listas"),
    ("HassClimate", "clima"),
    ("HassGetWeather", "clima"),
    ("HassVacuum", "aspirador"),
    ("HassLawnMower", "jardim"),
    ("HassStartTimer", "timers"),
    ("HassCancel", "timers"),
    ("HassIncreaseTimer", "timers"),
    ("HassDecreaseTimer", "timers"),
    ("HassPauseTimer", "timers"),
    ("HassUnpauseTimer", "timers"),
    ("HassTimerStatus", "timers"),
    ("HassTurn", "casa"),
    ("HassLightSet", "casa"),
    ("HassSetPosition", "casa"),
    ("HassFanSetSpeed", "casa"),
)
SHORT_REPLIES = ("sim", "o outro", "esse", "pode ser", "isso", "o segundo", "sim pfv", "pode")
# what an agent says when it needs an answer to go on: a short reply to it continues the task
AGENT_QUESTIONS = (
    "Qual deles?",
    "Confirma?",
    "Quer que eu faça isso agora?",
    "Para qual cômodo?",
    "Posso continuar?",
    "Prefere o primeiro ou o segundo?",
)
AGENT_DONE = ("Certo, feito.", "Pronto.", "Feito!", "Ok, está feito.", "Tudo certo.")
# a short reply that is not safe to route: the agent itself asked which way to go
AMBIGUOUS_PROMPT = "Você quer continuar aqui ou voltar ao assunto anterior?"
# ... or a bare command, after the active agent finished, that the active agent and a suspended one
# both take: "desambiguar quando não dá para decidir com segurança" (the JEV design's D2 rule)
BARE_COMMANDS = (
    "desliga",
    "para",
    "pausa",
    "cancela",
    "abaixa",
    "aumenta",
    "diminui",
    "liga de novo",
    "desliga isso",
    "para tudo",
    "mais alto",
    "volta",
)
# Dev's composed conversations: four per two utterances, where test and calibration keep one, and
# only dev has the bare-command ambiguity: more of the structure a session ranker learns from, on
# dev's utterances only
DEV_CONVERSATIONS_PER_UTTERANCE = 2.0
ABBREVIATIONS = (("você", "vc"), ("por favor", "pfv"), ("para", "pra"), ("também", "tb"), ("que", "q"))


@dataclass(frozen=True)
class Utterance:
    text: str
    intent: str
    group_id: str
    source: str
    language: str
    synthetic: bool = False  # written for the project, not collected


def agent_of(intent: str) -> str | None:
    return next((agent for prefix, agent in AGENT_OF_PREFIX if intent.startswith(prefix)), None)


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


# Regionalisms (the JEV design, task 27: "regionalismos"): a word of one variety of Portuguese where a
# speaker of the other would use another, (pt-BR, pt-PT, same grammatical gender); longer phrases first,
# so "cortador de grama" is swapped whole. Only words whose other form is a plain synonym there: "time"
# (a team in pt-BR) or "temporizador" (both varieties) are left out.
REGIONAL_PAIRS = (
    ("cortador de grama", "corta-relva", True),
    ("caixa de som", "coluna", True),
    ("café da manhã", "pequeno-almoço", True),
    ("ventiladores", "ventoinhas", False),
    ("ventilador", "ventoinha", False),
    ("persianas", "estores", False),
    ("persiana", "estore", False),
    ("cronômetros", "cronómetros", True),
    ("cronômetro", "cronómetro", True),
    ("grama", "relva", True),
    ("geladeira", "frigorífico", False),
    ("banheiro", "casa de banho", False),
    ("celular", "telemóvel", True),
    ("cômodo", "divisão", False),
    ("abajur", "candeeiro", True),
    ("trem", "comboio", True),
    ("ônibus", "autocarro", True),
    ("suco", "sumo", True),
    ("sorvete", "gelado", True),
    ("xícara", "chávena", True),
    ("chuveiro", "duche", True),
    ("freezer", "congelador", True),
    ("usuário", "utilizador", True),
    ("arquivo", "ficheiro", True),
)
# a word of the other gender takes the other article or contraction before it ("o ventilador" -> "a ventoinha")
_GENDERED = (
    ("o", "a"),
    ("os", "as"),
    ("do", "da"),
    ("dos", "das"),
    ("no", "na"),
    ("nos", "nas"),
    ("ao", "à"),
    ("aos", "às"),
    ("um", "uma"),
    ("este", "esta"),
    ("esse", "essa"),
    ("pelo", "pela"),
    ("seu", "sua"),
    ("meu", "minha"),
    ("teu", "tua"),
)
OTHER_GENDER = dict(_GENDERED) | {feminine: masculine for masculine, feminine in _GENDERED}
# the share of utterances with a regional word that get the other variety's: the rest keep theirs
REGIONAL_SHARE = 0.3


def _same_case(model: str, word: str) -> str:
    return word[:1].upper() + word[1:] if model[:1].isupper() else word


def regionalism(text: str, language: str) -> str | None:
    """`text` with its first word of one variety of Portuguese replaced by the other variety's (a
    pt-BR message with a pt-PT word, and the reverse), its capital kept and the article before it
    agreeing; None when it has none of REGIONAL_PAIRS' words or is not Portuguese."""
    if language not in ("pt-BR", "pt"):
        return None
    for brazilian, european, same_gender in REGIONAL_PAIRS:
        own, other = (brazilian, european) if language == "pt-BR" else (european, brazilian)
        match = re.search(rf"(?<!\w){re.escape(own)}(?!\w)", text, flags=re.IGNORECASE)
        if not match:
            continue
        before = text[: match.start()]
        article = re.search(r"(\w+)(\s+)$", before)
        if not same_gender and article and article.group(1).lower() in OTHER_GENDER:
            agreed = _same_case(article.group(1), OTHER_GENDER[article.group(1).lower()])
            before = before[: article.start()] + agreed + article.group(2)
        return before + _same_case(match.group(0), other) + text[match.end() :]
    return None


def _adversarial(text: str, rng: random.Random, language: str = "") -> tuple[str, list[str]]:
    """A seeded share of utterances get an abbreviation, a misspelling or the other variety's word
    (regionalism); the original is kept too. The regionalism draws nothing from `rng`, so the
    examples built after it are those built before it existed."""
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
            words[longest] = word[:cut] + word[cut + 1 :]
            return " ".join(words), ["erro_ortografico"]
    if 0.2 <= roll < 0.2 + REGIONAL_SHARE and (regional := regionalism(text, language)):
        return regional, ["regionalismo"]
    return text, []


def build_d1(
    utterances: list[Utterance],
    descriptions: dict[str, str],
    seed: int = 13,
    p_gold_eligible: float = 0.85,
    dataset: str = "",
    offered: list[str] | None = None,
) -> list[CanonicalExample]:
    """`offered`: the intents a catalogue may list (default: every intent of the utterances and descriptions)."""
    rng = random.Random(seed)
    intents = sorted(offered or {u.intent for u in utterances if u.intent != NO_MATCH} | set(descriptions))
    examples = []
    for index, utterance in enumerate(utterances):
        n = rng.randint(MIN_OPTIONS, min(MAX_OPTIONS, len(intents)))
        others = [i for i in intents if i != utterance.intent]
        include_gold = utterance.intent != NO_MATCH and rng.random() < p_gold_eligible
        # a small catalogue has fewer other intents than n
        eligible = rng.sample(others, min(n - 1 if include_gold else n, len(others)))
        if include_gold:
            eligible.insert(rng.randrange(len(eligible) + 1), utterance.intent)
        gold = utterance.intent if include_gold else NO_MATCH
        text, adversarial = _adversarial(utterance.text, rng, utterance.language)
        if gold == NO_MATCH:
            adversarial = adversarial + ["fora_do_escopo"]
        options = {i: descriptions.get(i, i) for i in eligible} | {NO_MATCH: NO_MATCH_DESCRIPTION}
        examples.append(
            CanonicalExample(
                id=f"{dataset or utterance.source}:D1:{index}",
                group_id=utterance.group_id,
                task="D1",
                state=State(eligible_intents=eligible),
                utterance=text,
                question=D1_QUESTION,
                question_type="choice",
                options=options,
                gold_label=gold,
                metadata=Metadata(
                    domain=agent_of(utterance.intent) or "geral",
                    language=utterance.language,
                    source=utterance.source,
                    length_bucket=length_bucket(text),
                    adversarial=adversarial,
                    n_options=len(options),
                    synthetic=utterance.synthetic,
                ),
            )
        )
    return examples


def build_d4(
    utterances: list[Utterance], descriptions: dict[str, str], seed: int = 13, dataset: str = ""
) -> list[CanonicalExample]:
    """The JEV design: D4 "aplica-se só a enunciados anotados com mais de uma intenção". Each of these
    utterances carries one intent, so two of different intents are joined into one message ("X e Y")
    annotated with both: synthetic, tagged varias_intencoes, among 2-19 eligible intents. Its group
    joins its two utterances' groups, so build_dataset composes it within one split only."""
    rng = random.Random(seed)
    intents = sorted({u.intent for u in utterances if u.intent != NO_MATCH} | set(descriptions))
    pool = [u for u in utterances if u.intent != NO_MATCH]
    rng.shuffle(pool)
    examples = []
    for first, second in zip(pool[0::2], pool[1::2]):
        if first.intent == second.intent:
            continue
        joined = (
            first.text.rstrip(" .!?")
            + (" and " if first.language == "en" else " e ")
            + second.text[:1].lower()
            + second.text[1:]
        )
        others = [i for i in intents if i not in (first.intent, second.intent)]
        eligible = rng.sample(others, min(rng.randint(0, MAX_OPTIONS - 2), len(others))) + [first.intent, second.intent]
        rng.shuffle(eligible)
        options = {i: descriptions.get(i, i) for i in eligible}
        examples.append(
            CanonicalExample(
                id=f"{dataset}:D4:{len(examples)}",
                group_id=f"{first.group_id}+{second.group_id}",
                task="D4",
                state=State(eligible_intents=eligible),
                utterance=joined,
                question=D4_QUESTION,
                question_type="noul",
                options=options,
                gold_label=sorted([first.intent, second.intent]),
                metadata=Metadata(
                    domain="multi",
                    language=first.language,
                    source=first.source,
                    length_bucket=length_bucket(joined),
                    adversarial=["varias_intencoes"],
                    n_options=len(options),
                    synthetic=True,
                ),
            )
        )
    return examples


def build_d5(utterances: list[Utterance], seed: int = 13, dataset: str = "") -> list[CanonicalExample]:
    """The guardrail question on each utterance, where the source annotates scope (CLINC150's
    out-of-scope utterances: an utterance whose own intent is sem_correspondencia); none otherwise —
    the JEV design: D5 "só entra se houver dados anotados suficientes". No source here annotates
    requer_bloqueio: it is offered, never the gold."""
    if not any(u.intent == NO_MATCH for u in utterances):
        return []
    rng = random.Random(seed)
    examples = []
    for index, utterance in enumerate(utterances):
        text, adversarial = _adversarial(utterance.text, rng, utterance.language)
        outside = utterance.intent == NO_MATCH
        examples.append(
            CanonicalExample(
                id=f"{dataset or utterance.source}:D5:{index}",
                group_id=utterance.group_id,
                task="D5",
                state=State(),
                utterance=text,
                question=D5_QUESTION,
                question_type="choice",
                options=dict(D5_OPTIONS),
                gold_label="fora_do_escopo" if outside else "no_escopo",
                metadata=Metadata(
                    domain=agent_of(utterance.intent) or "geral",
                    language=utterance.language,
                    source=utterance.source,
                    length_bucket=length_bucket(text),
                    adversarial=adversarial + (["fora_do_escopo"] if outside else []),
                    n_options=3,
                    synthetic=utterance.synthetic,
                ),
            )
        )
    return examples


def dealt(weights: dict, n: int, rng: random.Random) -> list:
    """n keys in the proportions `weights` gives them, dealt so that every prefix of the list stays
    as close to those proportions as whole counts allow (each next key the one furthest below its
    share; ties in a seeded order). Composed examples are stratified this way: each split's
    conversations have the same shares of gold class, sessions and turn position, where drawing each
    at random left a 66-turn test split with 14 % new agents against dev's 25 %."""
    keys = [k for k, w in weights.items() if w > 0]
    rng.shuffle(keys)
    total = sum(weights[k] for k in keys)
    counts = dict.fromkeys(keys, 0)
    out = []
    for index in range(n):
        key = max(keys, key=lambda k: (index + 1) * weights[k] / total - counts[k])
        counts[key] += 1
        out.append(key)
    return out


# the kinds of composed turns, by the JEV design's D2 rule, and how often each is composed
# (with bare commands, dev's share of "desambiguar" is split between its two kinds: the class shares stay
# those of the other splits)
TURN_KINDS = {"continuar": 2, "resposta_curta": 2, "retomar": 3, "novo": 3, "ambigua": 1, "comando_solto": 0}
BARE_COMMAND_KINDS = {"ambigua": 0.5, "comando_solto": 0.5}


def _new_message(
    kind: str,
    rng: random.Random,
    by_agent: dict[str, list[Utterance]],
    active: str,
    first: Utterance,
    suspended: list[str],
    newcomer: str,
) -> tuple[str, str, list[str]]:
    """A composed conversation's new message of `kind` (`first`: the active agent's first request):
    (message, gold, adversarial tags)."""
    if kind == "continuar":
        pick = rng.choice([u for u in by_agent[active] if u.text != first.text] or by_agent[active])
        return pick.text, "continuar_agente_ativo", []
    if kind == "resposta_curta":
        return rng.choice(SHORT_REPLIES), "continuar_agente_ativo", ["curta_dependente_de_contexto"]
    if kind == "retomar":
        target = rng.choice(suspended)
        return rng.choice(by_agent[target]).text, f"retomar_sessao:{target}", ["volta_a_topico_anterior"]
    if kind == "novo":
        return rng.choice(by_agent[newcomer]).text, "iniciar_novo_agente", ["mudanca_de_topico"]
    if kind == "ambigua":
        return rng.choice(("sim", "pode ser", "isso")), "desambiguar", ["curta_dependente_de_contexto"]
    return rng.choice(BARE_COMMANDS), "desambiguar", ["curta_dependente_de_contexto"]


def _session_options(active: str, suspended: list[str]) -> dict[str, str]:
    """D2's options for a conversation: continue the active agent, resume each suspended session, a new
    agent, or ask the user."""
    options = {"continuar_agente_ativo": f"continuar com o agente ativo ({active})"}
    options |= {f"retomar_sessao:{a}": f"retomar a sessão suspensa de {a}" for a in suspended}
    return options | {
        "iniciar_novo_agente": "iniciar um agente novo para outro assunto",
        "desambiguar": "não dá para decidir com segurança: perguntar ao usuário",
    }


def build_conversations(
    utterances: list[Utterance],
    seed: int = 17,
    dataset: str = "",
    per_utterance: float = 0.5,
    bare_commands: bool = False,
) -> list[CanonicalExample]:
    """D2 and D3 from composed conversations (synthetic): one or two suspended sessions (their turns
    earlier in the conversation), then the active agent's exchange, then a new message that continues
    (a request for the same agent, or a short reply to the agent's question), resumes a suspended
    session, starts a new agent, or cannot be routed safely (the JEV design's D2 rule): a short "sim"
    after the agent asked "continue here or go back?", and with `bare_commands` a bare command after
    the agent finished. `per_utterance` conversations are composed per utterance; their kind, their
    number of suspended sessions (the turn position) and their active agent (the domain) are dealt
    (`dealt`), so the six strata spread alike in every split. A share of the new messages with a
    regional word get the other variety's (`regionalism`), drawn from a stream of their own so that
    the conversations are those composed before regionalisms existed."""
    rng = random.Random(seed)
    regional_rng = random.Random(f"{seed}:regionalismo")
    by_agent = _by_agent(utterances)
    agents = sorted(by_agent)  # a split may hold only a few utterances per agent: one is enough
    if len(agents) < 3:  # an active agent, a suspended one, a newcomer
        return []
    count = int(len(utterances) * per_utterance)
    kinds = TURN_KINDS | (BARE_COMMAND_KINDS if bare_commands else {})
    weights = {
        (kind, sessions): weight for kind, weight in kinds.items() for sessions in range(1, min(2, len(agents) - 2) + 1)
    }
    shapes = dealt(weights, count, rng)
    actives = dealt(dict.fromkeys(agents, 1), count, rng)
    examples = []
    for index, ((kind, sessions), active) in enumerate(zip(shapes, actives)):
        suspended = rng.sample([a for a in agents if a != active], sessions)
        newcomer = rng.choice([a for a in agents if a != active and a not in suspended])
        first = rng.choice(by_agent[active])
        turns = _turns_before(kind, active, suspended, first, by_agent, rng)
        message, gold, tags = _new_message(kind, rng, by_agent, active, first, suspended, newcomer)
        if regional_rng.random() < REGIONAL_SHARE and (regional := regionalism(message, first.language)):
            message, tags = regional, tags + ["regionalismo"]
        state = State(active_agent=active, suspended_sessions=suspended, recent_turns=turns)
        examples += _d2_and_d3(dataset, index, kind, state, message, gold, tags, first.language)
    return examples


def _turns_before(
    kind: str,
    active: str,
    suspended: list[str],
    first: Utterance,
    by_agent: dict[str, list[Utterance]],
    rng: random.Random,
) -> list[Turn]:
    """The conversation before its new message: each suspended session's request and its agent's close,
    the active agent's first request, then what the active agent says last, which the kind of new message
    must follow from (a question before a short reply, the ambiguous prompt before an ambiguous one)."""
    turns: list[Turn] = []
    for agent in suspended:
        turns += [
            Turn(role="user", text=rng.choice(by_agent[agent]).text, agent_id=agent),
            Turn(role="agent", agent_id=agent, text=rng.choice(AGENT_DONE)),
        ]
    turns.append(Turn(role="user", text=first.text, agent_id=active))
    agent_says = rng.choice(AGENT_QUESTIONS) if kind == "resposta_curta" else rng.choice(AGENT_DONE)
    if kind == "ambigua":
        agent_says = AMBIGUOUS_PROMPT
    turns.append(Turn(role="agent", agent_id=active, text=agent_says))
    return turns


def _d2_and_d3(
    dataset: str, index: int, kind: str, state: State, message: str, gold: str, tags: list[str], language: str
) -> list[CanonicalExample]:
    """One composed conversation asked both ways, in one group: how to route its new message (D2) and
    whether it can be routed without asking the user (D3, no exactly when D2's gold is to ask)."""
    options = _session_options(state.active_agent, state.suspended_sessions)
    metadata = Metadata(
        domain=state.active_agent,
        language=language,
        source="composto",
        synthetic=True,
        length_bucket=length_bucket(message),
        ambiguity="alta" if gold == "desambiguar" else "media" if kind == "resposta_curta" else "baixa",
        turn_index=len(state.recent_turns),
        adversarial=tags,
        n_options=len(options),
    )
    group = f"{dataset}:conversa-{index}"
    return [
        CanonicalExample(
            id=f"{dataset}:D2:{index}",
            group_id=group,
            task="D2",
            state=state,
            utterance=message,
            question=D2_QUESTION,
            question_type="choice",
            options=options,
            gold_label=gold,
            metadata=metadata,
        ),
        CanonicalExample(
            id=f"{dataset}:D3:{index}",
            group_id=group,
            task="D3",
            state=state,
            utterance=message,
            question=D3_QUESTION,
            question_type="noul",
            options={"sim": "sim", "nao": "não"},
            gold_label="nao" if gold == "desambiguar" else "sim",
            metadata=metadata.model_copy(update={"n_options": 2}),
        ),
    ]


# -- real multi-service conversations: Schema-Guided Dialogue (English, CC BY-SA 4.0) ------------

SGD_CONTINUE_PER_DIALOGUE = 3  # every service switch is kept; continue turns are sampled (85 % of turns)
SGD_D1_PER_DIALOGUE = 2


def _sgd_turn(turn: dict) -> Turn:
    service = turn["frames"][0]["service"] if turn["frames"] else None
    return Turn(role="user" if turn["speaker"] == "USER" else "agent", text=turn["utterance"], agent_id=service)


def _by_agent(utterances: list[Utterance]) -> dict[str, list[Utterance]]:
    """The utterances of each agent (those whose intent names one)."""
    by_agent: dict[str, list[Utterance]] = {}
    for utterance in utterances:
        agent = agent_of(utterance.intent)
        if agent:
            by_agent.setdefault(agent, []).append(utterance)
    return by_agent


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


# -- a team's own canonical files -------------------------------------------------------------


class CanonicalFileError(AdriError, ValueError):
    """A line of a canonical file that does not follow the format; names the file, line and field."""


@dataclass
class CanonicalFile:
    examples: list[CanonicalExample]
    where: dict[str, str]  # example id -> "<file>: line N"
    # ("<file>: line N", example) for examples whose two annotators disagree with no adjudication: not
    # scored, but their labels still count in the agreement between annotators
    excluded: list[tuple[str, CanonicalExample]]
    # a built-in dataset's test split used as a test file: the hash it was frozen with (checked)
    frozen_hash: str | None = None


def load_canonical(path: Path) -> list[CanonicalExample]:
    """Every example of a JSON-lines file (or of every .jsonl file in a folder), each line checked."""
    return located_canonical(path).examples


def with_adjudicated_gold(example: CanonicalExample) -> CanonicalExample | None:
    """The gold the benchmark scores against: the adjudicated label when there is one; None when two
    annotators disagree and nobody adjudicated (such an example is excluded, and counted)."""
    if example.adjudicated_label is not None:
        return CanonicalExample.model_validate(example.model_dump() | {"gold_label": example.adjudicated_label})
    first, second, *_ = example.annotator_labels + [None, None]
    if first is not None and second is not None and _label_key(first) != _label_key(second):
        return None
    return example


def _label_key(label) -> tuple:
    return tuple(sorted(label)) if isinstance(label, list) else (label,)


def located_canonical(path: Path) -> CanonicalFile:
    """The examples of a canonical file or folder, each line checked, with where each was read and
    which were excluded (annotators disagree, no adjudicated label); gold is the adjudicated label
    when present."""
    from pydantic import ValidationError

    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    if not files or not all(f.is_file() for f in files):
        raise CanonicalFileError(f"{path}: no canonical JSON-lines file here")
    examples, seen, where, excluded = [], {}, {}, []
    for file in files:
        for number, line in enumerate(read_utf8(file, CanonicalFileError).splitlines(), start=1):
            if not line.strip():
                continue
            try:
                example = CanonicalExample.model_validate_json(line)
            except ValidationError as exc:
                problem = exc.errors()[0]
                if problem["type"] == "json_invalid":
                    raise CanonicalFileError(f"{file}: line {number}: not valid JSON ({problem['msg']})") from None
                raise CanonicalFileError(f"{file}: line {number}: {describe_validation_error(problem)}") from None
            if example.id in seen:
                raise CanonicalFileError(f"{file}: line {number}: id {example.id!r} repeats line {seen[example.id]}")
            seen[example.id] = number
            try:
                scored = with_adjudicated_gold(example)
            except ValidationError as exc:
                raise CanonicalFileError(
                    f"{file}: line {number}: adjudicated_label: {describe_validation_error(exc.errors()[0])}"
                ) from None
            if scored is None:
                excluded.append((f"{file}: line {number}", example))
                continue
            examples.append(scored)
            where[example.id] = f"{file}: line {number}"
    if not examples:
        raise CanonicalFileError(
            f"{path}: no examples"
            + (f" ({len(excluded)} excluded: annotators disagree with no adjudicated label)" if excluded else "")
        )
    return CanonicalFile(examples, where, excluded)


def build_dataset(
    utterances: list[Utterance],
    descriptions: dict[str, str],
    dataset: str,
    seed: int = 13,
    split_seed: int = 7,
    unseen_share: float = 0.0,
) -> tuple[list[CanonicalExample], dict[str, str]]:
    """(examples, example id -> split). D1 is split by utterance group first; the multi-intent
    messages (D4) and the composed conversations (D2/D3) of each split are made only of that split's
    utterances, so no utterance reaches two splits whatever task it feeds. `unseen_share`: leave
    intents out (_with_unseen_intents)."""
    if unseen_share:
        return _with_unseen_intents(utterances, descriptions, dataset, seed, split_seed, unseen_share)
    d1 = build_d1(utterances, descriptions, seed=seed, dataset=dataset)
    examples = d1 + build_d5(utterances, seed=seed + 12, dataset=dataset)  # D5 shares its utterance's group
    split_of = assign_splits(examples, seed=split_seed)
    split_of_group = {e.group_id: split_of[e.id] for e in d1}
    for offset, split in enumerate(SPLITS):
        mine = [u for u in utterances if split_of_group.get(u.group_id) == split]
        composed = build_d4(
            mine, descriptions, seed=seed + 8 + offset, dataset=f"{dataset}:{split}"
        ) + build_conversations(
            mine,
            seed=seed + 4 + offset,
            dataset=f"{dataset}:{split}",
            **({"per_utterance": DEV_CONVERSATIONS_PER_UTTERANCE, "bare_commands": True} if split == "dev" else {}),
        )
        examples += composed
        split_of |= {e.id: split for e in composed}
    return examples, split_of


UNSEEN_TAG = "intencao_nao_vista"  # metadata.adversarial of a request for an intent no split fitted on


def _with_unseen_intents(
    utterances: list[Utterance], descriptions: dict[str, str], dataset: str, seed: int, split_seed: int, share: float
) -> tuple[list[CanonicalExample], dict[str, str]]:
    """Leave intents out: a seeded `share` of the intents is taken out of the source, utterances and
    descriptions alike, before anything is built, so no split of any task reads them; the others make
    the dataset as usual. Each left-out utterance joins the test split as a D1 request among the kept
    intents only, its gold `sem_correspondencia`: a deployment's catalogue does not have that intent,
    and the router must say so (tagged UNSEEN_TAG, so the report reads them apart)."""
    intents = sorted({u.intent for u in utterances if u.intent != NO_MATCH})
    unseen = set(random.Random(seed + 31).sample(intents, max(1, round(share * len(intents)))))
    kept = [u for u in utterances if u.intent not in unseen]
    kept_descriptions = {i: d for i, d in descriptions.items() if i not in unseen}
    examples, split_of = build_dataset(kept, kept_descriptions, dataset, seed, split_seed)
    offered = sorted({u.intent for u in kept if u.intent != NO_MATCH} | set(kept_descriptions))
    left_out = build_d1(
        [u for u in utterances if u.intent in unseen],
        kept_descriptions,
        seed=seed + 31,
        p_gold_eligible=0.0,
        dataset=f"{dataset}:unseen",
        offered=offered,
    )
    left_out = [
        e.model_copy(
            update={"metadata": e.metadata.model_copy(update={"adversarial": [*e.metadata.adversarial, UNSEEN_TAG]})}
        )
        for e in left_out
    ]
    return examples + left_out, split_of | {e.id: "test" for e in left_out}
