"""Short labels that tell entries apart (arena/catalogue/labels.py): derived by default, editable,
never shared by two entries."""

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from arena.catalogue import labels
from arena.catalogue.defaults import DEFAULT_ENTRIES
from arena.catalogue.models import LABEL_TAKEN, ModelEntry


def _derived(entry: dict) -> str:
    return labels.derive(entry["name"], entry.get("engine", "transformers"), entry["kind"], "auto", entry["gguf_file"])


def test_the_default_entries_labels_put_what_differs_first_and_are_all_different():
    derived = {e["slug"]: _derived(e) for e in DEFAULT_ENTRIES}
    assert derived["smollm2-135m"] == "SmolLM2 135M"
    assert derived["smollm2-135m-llamacpp"] == "SmolLM2 135M · llama.cpp Q4_1"
    assert derived["smollm2-135m-llamacpp-spec"] == "SmolLM2 135M · llama.cpp Q4_1 · spec"
    assert derived["smollm2-135m-spec"] == "SmolLM2 135M · spec"
    assert derived["smollm2-135m-awq"] == "SmolLM2 135M · AWQ 4-bit"
    assert derived["gemma-3-270m-llamacpp"] == "Gemma 3 270M · llama.cpp Q4_K_M"
    assert len(set(derived.values())) == len(derived)
    assert max(map(len, derived.values())) <= 40  # short enough for a chart's axis


def test_serving_parts_name_the_precision_endpoint_server_and_draft():
    assert labels.derive("Qwen3 8B", "transformers", "full", "bf16", "") == "Qwen3 8B · bf16"
    assert labels.derive("GPT x", "openai", "full", "auto", "") == "GPT x · API"
    assert labels.derive("Llama 3.1 70B Instruct", "server", "full", "auto", "") == "Llama 3.1 70B · server"
    assert labels.derive("Qwen3 8B", "transformers", "speculative", "auto", "", draft_name="Qwen3 0.6B") == (
        "Qwen3 8B · spec ← Qwen3 0.6B")
    long = labels.head("A very long model name that goes on and on, v2")
    assert len(long) == labels.MAX_HEAD and long.endswith("…")


def test_a_taken_label_gets_the_slug():
    assert labels.unique("SmolLM2 135M", "mine", {"other"}) == "SmolLM2 135M"
    assert labels.unique("SmolLM2 135M", "mine", {"smollm2 135m"}) == "SmolLM2 135M · mine"


@pytest.mark.django_db
def test_seeded_entries_get_distinct_labels_and_an_edited_label_is_kept():
    call_command("seed_catalogue")
    entries = ModelEntry.objects.all()
    assert len({e.label for e in entries}) == entries.count() == len(DEFAULT_ENTRIES)
    entry = ModelEntry.objects.get(slug="smollm2-135m")
    entry.label = "Smol, as shipped"
    entry.save()
    entry.refresh_from_db()
    assert entry.label == "Smol, as shipped"


@pytest.mark.django_db
def test_a_copy_of_an_entry_gets_a_label_of_its_own_and_a_duplicate_is_refused():
    call_command("seed_catalogue")
    original = ModelEntry.objects.get(slug="smollm2-135m-llamacpp")
    copy = ModelEntry.objects.create(slug="smollm2-copy", name=original.name, engine="llamacpp",
                                     source=original.source, gguf_file=original.gguf_file)
    assert copy.label == f"{original.label} · smollm2-copy"
    copy.label = original.label.upper()
    with pytest.raises(ValidationError) as raised:
        copy.full_clean()
    assert raised.value.message_dict["label"] == [LABEL_TAKEN]
