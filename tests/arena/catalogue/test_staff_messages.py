"""Staff messages that do not probe the inside: the endpoint check says the endpoint is not reachable
or not an OpenAI-compatible endpoint, never what answered (a status, a server's words, a JSON
service's fields or model names); a model source that is missing and one that exists but is no
model get the same sentence. Against real listeners on 127.0.0.1: models_endpoint's server, a
port nothing listens on, and the test suite's own Redis (a service that is no HTTP server)."""

from urllib.parse import urlsplit

import pytest

from arena.catalogue import checks
from arena.catalogue.models import SOURCE_UNUSABLE, ModelEntry
from tests.arena.api_client import api
from tests.conftest import REDIS_URL

from .models_endpoint import JSON_SERVICE, KEY, MODELS, ModelsEndpoint, closed_port_url

pytestmark = pytest.mark.django_db
WRONG_KEY = "sk-wrong-key-Hq81"
# Words any of the probed services says, which no check message may repeat.
ANSWERED = ("401", "500", "307", "HTTP", "Incorrect", "refused", "disconnected", "Disconnected", "nginx",
            "inventory-db-Kx3", "internal-7Fq", "ready", *MODELS, WRONG_KEY, KEY)


@pytest.fixture
def endpoint():
    with ModelsEndpoint() as server:
        yield server


def redis_url() -> str:
    where = urlsplit(REDIS_URL)
    return f"http://{where.hostname}:{where.port or 6379}/v1"


@pytest.mark.parametrize(("where", "key", "reachable"), [
    ("closed port", KEY, False),
    ("redis", KEY, False),  # answers HTTP by hanging up: "Server disconnected" before
    ("good", WRONG_KEY, True),  # HTTP 401 with the refused key echoed
    ("json", KEY, True),  # a JSON service that names itself
    ("html", KEY, True),
    ("broken", KEY, True),  # HTTP 500
])
def test_the_endpoint_check_says_one_of_two_sentences_and_nothing_of_what_answered(endpoint, where, key,
                                                                                 reachable):
    url = {"closed port": closed_port_url(), "redis": redis_url()}.get(where) or endpoint.url(where)
    problem = checks.endpoint_problem(url, "team/model-a", key)
    expected = checks.NOT_OPENAI if reachable else checks.NOT_REACHABLE
    assert problem == expected.format(url=f"{url}/models")
    said = problem.replace(f"{url}/models", "")  # the URL's random port may hold "401" or "500" by chance
    assert not [word for word in ANSWERED if word in said]
    assert not [word for word in JSON_SERVICE if word in said]


def test_a_slow_endpoint_is_not_reachable(endpoint, monkeypatch):
    monkeypatch.setattr(checks, "READ_S", 0.3)  # the server answers after 2 s
    problem = checks.endpoint_problem(endpoint.url("slow"), "team/model-a", KEY)
    assert problem == checks.NOT_REACHABLE.format(url=f"{endpoint.url('slow')}/models")


def test_a_model_the_endpoint_does_not_list_is_said_without_the_models_it_lists(endpoint):
    problem = checks.endpoint_problem(endpoint.url(), "team/model-z", KEY)
    assert problem == checks.MODEL_NOT_LISTED.format(model="team/model-z", url=f"{endpoint.url()}/models")
    assert not [name for name in MODELS if name in problem]


def test_the_api_records_the_fixed_sentence(client, capsys):
    from django.core.management import call_command

    call_command("arena_token", "ops", "--staff", "--create-service-account")
    token = capsys.readouterr().out.strip()
    url = redis_url()
    created = api(client, "post", "/api/v1/catalogue", token,
                  {"slug": "probe", "name": "Probe", "engine": "openai", "base_url": url, "remote_model": "m",
                   "cpus": 0.25, "api_key": KEY})
    assert created.status_code == 201 and not created.json()["enabled"]
    assert created.json()["check_error"] == checks.NOT_REACHABLE.format(url=f"{url}/models")


def source_error(engine: str, source: str, gguf_file: str = "") -> str:
    entry = ModelEntry(slug="probe", name="Probe", engine=engine, source=source, gguf_file=gguf_file)
    return entry._source_errors().get("source", "")


@pytest.mark.parametrize("engine", ["transformers", "llamacpp"])
def test_a_model_source_says_the_same_whether_a_path_exists_or_not(tmp_path, engine):
    (tmp_path / "notes.txt").write_text("not a model")
    (tmp_path / "folder").mkdir()
    (tmp_path / "ggufs").mkdir()
    (tmp_path / "ggufs" / "private-name-Jw4.gguf").write_bytes(b"GGUF")
    probes = [
        (str(tmp_path / "missing.gguf"), ""),  # does not exist
        (str(tmp_path / "notes.txt"), ""),  # a file, not a GGUF
        ("/etc/passwd", ""),
        (str(tmp_path / "folder"), ""),  # a folder holding no model
        (str(tmp_path / "ggufs"), ""),  # a folder whose GGUF names were listed before
        (str(tmp_path / "ggufs"), "other.gguf"),  # a GGUF not in that folder
        (str(tmp_path / "notes.txt"), "x.gguf"),  # a file asked to hold a GGUF
        ("package:no_such_package_Qz8", ""),  # which packages are installed
        ("package:json", ""),  # a module, not a package
    ]
    said = {source_error(engine, source, gguf) for source, gguf in probes}
    assert said == {SOURCE_UNUSABLE}
    assert "private-name-Jw4" not in SOURCE_UNUSABLE and str(tmp_path) not in SOURCE_UNUSABLE


def test_a_usable_source_and_a_malformed_one_still_say_what_is_wrong_with_what_was_typed(tmp_path):
    (tmp_path / "model.gguf").write_bytes(b"GGUF")
    assert source_error("llamacpp", str(tmp_path / "model.gguf")) == ""
    assert "not a Python package name" in source_error("transformers", "package:not a name")
    assert "must be a file name inside the model folder" in source_error("llamacpp", str(tmp_path), "../model.gguf")
