"""The one check that a request's sampling parameters are a JSON object, for every endpoint that
takes them (generations, comparisons, tournaments, suite runs).

Absent means none ({}); anything else that is not an object is refused with the same 400,
null and [] included: `body.get("params") or {}` once let those two through as empty while a
string or a number was refused, and an empty list silently meaning "no parameters" hides a
client's bug (the schema in arena/api/openapi.py says "object", not "object or null")."""

from __future__ import annotations

from typing import Any

from django.http import JsonResponse

from .http import error

NOT_AN_OBJECT = "{key} must be an object. Leave it out for none."


class NotAnObject(ValueError):
    """`key` of a request body holds something other than a JSON object."""

    def __init__(self, key: str):
        super().__init__(NOT_AN_OBJECT.format(key=key))
        self.key = key

    def response(self) -> JsonResponse:
        return error(400, str(self), {self.key: str(self)}, code="invalid_params")


def params_object(body: dict[str, Any], key: str = "params") -> dict[str, Any]:
    """body[key] when it is an object; {} when the key is absent; NotAnObject for anything else."""
    if key not in body:
        return {}
    value = body[key]
    if not isinstance(value, dict):
        raise NotAnObject(key)
    return value
