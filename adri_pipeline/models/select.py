"""Reach a model by name: 'ollama:qwen2.5:7b' or 'openai:gemma3-270m'."""

from __future__ import annotations

from adri_pipeline.config import Settings
from adri_pipeline.models.base import ChatServer

PROVIDERS = ("ollama", "openai")


def parse_host(spec: str) -> tuple[str, int]:
    """'http://gpu-box:11434*4' -> (url, 4 parallel slots); without '*N', one slot."""
    host, _, slots = spec.strip().partition("*")
    return host.strip(), int(slots) if slots else 1


def is_served_model(name: str) -> bool:
    """'ollama:<model>' or 'openai:<model>': a model reached through a server (an LLM baseline, a judge)."""
    provider, sep, model = name.partition(":")
    return bool(sep) and provider in PROVIDERS and bool(model)


def make_server(provider: str, host: str, timeout_s: float, keep_alive: str = "10m") -> ChatServer:
    if provider == "ollama":
        from adri_pipeline.models.ollama import OllamaServer

        return OllamaServer(host, timeout_s, keep_alive)
    if provider == "openai":
        from adri_pipeline.models.openai import OpenAIServer

        return OpenAIServer(host, timeout_s, keep_alive)
    raise ValueError(f"unknown model provider {provider!r} (one of {', '.join(PROVIDERS)})")


def chat_server(name: str, settings: Settings | None = None, timeout_s: float = 120.0) -> tuple[ChatServer, str]:
    """'openai:gemma3-270m' -> (the first configured OpenAI-compatible server, 'gemma3-270m')."""
    if not is_served_model(name):
        raise ValueError(f"model {name!r}: write it as ollama:<model> or openai:<model>")
    provider, _, model = name.partition(":")
    settings = settings or Settings()
    host = parse_host(settings.hosts_for(provider)[0])[0]
    return make_server(provider, host, timeout_s), model
