"""What tests read back from the real Celery broker queue (Redis, under the session's prefix)."""

import base64
import json

from django.conf import settings


def broker_messages(redis_client) -> list[tuple[str, list]]:
    prefix = settings.ARENA_REDIS_PREFIX
    raw = redis_client.lrange(f"{prefix}:celery:{prefix}.control", 0, -1)
    return [(message["headers"]["task"], json.loads(base64.b64decode(message["body"]))[0])
            for message in map(json.loads, raw)]
