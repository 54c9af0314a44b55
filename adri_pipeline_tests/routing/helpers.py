"""A team's annotated file in the JEV design's canonical format, line by line (the canonical-file,
freezing, builder and performance tests all write one), and candidates whose logits are fixed."""

import json

import numpy as np

from adri_pipeline.routing.candidates import Candidate, Kind

OPTIONS = {
    "continuar_agente_ativo": "continuar com o agente ativo",
    "retomar_sessao:listas": "voltar às listas",
    "iniciar_novo_agente": "outro assunto",
    "desambiguar": "perguntar ao usuário",
}


def line(i: int, gold: str = "continuar_agente_ativo", utterance: str = "sim pfv", **extra) -> dict:
    """Exactly the shape the JEV design gives for a canonical example."""
    return {
        "id": f"conv-{i:06d}-t04-D2",
        "group_id": f"conv-{i:06d}",
        "task": "D2",
        "state": {
            "active_agent": "timers",
            "suspended_sessions": ["listas"],
            "recent_turns": [
                {"role": "user", "text": "põe leite na lista", "agent_id": "listas"},
                {"role": "agent", "agent_id": "listas", "text": "Anotado."},
                {"role": "user", "text": "um timer de 10 minutos"},
                {"role": "agent", "agent_id": "timers", "text": "Começo agora?"},
            ],
            "eligible_intents": [],
        },
        "utterance": utterance,
        "question": "Como o orquestrador deve tratar este turno?",
        "question_type": "choice",
        "options": OPTIONS,
        "gold_label": gold,
        "metadata": {
            "taxonomy_version": "v0.1",
            "domain": "casa",
            "length_bucket": "curto",
            "ambiguity": "media",
            "turn_index": 4,
            "adversarial": ["curta_dependente_de_contexto"],
            "n_options": 4,
            "synthetic": False,
            "author": "equipe-a",
        },
        **extra,
    }


def write(path, rows):
    """The rows as a JSON-lines file, one example a line, as a team hands it over."""
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    return path


class Fixed(Candidate):
    """Always "a" over "b" by a logit margin of 2; `right` says how often "a" is the gold."""

    name = "fixed"
    kind = Kind("candidate", trains=False, batching="in_process", confidence="fixed logits")

    def logits(self, request: dict) -> dict:
        return {"D2": {"a": 2.0, "b": 0.0}}


class PrefersTheSecond(Fixed):
    """ "b", the second option, over "a" by 2 on every question of the request."""

    def logits(self, request: dict) -> dict:
        return {name: {"a": 0.0, "b": 2.0} for name in request["questions"]}


class TwoMessages:
    """An encoder that knows two messages: one like the fit data, one orthogonal to it."""

    VECTORS = {"familiar": [1.0, 0.0], "foreign": [0.0, 1.0]}

    def __call__(self, texts: list[str]) -> np.ndarray:
        return np.array([self.VECTORS[t] for t in texts])

    def message(self, text: str) -> np.ndarray:
        return self([text])[0]
