"""An endpoint's API key stored in the catalogue: sealed (Fernet, from the `cryptography`
package) everywhere it is kept or travels, and opened only where a worker is spawned.

The catalogue keeps the sealed key; the entry's spec carries it sealed through Redis (the
orchestrator's inbox), through Ray's actor arguments and on the worker's command line; it is
opened only on the node where the worker runs, by `LocalBackend` on this machine or on a Ray
node with that node's own ARENA_SECRETS_KEY (from its environment, never passed through Ray),
and put in that worker's environment only, under `inference.config.STORED_KEY_ENV`, as
REDIS_URL is. The worker never gets the secrets key itself, so it can open no other entry's key.
"""

from __future__ import annotations

import logging

from cryptography.fernet import Fernet, InvalidToken

from inference.config import STORED_KEY_ENV
from inference.protocol import ModelSpec

log = logging.getLogger(__name__)

SECRETS_KEY_ENV = "ARENA_SECRETS_KEY"


class SealError(Exception):
    """A sealed key this secrets key cannot open (another machine's key, or a damaged value)."""


def seal(secrets_key: str, plaintext: str) -> str:
    return Fernet(secrets_key.encode()).encrypt(plaintext.encode()).decode()


def unseal(secrets_key: str, sealed: str) -> str:
    try:
        return Fernet(secrets_key.encode()).decrypt(sealed.encode()).decode()
    except (InvalidToken, ValueError) as exc:  # ValueError: not a Fernet key at all
        raise SealError("The stored key cannot be opened with this machine's ARENA_SECRETS_KEY.") from exc


def worker_env(spec: ModelSpec, secrets_key: str) -> dict[str, str]:
    """What a worker for `spec` gets in its environment: its entry's stored key, opened (or nothing:
    the worker then fails with a reason a user can read, inference/engines.py)."""
    if not spec.api_key_sealed:
        return {}
    try:
        return {STORED_KEY_ENV: unseal(secrets_key, spec.api_key_sealed)}
    except SealError as exc:
        log.warning("%s: %s Every node must have the app's ARENA_SECRETS_KEY.", spec.slug, exc)
        return {}
