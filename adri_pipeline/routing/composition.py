"""Canonical examples composed from a source's utterances (marked synthetic where composed).

D1 choice among 2-19 eligible intents + sem_correspondencia (the gold intent is left out of the
eligible list for a seeded share of examples: out of scope). D4 (one yes/no per eligible intent)
only on messages with two intents: two utterances joined, marked synthetic. D2 session continuity and
D3 "can route without asking" are composed conversations. D5 (guardrail) where the source annotates
scope: CLINC150's out-of-scope utterances. Each split is composed from its own utterances only.
"""

from __future__ import annotations

import random
import re

from adri_pipeline.jev.examples import NO_MATCH, CanonicalExample, Metadata, State, Turn, length_bucket
from adri_pipeline.routing.questions import (
    D1_QUESTION,
    D2_QUESTION,
    D3_QUESTION,
    D4_QUESTION,
    D5_OPTIONS,
    D5_QUESTION,
    MAX_OPTIONS,
    MIN_OPTIONS,
    NO_MATCH_DESCRIPTION,
)
from adri_pipeline.routing.sources import Utterance
from adri_pipeline.routing.splits import SPLITS, assign_splits

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


def agent_of(intent: str) -> str | None:
    return next((agent for prefix, agent in AGENT_OF_PREFIX if intent.startswith(prefix)), None)


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


def _by_agent(utterances: list[Utterance]) -> dict[str, list[Utterance]]:
    """The utterances of each agent (those whose intent names one)."""
    by_agent: dict[str, list[Utterance]] = {}
    for utterance in utterances:
        agent = agent_of(utterance.intent)
        if agent:
            by_agent.setdefault(agent, []).append(utterance)
    return by_agent


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
