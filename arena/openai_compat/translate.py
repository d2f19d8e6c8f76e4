"""From an OpenAI chat-completion request to an arena generation: plain functions, no I/O.

`parse_request(body)` checks everything that does not need the database and returns a
`ChatRequest`; every problem is an `OpenAIError` (400) naming the parameter, as OpenAI
names it (`temperature`, `messages[2].role`, `messages[0].content[1].type`...).

What is accepted:
- messages: leading `system` (or `developer`) messages become the system prompt (joined
  by a blank line), then `user` / `assistant` turns; the last message must be a `user`
  one (the prompt), the turns before it are the history. Content is a string or a list
  of `{"type": "text", "text": ...}` parts (joined by a newline). A message's `name` is
  ignored; tool calls, tool results, images and audio are refused.
- temperature, top_p, max_tokens or max_completion_tokens, seed, stop (a string or up to
  4 strings), n (1 only), stream, stream_options.include_usage.
- Ignored (they do not change the answer): user, metadata, store, service_tier,
  safety_identifier, prompt_cache_key, parallel_tool_calls, stream_options.include_obfuscation.
- response_format: {"type": "text"}, {"type": "json_object"} (an answer that is a JSON object) or
  {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}: decoding constrained to the
  schema (structured output, inference.structured); other types are refused.
- Accepted only at their no-op value (400 otherwise): logprobs false, top_logprobs 0,
  presence_penalty 0, frequency_penalty 0, logit_bias {}, tools [], tool_choice "none",
  modalities ["text"].
- Anything else: 400 "Unrecognized request argument supplied: X". `null` counts as absent
  for every optional argument.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inference.protocol import ParamError, SamplingParams

from .errors import OpenAIError, invalid

SAMPLING = {"temperature": "temperature", "top_p": "top_p", "seed": "seed", "stop": "stop"}
HANDLED = {"model", "messages", "n", "stream", "stream_options", "max_tokens", "max_completion_tokens",
           "response_format", *SAMPLING}
IGNORED = {"user", "metadata", "store", "service_tier", "safety_identifier", "prompt_cache_key",
           "parallel_tool_calls"}
NO_OP_VALUES: dict[str, tuple] = {
    "logprobs": (False,),
    "top_logprobs": (0,),
    "presence_penalty": (0,),
    "frequency_penalty": (0,),
    "logit_bias": ({},),
    "tools": ([],),
    "tool_choice": ("none",),
    "modalities": (["text"],),
}
SYSTEM_ROLES = ("system", "developer")
MESSAGE_KEYS = {"role", "content", "name"}


@dataclass(frozen=True)
class ChatRequest:
    model: str
    prompt: str
    system_prompt: str = ""
    history: list[dict[str, str]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)  # SamplingParams overrides, our names
    stream: bool = False
    include_usage: bool = False
    # Which OpenAI name each of our parameter names came from, to name it in errors.
    param_names: dict[str, str] = field(default_factory=dict)

    def total_chars(self) -> int:
        return len(self.system_prompt) + len(self.prompt) + sum(len(m["content"]) for m in self.history)


def parse_request(body: Any) -> ChatRequest:
    if not isinstance(body, dict):
        raise invalid("The request body must be a JSON object.")
    check_arguments(body)
    model = body.get("model")
    if model is None:
        raise invalid("You must provide a model parameter.", "model", "missing_required_parameter")
    if not isinstance(model, str) or not model:
        raise invalid("Invalid 'model': expected a non-empty string (a catalogue slug, see GET /v1/models).",
                      "model", "invalid_type")
    system_prompt, history, prompt = translate_messages(body.get("messages"))
    stream, include_usage = stream_flags(body)
    check_n(body.get("n"))
    params, names = sampling_overrides(body)
    return ChatRequest(model=model, prompt=prompt, system_prompt=system_prompt, history=history, params=params,
                       stream=stream, include_usage=include_usage, param_names=names)


def check_arguments(body: dict) -> None:
    """Unknown arguments are refused, as OpenAI does; a few harmless ones are let through."""
    for name, value in body.items():
        if name in HANDLED or name in IGNORED:
            continue
        if name not in NO_OP_VALUES:
            raise invalid(f"Unrecognized request argument supplied: {name}", name, "unrecognized_argument")
        if value is not None and not _same(value, NO_OP_VALUES[name]):
            allowed = " or ".join(repr(v) for v in NO_OP_VALUES[name])
            raise invalid(f"'{name}' is not supported by this server: leave it out, or send {allowed}.",
                          name, "unsupported_value")


def _same(value: Any, allowed: tuple) -> bool:
    # 0 == False in Python: compare types too, so `logprobs: 0` or `presence_penalty: false` is refused.
    return any((type(value) is type(a) and value == a) or (type(a) is int and type(value) is float and value == a)
               for a in allowed)


# --- messages ------------------------------------------------------------------------
def translate_messages(messages: Any) -> tuple[str, list[dict[str, str]], str]:
    """(system prompt, history, prompt) from OpenAI `messages`."""
    if messages is None:
        raise invalid("You must provide a messages parameter.", "messages", "missing_required_parameter")
    if not isinstance(messages, list):
        raise invalid("Invalid 'messages': expected an array of messages.", "messages", "invalid_type")
    if not messages:
        raise invalid("Invalid 'messages': empty array. Expected an array with at least one message.",
                      "messages", "empty_array")
    system: list[str] = []
    turns: list[dict[str, str]] = []
    for i, message in enumerate(messages):
        role, content = message_parts(message, f"messages[{i}]")
        if role in SYSTEM_ROLES:
            if turns:
                raise invalid(f"Invalid 'messages[{i}].role': a {role} message must come before the conversation "
                              "(only leading system messages are supported).", f"messages[{i}].role", "invalid_value")
            if content:
                system.append(content)
        else:
            turns.append({"role": role, "content": content})
    if not turns or turns[-1]["role"] != "user":
        last = len(messages) - 1
        raise invalid(f"Invalid 'messages[{last}].role': the last message must be a user message "
                      "(the prompt the model answers).", f"messages[{last}].role", "invalid_value")
    prompt = turns[-1]["content"]
    if not prompt.strip():
        last = len(messages) - 1
        raise invalid(f"Invalid 'messages[{last}].content': the prompt is empty.", f"messages[{last}].content",
                      "invalid_value")
    return "\n\n".join(system), turns[:-1], prompt


def message_parts(message: Any, where: str) -> tuple[str, str]:
    """One message's role and text content; `where` is its name in errors."""
    if not isinstance(message, dict):
        raise invalid(f"Invalid '{where}': expected an object with 'role' and 'content'.", where, "invalid_type")
    role = message.get("role")
    if role in ("tool", "function"):
        raise invalid(f"Invalid '{where}.role': tool and function messages are not supported by this server.",
                      f"{where}.role", "unsupported_value")
    if role not in ("user", "assistant", *SYSTEM_ROLES):
        raise invalid(f"Invalid '{where}.role': expected one of 'system', 'developer', 'user', 'assistant'"
                      f"{'' if role is None else f', got {role!r}'}.", f"{where}.role", "invalid_value")
    for key, value in message.items():
        if key not in MESSAGE_KEYS and value is not None:
            raise invalid(f"Invalid '{where}.{key}': not supported by this server (text messages only).",
                          f"{where}.{key}", "unsupported_parameter")
    return role, message_text(message.get("content"), f"{where}.content")


