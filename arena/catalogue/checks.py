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

from .keys import KEY_VARIABLE_OUTSIDE, host_problem

if TYPE_CHECKING:
    from .models import ModelEntry

CONNECT_S = 3.0
READ_S = 5.0

NO_KEY_VARIABLE = ("The environment variable {name} is not set in this app's environment (on this single machine "
                   "the workers get their environment from the app): set it and restart the app, or store the key "
                   "in the entry instead. On a Ray cluster, every Ray node needs it in its own environment as well.")
KEY_UNREADABLE = ("The stored key cannot be opened with this app's ARENA_SECRETS_KEY (it was stored under another "
                  "one): store the key again.")
# What the check says of an endpoint: one of two sentences that name only the URL asked, never what
# answered there (a status, a server's words, a JSON service's fields, the models it lists): staff
# cannot learn what runs on the app's network by pointing an entry at it.
NOT_REACHABLE = ("The endpoint is not reachable: GET {url} got no answer. Check the base URL and that its server "
                 "runs and lets this machine in.")
NOT_OPENAI = ("Not an OpenAI-compatible endpoint, or the key is not accepted: GET {url} gave no list of models for "
              "this key.")
MODEL_NOT_LISTED = "The endpoint does not list the model '{model}' (GET {url}): check the model's name at the endpoint."
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
    if where := host_problem(entry.base_url):  # saved before the allow-list was set: nothing is sent
        return where
    if entry.api_key_env and not entry.api_key_sealed:
        if not config.is_key_variable(entry.api_key_env):  # saved before the prefix was the rule
            return KEY_VARIABLE_OUTSIDE.format(name=entry.api_key_env)
        if not config.secret(entry.api_key_env):
            return NO_KEY_VARIABLE.format(name=entry.api_key_env)
    try:
        key = entry.endpoint_key()
    except SealError:
        return KEY_UNREADABLE
    return endpoint_problem(entry.base_url, entry.remote_model, key)


def endpoint_problem(base_url: str, model: str, key: str) -> str | None:
    """Whether GET {base_url}/models answers with `key` and lists `model`. A redirect is not followed
    (httpx's default, said here too): the key would go to wherever it points."""
    url = base_url.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        response = httpx.get(url, headers=headers, timeout=httpx.Timeout(READ_S, connect=CONNECT_S), trust_env=False,
                             follow_redirects=False)
    except (httpx.HTTPError, httpx.InvalidURL):  # refused, reset, timed out, no HTTP at all: all the same from here
        return NOT_REACHABLE.format(url=url)
    try:
        data = response.json()["data"] if response.status_code == 200 else None
        listed = {str(item["id"]) for item in data} if isinstance(data, list) else None
    except (ValueError, KeyError, TypeError):
        listed = None
    if listed is None:
        return NOT_OPENAI.format(url=url)
    if model not in listed:
        return MODEL_NOT_LISTED.format(model=model, url=url)
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
