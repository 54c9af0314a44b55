"""Scripted model answers for the loopback Ollama server, built from the request itself."""

from __future__ import annotations

import json


def document_text(request: dict) -> str:
    user = [m for m in request["messages"] if m["role"] == "user"][0]["content"]
    return user.split("Resumo: ", 1)[1]


def answer(schema: dict, text: str, overrides: dict | None = None) -> dict:
    """A valid answer: first informative option, evidence = the first 8 words of the abstract."""
    quote = " ".join(text.split()[:8])
    result = {}
    for name, spec in schema["properties"].items():
        valor = spec["properties"]["valor"]
        if valor["type"] == "string" and "enum" in valor:
            value = valor["enum"][0]
        elif valor["type"] == "array":
            value = [valor["items"]["enum"][0]]
        elif valor["type"] == "boolean":
            value = True
        else:
            value = quote
        result[name] = {"evidencia": quote, "valor": value}
    for name, item in (overrides or {}).items():
        result[name] = {**result[name], **item}
    return result


def answer_from_request(request: dict) -> str:
    return json.dumps(answer(request["format"], document_text(request)), ensure_ascii=False)
