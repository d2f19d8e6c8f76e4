"""Calling the JSON API from Django's test client, as a script with a bearer token would."""

import json


def api(client, method, path, token=None, body=None, raw=None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    data = raw if raw is not None else (json.dumps(body) if body is not None else None)
    return getattr(client, method)(path, data=data, content_type="application/json", **headers)
