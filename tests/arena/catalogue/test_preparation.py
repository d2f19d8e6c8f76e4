"""Preparing AWQ entries in the background (arena/catalogue/preparation.py): the progress
published in Redis, its expiry when the preparer stops, a real quantisation of a tiny model
through `prepare_all` and `manage.py prepare_models`, the launcher starting it once, and the
notices on the pages."""

import sys
import threading
import time

import pytest
import torch
from django.core.management import call_command
from django.urls import reverse

from arena import launcher, streams
from arena.catalogue import preparation
from arena.catalogue.models import ModelEntry
from arena.tournaments.actions import start_tournament
from inference import awq
from inference.sources import PACKAGED_SMOLLM2, resolve_source

pytestmark = pytest.mark.django_db

AWQ_SLUG = "smollm2-135m-awq"  # the default catalogue's AWQ entry


@pytest.fixture(autouse=True)
def no_preparations_left():
    """The session's Redis prefix outlives a test: its preparations must not show on the next one's pages."""
    yield
    client = streams.client()
    for key in client.scan_iter(match=streams.keys().preparation("*")):
        client.delete(key)


class Clock:
    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def publisher(slug: str, clock=None) -> preparation.Publisher:
    return preparation.Publisher(streams.client(), streams.keys(), slug, **({"clock": clock} if clock else {}))


def published(slug: str) -> preparation.Preparation | None:
    return preparation.read(streams.client(), streams.keys(), [slug]).get(slug)


def ttl(slug: str) -> int:
    return streams.client().ttl(streams.keys().preparation(slug))


