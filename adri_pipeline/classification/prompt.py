"""The one place that builds what the model reads: fixed system message, response schema, user turns.

The system message holds the whole codebook so the server can reuse the prompt prefix; the user
message holds only the document. signature = sha256(system message + schema).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from adri_pipeline.classification.codebook import Codebook, Variable

PROMPT_VERSION = "2026-11-30.1"  # evidence may come from the title
EVIDENCE_MAX_CHARS = 200
EVIDENCE_MAX_WORDS = 20

EVIDENCE_RULES = (
    "Regras de evidência:\n"
    '- Para cada variável, responda primeiro "evidencia" e depois "valor".\n'
    f'- "evidencia" é um trecho copiado literalmente do título ou do resumo, com no máximo {EVIDENCE_MAX_WORDS} '
    f"palavras e {EVIDENCE_MAX_CHARS} caracteres; não parafraseie, não traduza, não junte trechos.\n"
    '- "evidencia" só pode ficar vazia quando o valor indica ausência de informação (nao_informado, '
    "nao_se_aplica ou false).\n"
    "- Nunca copie os exemplos deste livro de códigos como evidência.\n"
    "- Responda apenas com o objeto JSON pedido."
)


@dataclass(frozen=True)
class Prompt:
    system_message: str
    schema: dict
    signature: str
    prompt_version: str = PROMPT_VERSION


def _describe_variable(name: str, var: Variable) -> str:
    lines = [f"## {name} ({var.type})", f"Definição: {var.definition}"]
    if var.type == "list":
        lines.append("Responda uma lista sem repetições com todos os valores que se aplicam.")
    if var.type == "text":
        lines.append('Responda um texto curto; use "nao_informado" quando o resumo não indicar.')
    for value, spec in var.values.items():
        line = f"- {value}: {spec.description}"
        if spec.examples:
            line += " Exemplos: " + "; ".join(f'"{e}"' for e in spec.examples)
        lines.append(line)
    if var.examples:
        lines.append("Exemplos de trechos: " + "; ".join(f'"{e}"' for e in var.examples))
    return "\n".join(lines)


def build_system_message(codebook: Codebook) -> str:
    parts = [codebook.instructions.strip(), EVIDENCE_RULES, "# Variáveis"]
    parts += [_describe_variable(name, var) for name, var in codebook.variables.items()]
    return "\n\n".join(parts)


def _value_schema(var: Variable) -> dict:
    if var.type == "enum":
        return {"type": "string", "enum": var.allowed_values()}
    if var.type == "list":
        return {
            "type": "array",
            "items": {"type": "string", "enum": var.allowed_values()},
            "uniqueItems": True,
            "minItems": 1,
        }
    if var.type == "boolean":
        return {"type": "boolean"}
    return {"type": "string", "minLength": 1, "maxLength": EVIDENCE_MAX_CHARS}


def build_response_schema(codebook: Codebook) -> dict:
    properties = {
        name: {
            "type": "object",
            # evidence first: the model commits to a quote before it answers
            "properties": {
                "evidencia": {"type": "string", "maxLength": EVIDENCE_MAX_CHARS},
                "valor": _value_schema(var),
            },
            "required": ["evidencia", "valor"],
            "additionalProperties": False,
        }
        for name, var in codebook.variables.items()
    }
    return {
        "type": "object",
        "properties": properties,
        "required": list(codebook.variables),
        "additionalProperties": False,
    }


def build_prompt(codebook: Codebook) -> Prompt:
    system = build_system_message(codebook)
    schema = build_response_schema(codebook)
    payload = system + "\n" + json.dumps(schema, sort_keys=True, ensure_ascii=False)
    return Prompt(system, schema, hashlib.sha256(payload.encode("utf-8")).hexdigest())


def build_user_message(title: str, text: str) -> str:
    return f"Título: {title.strip()}\n\nResumo: {text.strip()}"


def build_retry_message(problems: dict[str, list[str]]) -> str:
    """Names each failing variable and why, so the model fixes those and keeps the rest."""
    lines = ["A resposta anterior não segue o livro de códigos nestas variáveis:"]
    lines += [f"- {name}: {'; '.join(reasons)}" for name, reasons in problems.items()]
    lines.append(
        "Responda novamente o objeto JSON completo, corrigindo essas variáveis; "
        "a evidência deve ser copiada literalmente do título ou do resumo."
    )
    return "\n".join(lines)
