"""A team's annotated file in the JEV design's canonical format, line by line: the canonical-file,
freezing, builder and performance tests all write one."""

import json

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
