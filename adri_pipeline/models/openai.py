"""Any server that speaks the OpenAI chat-completions API (llama.cpp's llama-server, vLLM, SGLang,
LM Studio), through the official `openai` client.

The answer is constrained by the codebook's JSON Schema with `response_format` (json_schema); a
server that rejects it is asked for plain JSON mode instead and the answer is validated as always.
Identity of the weights (docs/models.md): when the server says which file it loaded (llama-server's
`/props` `model_path`) and that file is on this machine, the sha256 of the file; otherwise a hash of
the model card the server lists (`/v1/models`: id, root, size, parameters, context), which changes
when the server is pointed at other weights under the same name."""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path

import httpx
import openai

from adri_pipeline.models import base
from adri_pipeline.models.base import ChatAnswer, ModelInfo, NextToken, family_from_name

DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"
_VOLATILE_CARD_FIELDS = ("created", "permission", "object")


@lru_cache(maxsize=16)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


class OpenAIServer:
    provider = "openai"
    start_hint = "start it (`adri llm serve`, or your llama-server / vLLM / LM Studio)"
    resident = True  # these servers load their model at start: nothing to load or unload per run

    def __init__(self, host: str = DEFAULT_BASE_URL, timeout_s: float = 300.0, keep_alive: str = ""):
        """`keep_alive` is Ollama's; these servers keep their model until they stop."""
        self.host = host.rstrip("/")
        self.timeout_s = timeout_s
        self.client = openai.OpenAI(
            base_url=self.host,
            api_key=os.environ.get("OPENAI_API_KEY") or "not-needed",
            max_retries=0,
            timeout=openai.Timeout(timeout_s, connect=5.0),
        )  # the client's HTTP library's type, not httpx's
        self._json_schema = True  # False once the server rejected response_format json_schema

    def missing_hint(self, model: str) -> str:
        return "serve it under that name (llama-server --alias, vLLM --served-model-name) or pick one it lists"

    def _call(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except openai.NotFoundError as exc:
            raise base.ModelMissing(_message(exc)) from None
        except openai.APITimeoutError:
            raise base.TimedOut(f"{self.host} did not answer within {self.timeout_s:g} s") from None
        except openai.APIConnectionError as exc:
            raise base.ServerUnreachable(f"{type(exc.__cause__ or exc).__name__}: {exc.__cause__ or exc}") from None
        except openai.APIStatusError as exc:
            if exc.status_code in (429, 503):
                raise base.Overloaded(exc.status_code, _message(exc)) from None
            raise base.ServerError(exc.status_code, _message(exc)) from None

    def _listed(self) -> list[dict]:
        return [m.model_dump() for m in self._call(self.client.models.list).data]

    def model_info(self, model: str) -> ModelInfo:
        cards = self._listed()
        card = next((c for c in cards if c.get("id") == model), None)
        if card is None:
            served = ", ".join(sorted(c.get("id", "?") for c in cards)) or "none"
            raise base.ModelMissing(f"model {model!r} is not served at {self.host} (it serves: {served})")
        props = self._props()
        path = props.get("model_path") or ""
        meta = card.get("meta") or {}
        digest = (
            self._file_digest(path)
            or "card:"
            + hashlib.sha256(
                json.dumps(
                    {k: v for k, v in card.items() if k not in _VOLATILE_CARD_FIELDS}, sort_keys=True, default=str
                ).encode()
            ).hexdigest()
        )
        family = family_from_name(path or card.get("root") or card.get("id") or model)
        return ModelInfo(model, digest, int(meta.get("size") or 0), family)

    def _props(self) -> dict:
        """llama-server's /props (at the server's root, beside /v1); other servers have none."""
        root = self.host.removesuffix("/v1")
        try:
            response = httpx.get(f"{root}/props", timeout=5.0)
            return response.json() if response.status_code == 200 else {}
        except (httpx.HTTPError, ValueError):
            return {}

    @staticmethod
    def _file_digest(path: str) -> str | None:
        if not path or not os.path.isfile(path):
            return None
        stat = Path(path).stat()
        return _file_sha256(path, stat.st_size, stat.st_mtime_ns)

    def family(self, model: str) -> str:
        """From the weights the server names: the GGUF file (llama-server) or the repository (vLLM's root)."""
        return self.model_info(model).family

    def is_loaded(self, model: str) -> bool:
        return True

    def load(self, model: str) -> None:
        """The server loaded its model at start."""

    def unload(self, model: str) -> None:
        """Not ours to unload: the server keeps its model until it stops."""

    def chat(self, model: str, messages: list[dict], schema: dict, options: dict) -> ChatAnswer:
        """`options`: temperature, seed, max_tokens."""
        request = {k: options[k] for k in ("temperature", "seed", "max_tokens") if k in options}
        if self._json_schema:
            try:
                response = self._call(
                    self.client.chat.completions.create,
                    model=model,
                    messages=messages,
                    **request,
                    response_format={
                        "type": "json_schema",
                        "json_schema": {"name": "answer", "schema": schema, "strict": True},
                    },
                )
            except base.ServerError as exc:
                said = str(exc).lower()
                if exc.status not in (400, 422) or not ("response_format" in said or "json_schema" in said):
                    raise
                self._json_schema = False  # this server has no JSON Schema mode: plain JSON, validated after
        if not self._json_schema:
            response = self._call(
                self.client.chat.completions.create,
                model=model,
                messages=messages,
                **request,
                response_format={"type": "json_object"},
            )
        choice = response.choices[0]
        usage = response.usage
        timings = (response.model_extra or {}).get("timings") or {}
        return ChatAnswer(
            raw=choice.message.content or "",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            finish_reason=choice.finish_reason or "",
            timings={
                "prompt_eval_s": (timings.get("prompt_ms") or 0) / 1000,
                "eval_s": (timings.get("predicted_ms") or 0) / 1000,
                "prompt_cached_tokens": timings.get("cache_n", 0),
            },
        )

    def next_token(self, model: str, messages: list[dict], top: int, options: dict) -> NextToken:
        """`logprobs` with `top_logprobs` (at most 20 in the OpenAI API, vLLM's default cap); a server
        that refuses the parameter or answers without them raises NoLogprobs."""
        try:
            response = self._call(
                self.client.chat.completions.create,
                model=model,
                messages=messages,
                max_tokens=1,
                temperature=0.0,
                logprobs=True,
                top_logprobs=min(top, 20),
                **{k: options[k] for k in ("seed",) if k in options},
            )
        except base.ServerError as exc:
            if exc.status in (400, 422) and "logprob" in str(exc).lower():
                raise base.NoLogprobs(f"{self.host}: {exc}") from None
            raise
        choice = response.choices[0]
        content = choice.logprobs.content if choice.logprobs else None
        if not content or not content[0].top_logprobs:
            raise base.NoLogprobs(f"{self.host} answered {model!r} without log-probabilities")
        return NextToken(
            {t.token: t.logprob for t in content[0].top_logprobs}, response.usage.prompt_tokens if response.usage else 0
        )


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body)
    return (error.get("message") if isinstance(error, dict) else str(error)) or str(exc)
