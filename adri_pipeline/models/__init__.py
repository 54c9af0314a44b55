"""Model servers shared by every domain: one small interface over Ollama's API and the OpenAI
chat-completions API (llama.cpp's llama-server, vLLM, SGLang, LM Studio). `base` holds the interface
(`ChatServer`) and the errors a server can give; `select.chat_server("ollama:NAME" | "openai:NAME")`
reaches one. Classification, the routing LLM baseline and the mirror's judges all talk to models
through here. Nothing is re-exported: a submodule importing its package never runs another."""
