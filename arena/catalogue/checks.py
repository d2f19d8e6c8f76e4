"""The check an openai or server entry passes before it is enabled (ModelEntry.check_before_saving),
so that no user is offered a model whose key is missing or whose endpoint does not answer.

openai: the key is there (stored, or its variable set in this app's environment: on a single
machine the one its workers get), GET {base_url}/models answers with that key, and lists the
entry's model. server: commands are allowed where the workers run and the command's program is
found (the server itself starts only with a worker: the entry's Test does that).

It runs in the request that saves the entry, so every wait is short: a failing endpoint costs the
person saving a few seconds, not a blocked server thread.
"""

from __future__ import annotations

import shlex
import shutil
from typing import TYPE_CHECKING

import httpx

from inference import config
from inference.managed import commands_allowed
from orchestration.sealing import SealError

if TYPE_CHECKING:
    from .models import ModelEntry

CONNECT_S = 3.0
READ_S = 5.0
LISTED_SHOWN = 5  # how many of an endpoint's model names a failure lists

NO_KEY_VARIABLE = ("The environment variable {name} is not set in this app's environment (on this single machine "
                   "the workers get their environment from the app): set it and restart the app, or store the key "
                   "in the entry instead. On a Ray cluster, every Ray node needs it in its own environment as well.")
KEY_UNREADABLE = ("The stored key cannot be opened with this app's ARENA_SECRETS_KEY (it was stored under another "
                  "one): store the key again.")
NOT_ANSWERING = "The endpoint did not answer GET {url}: {why}."
KEY_REFUSED = "The endpoint refused the key: GET {url} answered HTTP {status}."
NOT_OPENAI = "GET {url} answered {what}, not an OpenAI-compatible list of models."
MODEL_NOT_LISTED = "The endpoint does not list the model '{model}': GET {url} lists {listed}."
COMMANDS_OFF = (f"Server commands are off where this app's workers run: its operator can allow them with "
                f"{config.SERVER_COMMANDS_ENV}=1 in the app's environment (and in every Ray node's own environment "
                "on a Ray cluster).")
PROGRAM_MISSING = "The command's program '{program}' is not found on this machine (not on the PATH)."


def problem(entry: ModelEntry) -> str | None:
    """What keeps `entry` from being offered, or None."""
    if entry.engine == entry.Engine.SERVER:
        return server_problem(entry.server_command)
    if entry.engine != entry.Engine.OPENAI:
        return None
    if entry.api_key_env and not entry.api_key_sealed and not config.secret(entry.api_key_env):
        return NO_KEY_VARIABLE.format(name=entry.api_key_env)
    try:
        key = entry.endpoint_key()
    except SealError:
        return KEY_UNREADABLE
    return endpoint_problem(entry.base_url, entry.remote_model, key)


def endpoint_problem(base_url: str, model: str, key: str) -> str | None:
    """Whether GET {base_url}/models answers with `key` and lists `model` (the key never appears in a message)."""
    url = base_url.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        response = httpx.get(url, headers=headers, timeout=httpx.Timeout(READ_S, connect=CONNECT_S), trust_env=False)
    except httpx.TimeoutException:
        return NOT_ANSWERING.format(url=url, why=f"no answer within {READ_S:g} s")
    except httpx.HTTPError as exc:
        return NOT_ANSWERING.format(url=url, why=_reason(exc, key))
    if response.status_code in (401, 403):
        return KEY_REFUSED.format(url=url, status=response.status_code)
    if response.status_code != 200:
        return NOT_OPENAI.format(url=url, what=f"HTTP {response.status_code}")
    try:
        data = response.json()["data"]
        listed = [str(item["id"]) for item in data]
    except (ValueError, KeyError, TypeError):
        return NOT_OPENAI.format(url=url, what="something else")
    if model not in listed:
        shown = ", ".join(listed[:LISTED_SHOWN]) + (f" and {len(listed) - LISTED_SHOWN} more"
                                                    if len(listed) > LISTED_SHOWN else "")
        return MODEL_NOT_LISTED.format(model=model, url=url, listed=shown or "none")
    return None


def server_problem(command: str) -> str | None:
    if not commands_allowed():
        return COMMANDS_OFF
    try:
        program = shlex.split(command)[0]
    except (ValueError, IndexError):
        return None  # the entry's own validation says what is wrong with the command
    if shutil.which(program) is None:
        return PROGRAM_MISSING.format(program=program)
    return None


def _reason(exc: httpx.HTTPError, key: str) -> str:
    """A connection failure in words (its text, the key cut out: some libraries quote the request)."""
    cause = exc.__cause__ or exc.__context__
    text = str(exc) or (str(cause) if cause else "") or type(exc).__name__
    if isinstance(exc, httpx.ConnectError) and "refused" in text.lower():
        text = "connection refused"
    return (text.replace(key, "[key]") if key else text)[:200]
