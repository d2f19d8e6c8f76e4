"""A catalogue entry's price (ModelEntry.price_*; arena/catalogue/pricing.py): what an answer costs
by the token or by the machine's hour, the prices the admin and the staff API accept, and the
pages' figure. The cost of a suite run's answers: tests/arena/suite_runs/test_pass_matrix.py."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena.catalogue import pricing
from arena.catalogue.models import ModelEntry
from tests.arena.api_client import api

Price, Usage = pricing.Price, pricing.Usage


# --- the arithmetic (pure) ----------------------------------------------------------------------
def test_per_token_prices_count_prompt_and_generated_tokens_apart():
    price = Price(input_per_mtok=0.15, output_per_mtok=0.60)
    assert pricing.cost(price, Usage(prompt_tokens=1000, generated_tokens=500)) == pytest.approx(
        (1000 * 0.15 + 500 * 0.60) / 1e6)
    assert pricing.cost(price, Usage(prompt_tokens=None, generated_tokens=500)) is None  # not measured: no guess


def test_an_hourly_price_costs_the_answers_generation_time_from_its_tokens_per_s():
    price = Price(per_hour=2.50)
    # 0.4 s to the first token, then 100 more tokens at 25 tokens/s: 4.4 s of the machine
    assert pricing.generation_seconds(Usage(None, 101, ttft_s=0.4, tokens_per_s=25.0)) == pytest.approx(4.4)
    assert pricing.cost(price, Usage(None, 101, ttft_s=0.4, tokens_per_s=25.0)) == pytest.approx(4.4 * 2.5 / 3600)
    # twice the decode rate, about half the cost
    assert pricing.cost(price, Usage(None, 101, 0.0, 50.0)) == pytest.approx(pricing.cost(price, Usage(
        None, 101, 0.0, 25.0)) / 2)
    assert pricing.cost(price, Usage(None, 1, ttft_s=0.4)) == pytest.approx(0.4 * 2.5 / 3600)  # one token: no rate
    assert pricing.cost(price, Usage(None, 10, ttft_s=0.4, tokens_per_s=None)) is None
    assert pricing.cost(price, Usage(None, 10, ttft_s=None, tokens_per_s=20.0)) is None
    assert pricing.cost(None, Usage(10, 10, 0.1, 10.0)) is None


@given(st.integers(0, 10**7), st.integers(0, 10**7), st.floats(0, 1000), st.floats(0, 1000))
def test_a_token_cost_is_linear_and_never_negative(prompt, generated, price_in, price_out):
    price = Price(price_in, price_out)
    once = pricing.cost(price, Usage(prompt, generated))
    assert once is not None and once >= 0
    assert pricing.cost(price, Usage(2 * prompt, 2 * generated)) == pytest.approx(2 * once)


@given(st.integers(1, 10**5), st.floats(0, 60), st.floats(0.01, 10**4), st.floats(0.01, 1000))
def test_an_hourly_cost_grows_with_the_tokens_and_shrinks_with_the_speed(tokens, ttft, rate, per_hour):
    price = Price(per_hour=per_hour)
    cost = pricing.cost(price, Usage(None, tokens, ttft, rate))
    assert cost is not None and cost >= 0
    assert pricing.cost(price, Usage(None, tokens + 1, ttft, rate)) >= cost
    assert pricing.cost(price, Usage(None, tokens, ttft, rate * 2)) <= cost + 1e-15


@pytest.mark.parametrize(("price", "field", "words"), [
    (Price(0.1, None), "price_output_per_mtok", "both prices per million tokens"),
    (Price(None, 0.1), "price_input_per_mtok", "both prices per million tokens"),
    (Price(0.1, 0.2, 3.0), "price_per_hour", "not both"),
    (Price(-1.0, 0.2), "price_input_per_mtok", "0 to 1,000,000"),
    (Price(per_hour=2e6), "price_per_hour", "0 to 1,000,000"),
    (Price(per_hour=math.nan), "price_per_hour", "0 to 1,000,000"),
])
def test_a_price_that_says_nothing_sure_is_refused(price, field, words):
    found = pricing.problem(price)
    assert found is not None and found[0] == field and words in found[1]


def test_prices_that_make_sense_are_accepted():
    for price in (Price(), Price(0, 0), Price(0.15, 0.6), Price(per_hour=0), Price(per_hour=4.5)):
        assert pricing.problem(price) is None


@pytest.mark.parametrize(("value", "shown"), [(1.53e-5, "$0.0000153"), (0.0123, "$0.0123"), (1.234, "$1.23"),
                                              (12.34, "$12.34"), (1234.5, "$1,234"), (0.0, "$0"), (None, "")])
def test_a_cost_is_written_out_never_with_an_exponent(value, shown):
    assert pricing.money(value) == shown


# --- where entries are edited -------------------------------------------------------------------
@pytest.fixture
def staff_token(capsys):
    from django.core.management import call_command

    call_command("arena_token", "ops", "--staff", "--create-service-account")
    return capsys.readouterr().out.strip()


@pytest.mark.django_db
def test_an_entry_has_no_price_until_given_one(catalogue):
    assert all(entry.price is None for entry in catalogue)
    entry = catalogue[0]
    entry.price_per_hour = 2.0
    assert entry.price == Price(per_hour=2.0)


@pytest.mark.django_db
def test_the_admin_edits_the_prices(admin_client, catalogue):
    llama = next(e for e in catalogue if e.engine == "llamacpp")
    page = admin_client.get(f"/admin/catalogue/modelentry/{llama.pk}/change/").content.decode()
    assert 'name="price_input_per_mtok"' in page and 'name="price_per_hour"' in page
    form = {"name": llama.name, "label": llama.label, "slug": llama.slug, "engine": "llamacpp", "kind": "full",
            "precision": "auto", "source": llama.source, "gguf_file": llama.gguf_file, "memory_estimate_mb": 300,
            "default_params": "{}", "context_length": 0, "max_concurrency": 0, "enabled": "on"}
    saved = admin_client.post(f"/admin/catalogue/modelentry/{llama.pk}/change/", {**form, "price_per_hour": "1.25"})
    assert saved.status_code == 302, saved.content.decode()[:2000]
    llama.refresh_from_db()
    assert llama.price == Price(per_hour=1.25)
    both = admin_client.post(f"/admin/catalogue/modelentry/{llama.pk}/change/",
                             {**form, "price_per_hour": "1.25", "price_input_per_mtok": "0.1",
                              "price_output_per_mtok": "0.2"})
    assert both.status_code == 200 and "not both" in both.content.decode()
    llama.refresh_from_db()
    assert llama.price == Price(per_hour=1.25)


@pytest.mark.django_db
def test_the_staff_api_sets_and_clears_the_prices(client, catalogue, staff_token):
    slug = catalogue[0].slug
    changed = api(client, "patch", f"/api/v1/catalogue/{slug}", staff_token,
                  {"price_input_per_mtok": 0.15, "price_output_per_mtok": 1})
    assert changed.status_code == 200, changed.content
    assert (changed.json()["price_input_per_mtok"], changed.json()["price_output_per_mtok"]) == (0.15, 1.0)
    assert changed.json()["price_per_hour"] is None
    cleared = api(client, "patch", f"/api/v1/catalogue/{slug}", staff_token,
                  {"price_input_per_mtok": None, "price_output_per_mtok": None})
    assert cleared.status_code == 200 and ModelEntry.objects.get(slug=slug).price is None


@pytest.mark.django_db
@pytest.mark.parametrize(("body", "field", "words"), [
    ({"price_per_hour": "2"}, "price_per_hour", "a number or null"),
    ({"price_per_hour": True}, "price_per_hour", "a number or null"),
    ({"price_per_hour": 10**400}, "price_per_hour", "a number or null"),
    ({"price_per_hour": -2}, "price_per_hour", "0 to 1,000,000"),
    ({"price_input_per_mtok": 0.1}, "price_output_per_mtok", "both prices"),
    ({"price_input_per_mtok": 0.1, "price_output_per_mtok": 0.2, "price_per_hour": 1}, "price_per_hour", "not both"),
])
def test_the_staff_api_refuses_a_bad_price_naming_it(client, catalogue, staff_token, body, field, words):
    response = api(client, "patch", f"/api/v1/catalogue/{catalogue[0].slug}", staff_token, body)
    assert response.status_code == 400, response.content
    assert words in response.json()["error"]["fields"][field]
    assert ModelEntry.objects.get(pk=catalogue[0].pk).price is None
