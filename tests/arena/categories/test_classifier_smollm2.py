"""The classifier on the small real model: a prompt no rule matches gets its category from the
packaged SmolLM2, decoding the very generation the app queued (its prompt, and its parameters
with the JSON schema constraining the reply to exactly the category names or "none"), through
our transformers engine as a worker runs it. The reply must be one of those names, and settled."""

import json

import pytest

from arena.categories import actions
from arena.categories.models import Assignment, Category
from inference.chunks import Finish
from inference.engine import Engine
from inference.loading import load
from inference.protocol import ModelSpec, SamplingParams
from inference.sources import PACKAGED_SMOLLM2
from tests.arena.factories import comparison, finish

pytestmark = [pytest.mark.django_db, pytest.mark.slow, pytest.mark.timeout(900)]


def test_smollm2_places_an_unmatched_prompt_in_one_of_the_names(owner, catalogue):
    for i, (name, description) in enumerate([("coding", "writing or fixing computer programs"),
                                             ("cooking", "recipes and food"),
                                             ("support replies", "answers to customers")]):
        Category.objects.create(name=name, description=description, position=i)
    battle = comparison(owner, catalogue[0], catalogue[3], prompt="How long should I bake a loaf of bread?",
                        texts=None)
    row = Assignment.objects.get(subject_kind="battle", subject_id=str(battle.id))
    gen = row.generation
    assert row.source == "pending" and gen is not None
    engine = Engine.from_loaded(load(ModelSpec(slug="smollm2", source=PACKAGED_SMOLLM2[0],
                                               gguf_file=PACKAGED_SMOLLM2[1])))
    chunks = list(engine.stream(engine.encode([{"role": "user", "content": gen.prompt}]),
                                SamplingParams.from_dict(gen.params)))
    assert isinstance(chunks[-1], Finish)
    text = "".join(getattr(c, "text_delta", "") for c in chunks)
    assert json.loads(text)["category"] in {"coding", "cooking", "support replies", "none"}  # constrained
    finish(gen, text)
    assert actions.settle() == 1
    row.refresh_from_db()
    print("SmolLM2 replied", text, "->", row.category, row.source)
    assert row.source in {"classifier", "none"}
    assert row.source == "none" or row.category.name in {"coding", "cooking", "support replies"}
