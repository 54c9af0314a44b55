"""The mirror gate's traffic for its tests and the drift benchmark, **synthetic**: templates written by
the project's engineer. Payments states are what a payments agent's gate sees (the traffic its mirror
was evaluated on); browsing states come from another agent altogether. And a log that keeps records
in memory."""

from __future__ import annotations

import threading

YES_NO = {"sim": "sim", "nao": "não"}


class MemoryLog:
    def __init__(self):
        self.records, self.lock = [], threading.Lock()

    def write(self, record, *, redacted=False):
        with self.lock:
            self.records.append(record)


def payments(rng, count):
    """States like the ones a payments agent's gate sees (the traffic its mirror was evaluated on)."""
    return [
        {
            "pedido": f"{rng.choice(['transferir', 'pagar', 'agendar', 'estornar'])} {rng.randint(1, 9000)} reais "
            f"para {rng.choice(['a conta poupança', 'o fornecedor', 'a fatura do cartão', 'o aluguel'])}",
            "canal": rng.choice(["app", "web"]),
            "valor": rng.randint(1, 9000),
        }
        for _ in range(count)
    ]


def browsing(rng, count):
    """States of another agent altogether: English, another tool (traffic the mirror never saw)."""
    return [
        {
            "request": f"{rng.choice(['summarize this pdf', 'translate the page to french', 'book a flight'])} #{i}",
            "tool": rng.choice(["browser", "calendar"]),
        }
        for i in range(count)
    ]
