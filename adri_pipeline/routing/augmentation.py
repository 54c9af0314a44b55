"""Training-time variation of dev's conversations for the session models: copies a fit source does not
hold but a deployment will meet (catalogues whose agents the models never saw, turns that are not safe
to decide), composed from the source's own conversations with the generator's phrases. Apart from the
models, so a model reads requests and learns from rows, and what it learns from is decided here."""

from __future__ import annotations

from adri_pipeline.routing.composition import AGENT_DONE, BARE_COMMANDS


def renamed_agents(state: dict, criteria: dict, gold: str, tag: int) -> tuple[dict, dict, str]:
    """A D2 conversation with every agent on screen renamed to an id no catalogue has, the options and
    the gold renamed alike; the texts (turns, descriptions) stay: what relates the message to each
    option is kept, what names the option is not."""
    agents = [a for a in [state["active_agent"], *(a for a, _ in state["suspended"])] if a]
    new = {agent: f"agente_{tag}_{i}" for i, agent in enumerate(dict.fromkeys(agents))}

    def option(name: str) -> str:
        agent = name.removeprefix("retomar_sessao:")
        return f"retomar_sessao:{new.get(agent, agent)}" if name.startswith("retomar_sessao:") else name

    renamed = {
        **state,
        "active_agent": new.get(state["active_agent"], state["active_agent"]),
        "suspended": [(new.get(a, a), last) for a, last in state["suspended"]],
        "turns": [{**t, "agent": new.get(t["agent"], t["agent"])} for t in state["turns"]],
    }
    return renamed, {option(k): v for k, v in criteria.items()}, option(gold)


def unsafe_copies(d2: list[tuple]) -> list[tuple]:
    """When a fit source never shows a "not safe to decide" turn (SGD's real dialogues), its model
    answered "continue" to a bare "cancela" at p = 1.00 on another catalogue. So some of its
    conversations are composed again with that decision, by the JEV design's D2 rule: after the active
    agent finished (nobody waiting for an answer), with a suspended session open, a bare command both
    agents could take (training-time variation; none where the source has such turns)."""
    if any(gold == "desambiguar" for _, _, gold, _ in d2):
        return []
    copies = []
    for index, (state, criteria, _, group) in enumerate(d2[::4]):
        if not state["suspended"] or "desambiguar" not in criteria:
            continue
        turns = list(state["turns"])
        if turns and turns[-1]["role"] == "agent":
            turns[-1] = {**turns[-1], "text": AGENT_DONE[index % len(AGENT_DONE)]}
        message = BARE_COMMANDS[index % len(BARE_COMMANDS)]
        copies.append(({**state, "turns": turns, "message": message}, criteria, "desambiguar", group))
    return copies


def catalogue_versions(
    state: dict, criteria: dict, gold: str, tag: int, renamed_weight: float, known_agents: set[str]
) -> list[tuple[tuple[dict, dict, str], float]]:
    """((state, criteria, gold), weight) for each version of a D2 conversation the session ranker learns
    from: as dev's catalogue (weight 1), and with its agents renamed to ids the agent model never saw
    (`renamed_weight`); once, with both weights, when the agent model knows none of its agents already
    (the team's turns): renaming would change nothing."""
    if not known_agents & {state["active_agent"], *(a for a, _ in state["suspended"])}:
        return [((state, criteria, gold), 1.0 + renamed_weight)]
    return [((state, criteria, gold), 1.0), (renamed_agents(state, criteria, gold, tag), renamed_weight)]
