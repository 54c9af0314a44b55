"""The one state serialization every candidate reads ("Contexto:" block, then "Mensagem:").

Versioned with its truncation policy (TRUNCATION_POLICY): the last turns are kept, newest first,
until the text fits, and the "Mensagem:" is always kept. The benchmark serializes to the smallest
effective context among the candidates (multilingual-e5-small: 512 tokens; about 3 characters per
token in Portuguese -> 1,400 characters, leaving room for the message); then each candidate reads the
state cut by the same policy to its own token limit (`fit_tokens`: its context, counted by its own
tokenizer), so a state sent by any client to `adri routing serve` is cut before a model sees it.
Candidates receive only the System One request built here (jev/contract.py), never the example object.
"""

from __future__ import annotations

import re

from adri_pipeline.jev.contract import DEFAULT_MODEL, NO, YES
from adri_pipeline.jev.examples import CanonicalExample, State, Turn

SERIALIZER_VERSION = "jev-state-v2"  # v2: the JEV design's canonical state (sessions are agent ids)
# v2: the same newest-turns-first policy to each candidate's token limit, the message's head kept last
TRUNCATION_POLICY = "jev-truncation-v2"
MAX_STATE_CHARS = 1400
MAX_TURNS = 6
MAX_TURN_CHARS = 240


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _turn(turn: Turn) -> str:
    who = "usuário" if turn.role == "user" else f"agente {turn.agent_id or '?'}"
    text = _one_line(turn.text)  # one line per turn, whatever the source
    text = text if len(text) <= MAX_TURN_CHARS else text[: MAX_TURN_CHARS - 1] + "…"
    return f"- {who}: {text}"


def serialize_facts(facts: dict) -> str:
    """A mirror decision point's state (facts the caller computed) in the same "Contexto:" ...
    "Mensagem:" shape; the key `mensagem` is the message."""
    lines = ["Contexto:"] + [f"{k}: {v}" for k, v in facts.items() if k != "mensagem"]
    return "\n".join(lines + [f"Mensagem: {facts.get('mensagem', '')}"])


def _last_exchange(state: State, agent: str) -> str:
    """What a suspended session was about: the user's last turn to that agent (else its last turn)."""
    mine = [t for t in state.recent_turns if t.agent_id == agent]
    return next((t.text for t in reversed(mine) if t.role == "user"), mine[-1].text if mine else "")


def _render(head: list[str], turns: list[str], tail: list[str]) -> str:
    body = ["Últimos turnos:", *turns] if turns else ["Últimos turnos: nenhum"]
    return "\n".join(head + body + tail)


def _newest_turns_that_fit(head: list[str], turns: list[str], tail: list[str], fits) -> str:
    """The truncation policy: the last MAX_TURNS turns, newest first, while the text `fits`."""
    kept: list[str] = []
    for line in reversed(turns[-MAX_TURNS:]):
        if not fits(_render(head, [line, *kept], tail)):
            break
        kept.insert(0, line)
    return _render(head, kept, tail)


def serialize_state(state: State, utterance: str, max_chars: int = MAX_STATE_CHARS) -> str:
    head = ["Contexto:", f"Agente ativo: {state.active_agent or 'nenhum'}"]
    if state.suspended_sessions:
        head.append("Sessões suspensas:")
        for agent in state.suspended_sessions:
            head.append(f"- sessão {agent}: {_one_line(_last_exchange(state, agent))[:MAX_TURN_CHARS]}")
    else:
        head.append("Sessões suspensas: nenhuma")
    turns = [_turn(turn) for turn in state.recent_turns[-MAX_TURNS:]]
    return _newest_turns_that_fit(head, turns, [f"Mensagem: {utterance}"], lambda text: len(text) < max_chars)


MAX_CHARS_PER_TOKEN = 16  # no tokenizer here reads more characters as one token: a first cut, before counting
MAX_HEAD_LINES = 32  # "Contexto:", the active agent, the suspended sessions: the serializer writes a few


def _one_turn_line(line: str) -> str:
    return line if len(line) <= MAX_TURN_CHARS else line[: MAX_TURN_CHARS - 1] + "…"


