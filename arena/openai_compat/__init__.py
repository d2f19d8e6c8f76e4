"""The OpenAI-compatible API (/v1/models, /v1/chat/completions): any OpenAI client can
talk to the catalogue's models with an arena API token."""
