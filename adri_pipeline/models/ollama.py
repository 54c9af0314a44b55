"""An Ollama server through the official `ollama` client.

Known behaviours (docs/models.md): `format` may be ignored (answers are validated afterwards
anyway), a full queue answers 503, an unknown model 404; the digest comes from `list()`, the family
from `show()`, what is loaded from `ps()`; `keep_alive=0` unloads."""

from __future__ import annotations

import httpx
import ollama

from adri_pipeline.models import base
from adri_pipeline.models.base import ChatAnswer, ModelInfo, NextToken

NANOSECONDS = 1e9


def make_client(host: str, timeout_s: float) -> ollama.Client:
    """The one way this project talks to an Ollama server: a bounded connect, a request timeout."""
    return ollama.Client(host=host, timeout=httpx.Timeout(timeout_s, connect=5.0))


def _same_model(listed: str | None, wanted: str) -> bool:
    return listed in (wanted, f"{wanted}:latest")


class OllamaServer:
    provider = "ollama"
    start_hint = "start it (`ollama serve`)"
    resident = False

    def __init__(self, host: str, timeout_s: float = 300.0, keep_alive: str = "10m"):
        self.host = host
        self.timeout_s = timeout_s
        self.keep_alive = keep_alive  # how long Ollama keeps the model loaded after each request
        self.client = make_client(host, timeout_s)

    def missing_hint(self, model: str) -> str:
        return f"run `ollama pull {model}`"

    def _call(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ollama.ResponseError as exc:
            if exc.status_code == 404:
                raise base.ModelMissing(exc.error) from None
            if exc.status_code in (429, 503):
                raise base.Overloaded(exc.status_code, exc.error) from None
            raise base.ServerError(exc.status_code, exc.error) from None
        except httpx.TimeoutException:
            raise base.TimedOut(f"{self.host} did not answer within {self.timeout_s:g} s") from None
        except (ConnectionError, httpx.TransportError) as exc:
            raise base.ServerUnreachable(f"{type(exc).__name__}: {exc}") from None

    def model_info(self, model: str) -> ModelInfo:
        listed = self._call(self.client.list)
        match = [m for m in listed.models if _same_model(m.model, model)]
        if not match:
            raise base.ModelMissing(f"model {model!r} is not pulled on {self.host}")
        return ModelInfo(model, match[0].digest or "", match[0].size or 0)

    def family(self, model: str) -> str:
        """The family Ollama reports (`show` details: qwen2, gemma3, llama ...)."""
        details = self._call(self.client.show, model).details
        return (details.family or "") if details else ""

    def is_loaded(self, model: str) -> bool:
        return any(_same_model(m.model, model) for m in self._call(self.client.ps).models)

    def load(self, model: str) -> None:
        self._call(self.client.generate, model=model, prompt="", keep_alive=self.keep_alive)

    def unload(self, model: str) -> None:
        self._call(self.client.generate, model=model, prompt="", keep_alive=0)

    def chat(self, model: str, messages: list[dict], schema: dict, options: dict) -> ChatAnswer:
        """`options`: Ollama's own (temperature, seed, num_ctx) and `max_tokens` as the other servers
        call it (Ollama's num_predict)."""
        options = dict(options)
        if "max_tokens" in options:
            options["num_predict"] = options.pop("max_tokens")
        response = self._call(
            self.client.chat,
            model=model,
            messages=messages,
            format=schema,
            think=False,
            options=options,
            keep_alive=self.keep_alive,
        )
        return ChatAnswer(
            raw=response.message.content or "",
            prompt_tokens=response.prompt_eval_count or 0,
            completion_tokens=response.eval_count or 0,
            finish_reason=response.done_reason or "",
            timings={
                "total_s": (response.total_duration or 0) / NANOSECONDS,
                "load_s": (response.load_duration or 0) / NANOSECONDS,
                "prompt_eval_s": (response.prompt_eval_duration or 0) / NANOSECONDS,
                "eval_s": (response.eval_duration or 0) / NANOSECONDS,
            },
        )

    def next_token(self, model: str, messages: list[dict], top: int, options: dict) -> NextToken:
        """Ollama's `logprobs` / `top_logprobs` (the server and the client gained them in November
        2025; an older server ignores them and answers without: NoLogprobs)."""
        options = {"temperature": 0.0, **{k: options[k] for k in ("seed", "num_ctx") if k in options}, "num_predict": 1}
        response = self._call(
            self.client.chat,
            model=model,
            messages=messages,
            think=False,
            options=options,
            logprobs=True,
            top_logprobs=top,
            keep_alive=self.keep_alive,
        )
        if not response.logprobs or not response.logprobs[0].top_logprobs:
            raise base.NoLogprobs(
                f"{self.host} answered {model!r} without log-probabilities (an Ollama from before November 2025?)"
            )
        return NextToken(
            {t.token: t.logprob for t in response.logprobs[0].top_logprobs}, response.prompt_eval_count or 0
        )