def layer_line(done: int, layers: int = 30) -> str:
    return awq.LAYER_LINE.format(done=done, layers=layers, percent=100 * done // layers)


# --- publication -------------------------------------------------------------------------
def test_progress_lines_become_a_percentage_and_the_time_left():
    clock = Clock()
    writer = publisher("m", clock)
    writer.queued()
    assert published("m").state == preparation.QUEUED and 0 < ttl("m") <= preparation.TTL_S
    assert published("m").summary() == "queued for preparation"

    writer.progress("AWQ: quantising model.gguf to 4 bits (group 64) once; later starts load the cache")
    assert published("m").percent == 0 and published("m").minutes_left() is None  # no estimate before a layer
    clock.now += 60
    writer.progress(layer_line(12))  # 12 layers in 60 s: 18 more take about 90 s
    found = published("m")
    assert (found.state, found.done, found.total, found.percent, found.eta_s) == ("preparing", 12, 30, 40, 90.0)
    assert found.line == layer_line(12)
    assert found.minutes_left(now=clock.now) == 2 and found.minutes_left(now=clock.now + 80) == 1
    assert found.summary().startswith("preparing: 40%, about ")


def test_a_failure_stays_longer_and_a_finished_preparation_disappears():
    writer = publisher("m")
    writer.failed("ModelLoadError: the source is gone")
    found = published("m")
    assert found.state == preparation.FAILED and not found.active and ttl("m") > preparation.TTL_S
    assert found.summary() == "preparation failed: ModelLoadError: the source is gone"
    writer.renew()  # a settled preparation keeps its own expiry
    assert ttl("m") > preparation.TTL_S

    other = publisher("n")
    other.progress(layer_line(1))
    other.finished()
    assert published("n") is None


def test_a_preparation_expires_once_its_preparer_stops_renewing_it(monkeypatch):
    monkeypatch.setattr(preparation, "TTL_S", 3)  # beats 15 times a TTL: a busy machine still makes one
    monkeypatch.setattr(preparation, "HEARTBEAT_S", 0.2)
    writer = publisher("m")
    writer.queued()
    with preparation._heartbeat([writer]):
        time.sleep(4)
        assert published("m") is not None  # past its TTL, renewed while the preparer lives
    stopped, deadline = time.time(), time.time() + 10
    while published("m") is not None:  # a dead preparer is noticed: nothing is shown as preparing
        assert time.time() < deadline, "the preparation outlived its preparer"
        time.sleep(0.2)
    assert time.time() - stopped <= 3 + 3  # its TTL, give or take a slow poll


# --- real preparations of a tiny model -----------------------------------------------------
@pytest.fixture(scope="module")
def awq_sized_model_dir(tmp_path_factory):
    """A random 2-layer Llama whose linear widths AWQ accepts, with SmolLM2's real tokenizer."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(awq.full_precision_folder(resolve_source(*PACKAGED_SMOLLM2)))
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=1024)
    folder = tmp_path_factory.mktemp("awq-sized-llama")
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture
def model_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_MODEL_CACHE", str(tmp_path / "model-cache"))
    return tmp_path / "model-cache"


@pytest.fixture
def tiny_entries(awq_sized_model_dir):
    def entry(slug, **fields):
        return ModelEntry.objects.create(slug=slug, name=slug, source=str(awq_sized_model_dir), **fields)

    return [entry("tiny-awq", kind="awq"), entry("tiny-full"), entry("tiny-awq-off", kind="awq", enabled=False)]


def test_prepare_all_quantises_the_missing_awq_entries_and_publishes_each_step(tiny_entries, model_cache):
    pytest.importorskip("gptqmodel")
    seen: list[preparation.Preparation] = []

    def observed_prepare(spec, report):
        def report_then_look(line):
            report(line)
            seen.append(published(spec.slug))

        return awq.prepare(spec, report_then_look)

    outcome = preparation.prepare_all(streams.client(), streams.keys(), ModelEntry.objects.all(),
                                      prepare=observed_prepare)

    assert outcome == {"tiny-awq": "prepared"}  # the full entry and the disabled one are not its business
    layers = [(p.state, p.done, p.total, p.percent) for p in seen if awq.layer_progress(p.line)]
    assert layers == [("preparing", 1, 2, 50), ("preparing", 2, 2, 100)]
    assert seen[-1].line.startswith("AWQ: quantised in")
    assert published("tiny-awq") is None  # prepared: nothing left to show
    assert not awq.needs_quantising(tiny_entries[0].spec())
    again = preparation.prepare_all(streams.client(), streams.keys(), ModelEntry.objects.all(),
                                    prepare=observed_prepare)
    assert again == {"tiny-awq": "ready"} and published("tiny-awq") is None


def test_a_failed_preparation_is_published_and_the_next_entry_goes_on(tiny_entries, model_cache):
    ModelEntry.objects.create(slug="broken-awq", name="Broken", source="/no/such/model", kind="awq")
    ready = ModelEntry.objects.filter(slug__in=["broken-awq", "tiny-awq"]).order_by("slug")

    def prepare(spec, report):
        if spec.slug == "broken-awq":
            raise awq.ModelLoadError("the source is gone")
        report(layer_line(1, 2))

    outcome = preparation.prepare_all(streams.client(), streams.keys(), ready, needs=lambda spec: True,
                                      prepare=prepare)
    assert outcome == {"broken-awq": "failed: the source is gone", "tiny-awq": "prepared"}
    assert published("broken-awq").summary() == "preparation failed: ModelLoadError: the source is gone"


def test_an_entry_that_cannot_even_be_checked_is_published_as_failed(tiny_entries, model_cache):
    def needs(spec):
        raise awq.ModelLoadError("AWQ needs GPTQModel, which is not installed")

    outcome = preparation.prepare_all(streams.client(), streams.keys(), ModelEntry.objects.all(), needs=needs)
    assert outcome == {"tiny-awq": "failed: AWQ needs GPTQModel, which is not installed"}
    assert published("tiny-awq").state == preparation.FAILED


def test_the_prepare_models_command_quantises_what_is_missing(tiny_entries, model_cache, capsys):
    pytest.importorskip("gptqmodel")
    assert awq.needs_quantising(tiny_entries[0].spec())
    call_command("prepare_models", nice=0)
    assert "tiny-awq: prepared" in capsys.readouterr().out
    assert not awq.needs_quantising(tiny_entries[0].spec())


def test_the_launcher_does_not_start_a_finished_preparer_again(tmp_path):
    starter = launcher.Launcher({"PATH": "/usr/bin:/bin"})
    log_path = tmp_path / "logs" / "prepare.log"
    starter.spawn("prepare_models", [sys.executable, "-c", "print('prepared')"], log_path=log_path, oneshot=True)
    starter.procs[0][1].wait(timeout=30)
    deadline = time.monotonic() + 10
    thread = threading.Thread(target=starter.watch, daemon=True)
    thread.start()
    while starter.procs and time.monotonic() < deadline:
        time.sleep(0.1)
    starter.stopping = True
    thread.join(timeout=5)
    assert starter.procs == [] and starter.restarts == {}  # gone from the watch list, not restarted
    assert log_path.read_text().strip() == "prepared"  # its output went to its log, not the terminal


# --- what the pages show ---------------------------------------------------------------------
@pytest.fixture
def preparing(catalogue):
    """The catalogue's AWQ entry at layer 12 of 30, 60 s in (about 90 s left)."""
    clock = Clock(time.time() - 60)
    writer = publisher(AWQ_SLUG, clock)
    writer.progress("AWQ: quantising once")
    clock.now += 60
    writer.progress(layer_line(12))
    return ModelEntry.objects.get(slug=AWQ_SLUG)


def notice(entry, what: str) -> str:
    return (f"Model {entry.name} is being prepared (AWQ quantisation, 40%, about 2 min left); "
            f"a {what} that includes it will wait for it.")


def test_the_creation_pages_name_the_model_being_prepared(client, owner, preparing):
    client.force_login(owner)
    page = client.get(reverse("tournament-new")).content.decode()
    assert notice(preparing, "tournament") in page
    page = client.get(reverse("compare")).content.decode()
    assert notice(preparing, "comparison") in page


def test_no_notice_without_a_preparation(client, owner, catalogue):
    client.force_login(owner)
    assert "is being prepared" not in client.get(reverse("tournament-new")).content.decode()
    assert "is being prepared" not in client.get(reverse("compare")).content.decode()


def test_a_tournament_with_a_model_being_prepared_says_it_will_wait_without_naming_it(client, owner, preparing):
    contestants = list(ModelEntry.objects.filter(slug__in=["smollm2-135m", "smollm2-135m-spec", AWQ_SLUG,
                                                           "gemma-3-270m"]))
    tournament = start_tournament(owner, contestants=contestants, prompt="Name a colour.", seeding="given")
    client.force_login(owner)
    page = client.get(tournament.get_absolute_url()).content.decode()
    assert ("A model in this tournament is being prepared (AWQ quantisation, 40%, about 2 min left); "
            "the tournament will wait for it.") in page
    assert preparing.name not in page  # blind until the reveal


def test_a_tournament_without_the_model_being_prepared_shows_no_notice(client, owner, preparing):
    others = [ModelEntry.objects.create(slug=f"other-{i}", name=f"Other {i}", source=preparing.source,
                                        gguf_file=preparing.gguf_file) for i in range(4)]
    tournament = start_tournament(owner, contestants=others, prompt="Name a colour.", seeding="given")
    client.force_login(owner)
    assert "being prepared" not in client.get(tournament.get_absolute_url()).content.decode()


def test_the_status_page_and_the_catalogue_admin_show_the_progress(admin_client, preparing):
    page = admin_client.get(reverse("status")).content.decode()
    assert 'id="model-preparations"' in page and f'data-preparing="{AWQ_SLUG}"' in page
    assert "preparing: 40%, about 2 min left" in page and layer_line(12) in page
    changelist = admin_client.get("/admin/catalogue/modelentry/").content.decode()
    assert "preparing: 40%, about 2 min left" in changelist


def test_a_judges_own_contestant_being_prepared_is_named_nowhere(client, admin_user, owner, preparing):
    """Quantised at a match's first use, an AWQ contestant would name the pair on the creation
    pages or the catalogue admin: for the tournament's owner those name no contestant of it."""
    contestants = list(ModelEntry.objects.filter(slug__in=["smollm2-135m", "smollm2-135m-spec", AWQ_SLUG,
                                                           "gemma-3-270m"]))
    start_tournament(admin_user, contestants=contestants, prompt="Name a colour.", seeding="given")
    client.force_login(admin_user)
    for url in (reverse("tournament-new"), reverse("compare"), "/admin/catalogue/modelentry/"):
        page = client.get(url).content.decode()
        assert "being prepared" not in page and "preparing: 40%" not in page, url
    client.force_login(owner)  # not their tournament: the notice stays
    assert notice(preparing, "comparison") in client.get(reverse("compare")).content.decode()
