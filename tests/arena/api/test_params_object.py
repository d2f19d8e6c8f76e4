"""Every endpoint that takes sampling parameters refuses a `params` that is not a JSON object with
one and the same 400 (arena/api/params.py), null and [] included: they once passed as "no
parameters" on /api/v1/generations and /api/v1/tournaments while "x" or 5 got a 400."""

import pytest

from arena.battles.models import Battle
from arena.generations.models import Generation
from arena.suite_runs.models import SuiteRun
from arena.tournaments.models import Tournament
from tests.arena.api_client import api
from tests.arena.factories import suite

pytestmark = pytest.mark.django_db
NOT_OBJECTS = [None, [], [1], "", "hot", 0, 5, 1.5, True, False]


def bodies(catalogue, owner) -> dict[str, dict]:
    """A valid request per endpoint, without params."""
    slugs = [m.slug for m in catalogue]
    return {
        "/api/v1/generations": {"model": slugs[0], "prompt": "Name a colour."},
        "/api/v1/comparisons": {"left_model": slugs[0], "right_model": slugs[1], "prompt": "Name a colour."},
        "/api/v1/tournaments": {"contestants": slugs[:4], "prompt": "Name a colour."},
        "/api/v1/suite-runs": {"suite": str(suite(owner, "Name a colour.").id), "contestants": slugs[:2]},
    }


def made() -> int:
    return Generation.objects.count() + Battle.objects.count() + Tournament.objects.count() + SuiteRun.objects.count()


@pytest.mark.parametrize("value", NOT_OBJECTS, ids=repr)
def test_a_params_that_is_not_an_object_gets_the_same_400_everywhere(client, token, owner, catalogue, value):
    keys = {path: ["params"] for path in bodies(catalogue, owner)}
    keys["/api/v1/comparisons"] += ["left_params", "right_params"]
    for path, body in bodies(catalogue, owner).items():
        for key in keys[path]:
            response = api(client, "post", path, token, {**body, key: value})
            assert response.status_code == 400, (path, key, response.content)
            message = f"{key} must be an object. Leave it out for none."
            expected = {"code": "invalid_params", "message": message, "fields": {key: message}}
            assert response.json() == {"error": expected}, (path, key)
    assert made() == 0


def test_an_absent_or_empty_params_is_none(client, token, owner, catalogue):
    """The refusals above are of the value, not of the key: {} and no key both start the work."""
    for path, body in bodies(catalogue, owner).items():
        for with_params in (body, {**body, "params": {}}):
            response = api(client, "post", path, token, with_params)
            assert response.status_code in (201, 202), (path, response.content)