def message_text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        raise invalid(f"Invalid '{where}': a message needs content (a string or an array of text parts).",
                      where, "missing_required_parameter")
    if not isinstance(content, list):
        raise invalid(f"Invalid '{where}': expected a string or an array of text parts.", where, "invalid_type")
    texts = []
    for j, part in enumerate(content):
        here = f"{where}[{j}]"
        if not isinstance(part, dict):
            raise invalid(f"Invalid '{here}': expected an object like {{\"type\": \"text\", \"text\": ...}}.",
                          here, "invalid_type")
        if part.get("type") != "text":
            raise invalid(f"Invalid '{here}.type': only text parts are supported by this server"
                          f", got {part.get('type')!r}.", f"{here}.type", "invalid_value")
        if not isinstance(part.get("text"), str):
            raise invalid(f"Invalid '{here}.text': expected a string.", f"{here}.text", "invalid_type")
        texts.append(part["text"])
    return "\n".join(texts)


# --- parameters ------------------------------------------------------------------------
def stream_flags(body: dict) -> tuple[bool, bool]:
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise invalid("Invalid 'stream': expected a boolean.", "stream", "invalid_type")
    options = body.get("stream_options")
    if options is None:
        return bool(stream), False
    if not stream:
        raise invalid("The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                      "stream_options", "invalid_value")
    if not isinstance(options, dict):
        raise invalid("Invalid 'stream_options': expected an object.", "stream_options", "invalid_type")
    for key, value in options.items():
        if key not in ("include_usage", "include_obfuscation"):
            raise invalid(f"Unrecognized request argument supplied: stream_options.{key}",
                          f"stream_options.{key}", "unrecognized_argument")
        if value is not None and not isinstance(value, bool):
            raise invalid(f"Invalid 'stream_options.{key}': expected a boolean.", f"stream_options.{key}",
                          "invalid_type")
    return True, bool(options.get("include_usage"))


def check_n(n: Any) -> None:
    if n is None:
        return
    if isinstance(n, bool) or not isinstance(n, int):
        raise invalid("Invalid 'n': expected an integer.", "n", "invalid_type")
    if n != 1:
        raise invalid(f"Invalid 'n': this server returns one choice per request (n=1), got {n}.", "n",
                      "unsupported_value")


def sampling_overrides(body: dict) -> tuple[dict[str, Any], dict[str, str]]:
    """SamplingParams overrides (our names) and, for each, the OpenAI name it came from.

    Types and ranges are SamplingParams' own rules, so the page, the JSON API and this one
    agree; a ParamError becomes a 400 naming the first wrong parameter as the request did.
    """
    params: dict[str, Any] = {}
    names: dict[str, str] = {}
    for theirs, ours in SAMPLING.items():
        if body.get(theirs) is not None:
            params[ours], names[ours] = body[theirs], theirs
    given = [name for name in ("max_completion_tokens", "max_tokens") if body.get(name) is not None]
    if len(given) == 2 and body["max_tokens"] != body["max_completion_tokens"]:
        raise invalid("Set 'max_tokens' or 'max_completion_tokens', not both (max_tokens is the older name).",
                      "max_tokens", "invalid_value")
    if given:
        params["max_new_tokens"], names["max_new_tokens"] = body[given[0]], given[0]
    if isinstance(params.get("stop"), str):
        params["stop"] = [params["stop"]]
    if (schema := response_schema(body.get("response_format"))) is not None:
        params["json_schema"], names["json_schema"] = schema, "response_format.json_schema.schema"
    try:
        SamplingParams.from_dict(params)
    except ParamError as exc:
        raise param_error(exc, names) from exc
    return params, names


def response_schema(response_format: Any) -> dict | None:
    """The JSON schema a response_format asks for (None: plain text); its shape checked here, the
    schema itself by SamplingParams as the other APIs check theirs."""
    if response_format is None:
        return None
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "object"}
    if kind != "json_schema":
        raise invalid("Invalid 'response_format.type': expected 'text', 'json_object' or 'json_schema'.",
                      "response_format.type", "invalid_value")
    spec = response_format.get("json_schema")
    if not isinstance(spec, dict) or not isinstance(spec.get("schema"), dict):
        raise invalid("Invalid 'response_format.json_schema': expected an object with a 'schema' object.",
                      "response_format.json_schema", "invalid_type")
    return spec["schema"]


def param_error(exc: ParamError, names: dict[str, str]) -> OpenAIError:
    """A ParamError (our parameter names) as the 400 for the first wrong parameter (theirs)."""
    wrong = [(names.get(ours, ours), message) for ours, message in exc.errors.items()]
    param, message = wrong[0]
    if param == "stop":
        message = (f"must be a string or an array of at most {SamplingParams.MAX_STOP_SEQUENCES} non-empty "
                   f"strings of at most {SamplingParams.MAX_STOP_CHARS} characters")
    detail = "; ".join(f"'{name}' {text}" for name, text in wrong[1:])
    return invalid(f"Invalid '{param}': {message}." + (f" Also: {detail}." if detail else ""), param,
                   "invalid_value")
