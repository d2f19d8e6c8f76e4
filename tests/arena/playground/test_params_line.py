"""A generation's parameters as one readable line (the params_line filter every page uses)."""

import pytest
from django.template import Context, Template

from arena.playground.templatetags.arena_tags import params_line
from tests.arena import factories


def test_the_usual_three_read_as_words():
    assert params_line({"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 256, "stop": [], "seed": None}) \
        == "temperature 0.7 · top-p 0.95 · max 256 tokens"


def test_set_ones_appear_in_a_fixed_order_and_unset_ones_never():
    line = params_line({"seed": 42, "stop": ["###", "\n\n"], "max_new_tokens": 8, "temperature": 0.0,
                        "top_p": 1.0, "regex": r"\d+"})
    assert line == r'temperature 0 (greedy) · top-p 1 · max 8 tokens · seed 42 · stop at "###" or "\n\n" · regex \d+'
    assert params_line({"json_schema": {"type": "object"}}) == "JSON schema"
    assert params_line({}) == params_line(None) == ""


def test_float_noise_is_not_shown():
    assert params_line({"temperature": 0.7000000000000001}) == "temperature 0.7"


def test_the_templates_escape_it():
    rendered = Template("{% load arena_tags %}{{ params|params_line }}").render(Context({"params": {"stop": ["<b>"]}}))
    assert rendered == "stop at &quot;&lt;b&gt;&quot;"


RAW = ("stop=", "seed=None", "max_new_tokens=")
READABLE = "temperature 0.3 · top-p 0.9 · max 12 tokens · seed 5"


@pytest.mark.django_db
def test_the_pages_that_show_params_show_the_line(client, owner, smollm):
    from arena.history.models import ShareLink

    params = {"temperature": 0.3, "top_p": 0.9, "max_new_tokens": 12, "seed": 5, "stop": []}
    gen = factories.generation(owner, smollm, params=params, text="Blue.")
    client.force_login(owner)
    page = client.get(gen.get_absolute_url()).content.decode()
    assert READABLE in page and not any(raw in page for raw in RAW)
    shared = client.get(ShareLink.share(owner, gen).get_absolute_url()).content.decode()
    assert READABLE in shared and not any(raw in shared for raw in RAW)
