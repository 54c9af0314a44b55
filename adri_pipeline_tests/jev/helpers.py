"""The D2 example the JEV tests share: its serialized state is the golden file (jev/golden/d2_state.txt),
and the contract's and the LLM baseline's tests send the same request, a suspended session to resume."""

from adri_pipeline.jev.examples import CanonicalExample, State, Turn

D2 = CanonicalExample(
    id="t:D2:0",
    group_id="g0",
    task="D2",
    utterance="e a lista?",
    state=State(
        active_agent="timers",
        suspended_sessions=["listas"],
        recent_turns=[
            Turn(role="user", text="põe leite na\nlista", agent_id="listas"),
            Turn(role="agent", agent_id="listas", text="Leite anotado."),
            Turn(role="user", text="timer de 5 minutos", agent_id="timers"),
            Turn(role="agent", agent_id="timers", text="Timer iniciado."),
        ],
    ),
    question="Continua, retoma, inicia ou desambigua?",
    question_type="choice",
    options={
        "continuar_agente_ativo": "continuar",
        "retomar_sessao:listas": "retomar listas",
        "iniciar_novo_agente": "novo",
        "desambiguar": "perguntar",
    },
    gold_label="retomar_sessao:listas",
)