def fit_tokens(text: str, max_tokens: int, count) -> str:
    """`text` (a serialized state, or any client's) cut to `max_tokens` as `count` counts them, by the
    truncation policy: the newest turns that fit (each one line of at most MAX_TURN_CHARS), then, if the
    message alone is over, the message's head. A text not written by the serializer is all message
    (parse_state). A text within the limit is returned unchanged; no text is counted whole when it is
    longer than MAX_CHARS_PER_TOKEN characters per token of the limit."""
    room = max_tokens * MAX_CHARS_PER_TOKEN
    if len(text) <= room and count(text) <= max_tokens:
        return text
    at = text.find("\nMensagem: ")
    if not text.startswith("Contexto:") or at < 0:
        return _head_within("", text, max_tokens, count)
    lines = text[:at].split("\n")
    head = [_one_turn_line(line) for line in lines if not _TURN.match(line) and not line.startswith("Últimos turnos")][
        :MAX_HEAD_LINES
    ]
    while len(head) > 2 and count(_render(head, [], [])) > max_tokens // 2:  # the sessions leave room
        head.pop()
    turns = [_one_turn_line(line) for line in lines[-4 * MAX_TURNS :] if _TURN.match(line)]
    message = text[at + 1 :][:room]
    kept = _newest_turns_that_fit(head, turns, [message], lambda t: count(t) <= max_tokens)
    if count(kept) <= max_tokens:
        return kept
    return _head_within(_render(head, [], []) + "\n", message, max_tokens, count)


def _head_within(prefix: str, message: str, max_tokens: int, count) -> str:
    """prefix + the longest head of `message` within `max_tokens` (a bisection on its length)."""
    low, high = 0, min(len(message), max_tokens * MAX_CHARS_PER_TOKEN)
    while low < high:
        middle = (low + high + 1) // 2
        if count(prefix + message[:middle]) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return prefix + message[:low]


# the JEV design, task 21 (a rule for every question): D4's, for each of its yes/no questions
D4_CRITERIA = {
    "true": "sim: a mensagem pede isto, mesmo que peça outras coisas junto",
    "false": "não: a mensagem não pede isto",
}


def to_request(example: CanonicalExample, model: str = DEFAULT_MODEL) -> dict:
    """The System One request; D4 asks one yes/no question per candidate option in the same request,
    each named by its option. A yes/no question's `sim` / `nao` descriptions travel as the wire's
    `true` / `false` criteria."""
    state = serialize_state(example.state, example.utterance)
    if example.task == "D4":  # the decision rule travels as each question's yes / no criteria
        questions = {
            option: {"type": "noul", "instructions": f"A mensagem pede: {description}?", "criteria": D4_CRITERIA}
            for option, description in example.options.items()
        }
    elif example.question_type == "noul":
        questions = {
            example.task: {
                "type": "noul",
                "instructions": example.question,
                "criteria": {"true": example.options.get(YES, "sim"), "false": example.options.get(NO, "não")},
            }
        }
    else:
        questions = {
            example.task: {
                "type": example.question_type,
                "instructions": example.question,
                "criteria": dict(example.options),
            }
        }
    return {"model": model, "state": state, "questions": questions}


_FIELD = re.compile(r"^(Agente ativo|Sessões suspensas|Mensagem): (.*)$", re.MULTILINE)
_TURN = re.compile(r"^- (usuário|agente (\S+)): (.*)$", re.MULTILINE)
_SESSION = re.compile(r"^- sessão (\S+): (.*)$", re.MULTILINE)


def parse_state(text: str) -> dict:
    """What a candidate may know: the fields of the serialized text, nothing more."""
    fields = dict(_FIELD.findall(text))
    suspended = _SESSION.findall(text)  # (agent, last user turn to it)
    turns = [
        {"role": "user" if who == "usuário" else "agent", "agent": agent or None, "text": said}
        for who, agent, said in _TURN.findall(text)
    ]
    # a state from elsewhere (a request `adri routing serve` did not build): the whole text is the message
    message = fields["Mensagem"] if "Mensagem" in fields else " ".join(text.split())
    return {
        "active_agent": None if fields.get("Agente ativo") == "nenhum" else fields.get("Agente ativo"),
        "suspended": suspended,
        "turns": turns,
        "message": message,
    }
