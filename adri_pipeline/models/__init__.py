"""Model servers shared by every domain: one small interface (`ChatServer`) over Ollama's API and the
OpenAI chat-completions API (llama.cpp's llama-server, vLLM, SGLang, LM Studio), the errors a server
can give, and `chat_server("ollama:NAME" | "openai:NAME")` to reach one. Classification, the routing
LLM baseline and the mirror's judges all talk to models through here."""

from adri_pipeline.models.base import (
    ChatAnswer,
    ChatServer,
    ModelInfo,
    ModelMissing,
    NextToken,
    NoLogprobs,
    Overloaded,
    ServerError,
    ServerUnreachable,
    TimedOut,
)
from adri_pipeline.models.select import PROVIDERS, chat_server, is_served_model, parse_host

__all__ = ["ChatAnswer", "ChatServer", "ModelInfo", "ModelMissing", "NextToken", "NoLogprobs", "Overloaded", "PROVIDERS", "ServerError",
           "ServerUnreachable", "TimedOut", "chat_server", "is_served_model", "parse_host"]
