"""What anchors a D2 message to each open session, read from the serialized state and the options'
descriptions only, in terms that do not depend on which catalogue the agents come from: the words the
message shares with what a session is about and with that agent's last turn, whether that agent is
waiting for an answer, and whether it spoke last.

A model fitted on one catalogue learned which option names are common and collapsed on another
(issue 42: "features that relate the utterance to each option's own text"). These features carry the
JEV design's D2 rule instead: a short reply continues the agent that asked ("sim", "o segundo"), a
message that picks up a suspended session's words resumes it, a message that anchors nowhere starts a
new agent, and one that two sessions take alike is not safe to decide. They are weighed by a model,
and the same weights serve the active agent and every suspended one, so what is learned about
answering the active agent's question holds for a suspended agent's question too."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from adri_pipeline.privacy import folded

STEM = 5  # Portuguese inflects at the end: "parcela", "parcelar", "parcelamento" share their first five letters
# function words, which anchor nothing (accents folded)
STOPWORDS = frozenset(
    """
a ao aos aquela aquele aquilo as ate com como da das de dela dele deles do dos e ela ele eles em entao
essa esse esta estao este eu isso isto ja la lhe mais mas me meu minha meus minhas muito na nao nas
nem no nos nossa nosso num numa o os ou para pela pelo pode por pra pro qual quando que quem se sem
ser seu sua so sim ta tambem te tem tenho tu um uma uns voce voces vc vcs tbm pfv quero queria agora
ai aqui isso ok bom boa entao favor obrigado obrigada
""".split()
)
_WORD = re.compile(r"\w+")


def content_stems(text: str) -> set[str]:
    """The message's content words, accents folded and cut to their stem; numbers kept whole
    ("14h", "10x", "302"): a reply often is the figure the agent offered."""
    words = _WORD.findall(folded(text).lower())
    return {
        w if any(c.isdigit() for c in w) else w[:STEM]
        for w in words
        if any(c.isdigit() for c in w) or (len(w) >= 3 and w not in STOPWORDS)
    }


def overlap(message: set[str], text: str) -> float:
    """The share of the message's content words that `text` also has (0 for a message with none)."""
    if not message:
        return 0.0
    return len(message & content_stems(text)) / len(message)


@dataclass(frozen=True)
class Session:
    """One open session as the state shows it: its agent, what it is about (its option's description,
    the user's turns to it, its own turns) and its last turn."""

    agent: str
    topic: str
    last_turn: str
    spoke_last: bool

    @property
    def asked(self) -> bool:
        return self.last_turn.rstrip().endswith("?")


def sessions(state: dict, criteria: dict) -> dict[str, Session]:
    """Per session option (`continuar_agente_ativo`, `retomar_sessao:<agent>`), its Session."""
    agents = {"continuar_agente_ativo": state["active_agent"] or ""}
    agents |= {f"retomar_sessao:{agent}": agent for agent, _ in state["suspended"]}
    turns = state["turns"]
    last_speaker = next((t["agent"] for t in reversed(turns) if t["role"] == "agent"), None)
    suspended_last = dict(state["suspended"])
    found = {}
    for option, agent in agents.items():
        said = [t["text"] for t in turns if t["agent"] == agent and agent]
        own = [t["text"] for t in turns if t["role"] == "agent" and t["agent"] == agent and agent]
        topic = " ".join(filter(None, (criteria.get(option, ""), suspended_last.get(agent, ""), *said)))
        found[option] = Session(agent, topic, own[-1] if own else "", bool(agent) and agent == last_speaker)
    return found


def anchoring(message: str, state: dict, criteria: dict) -> dict[str, list[float]]:
    """Per session option: [words shared with its topic, the same minus the best other session's,
    words shared with its agent's last turn, the same minus the best other's, its agent asked
    something, it asked and the message is short, it spoke last, how many content words the message
    has (log): a reply with none ("pode ser") anchors by the question it answers, a request with
    several that no session shares ("quero pedir uma pizza") anchors nowhere]."""
    stems = content_stems(message)
    found = sessions(state, criteria)
    topic = {o: overlap(stems, s.topic) for o, s in found.items()}
    last = {o: overlap(stems, s.last_turn) for o, s in found.items()}
    short = float(len(message.split()) <= 3)

    def gap(scores: dict[str, float], option: str) -> float:
        return scores[option] - max((v for k, v in scores.items() if k != option), default=0.0)

    content = float(np.log1p(len(stems)))
    return {
        o: [
            topic[o],
            gap(topic, o),
            last[o],
            gap(last, o),
            float(s.asked),
            float(s.asked) * short,
            float(s.spoke_last),
            content,
        ]
        for o, s in found.items()
    }


ANCHOR_WIDTH = 8


def summary(message: str, found: dict[str, Session], rows: dict[str, list[float]]) -> list[float]:
    """What the non-session options read from the sessions' anchoring: how well the best session
    anchors the message (a new agent: nothing does), how close the two best come (not safe to
    decide: two take it alike), how many agents are waiting for an answer, how many content words
    the message has (log) and how many of them no open session has (log): a new agent is asked for
    in words of its own. `found`: the state's sessions, as `sessions` read them."""
    topic = sorted((r[0] + r[2] for r in rows.values()), reverse=True) or [0.0]
    second = topic[1] if len(topic) > 1 else 0.0
    stems = content_stems(message)
    anywhere = set().union(*(content_stems(f"{s.topic} {s.last_turn}") for s in found.values()))
    return [
        topic[0],
        topic[0] - second,
        float(sum(r[4] for r in rows.values())),
        float(np.log1p(len(stems))),
        float(np.log1p(len(stems - anywhere))),
    ]


SUMMARY_WIDTH = 5
