"""An answer that names a contestant flags its battle: the pure matcher, the check on stored
answers, and the sweeper ending a battle whose run was gone (it checks as the run would)."""


import pytest

from arena.battles.actions import note_self_identification
from arena.battles.identity import identity_mentions
from arena.battles.models import Battle
from arena.generations.models import Generation
from tests.arena.factories import comparison

GEMMA = ["Gemma", "Google", "DeepMind", "Bard", "Gemini"]
SMOLLM = ["SmolLM", "SmolLM2", "Hugging Face", "HuggingFaceTB"]


# --- the matcher ------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "found"), [
    ("I was trained by Google.", ["Google"]),
    ("I am gemma, a small model", ["Gemma"]),
    ("GEMMA here", ["Gemma"]),
    ("Gemma's answer: blue", ["Gemma"]),
    ("As Gemma3 I think", ["Gemma"]),
    ("I am Gemma-3 270M", ["Gemma"]),
    ("Built on Gemma 3n.", ["Gemma"]),
    ("(Google DeepMind)", ["Google", "DeepMind"]),
    ("I'm a Hugging Face model", ["Hugging Face"]),
    ("Made by Hugging  Face", ["Hugging Face"]),
    ("Made by Hugging\nFace", ["Hugging Face"]),
    ("Made by Hugging-Face", ["Hugging Face"]),
    ("Made by huggingface", ["Hugging Face"]),
    ("HuggingFaceTB trained me", ["HuggingFaceTB"]),
    ("I am SmolLM2-135M-Instruct", ["SmolLM", "SmolLM2"]),
])
def test_an_alias_matches_whatever_its_case_version_or_separators(text, found):
    assert identity_mentions(text, GEMMA + SMOLLM) == found


@pytest.mark.parametrize("text", [
    "Programming is fun.",  # no word starts with an alias
    "Visit the Googleplex.",  # a longer word that starts with one
    "They kept bombarding us.",
    "Gemmation is how corals bud.",
    "As a language model I cannot say.",
    "",
])
def test_a_word_that_only_contains_an_alias_names_nobody(text):
    assert identity_mentions(text, GEMMA + SMOLLM) == []


def test_each_alias_is_reported_once_in_the_order_given():
    assert identity_mentions("Google, Google and gemma", ["Gemma", "Google", "Gemma"]) == ["Gemma", "Google"]
    assert identity_mentions("Gemma", ["", "--", "  "]) == []  # nothing to match: never everything


# --- the check on stored answers ----------------------------------------------------------
@pytest.fixture
def smollm_v_gemma(owner, catalogue):
    return catalogue[0], catalogue[3]


@pytest.mark.parametrize(("left", "right"), [
    ("I am SmolLM, a small model.", "Red."),  # its own model
    ("Red.", "I was trained by Hugging Face."),  # the other contestant's maker
    ("Blue.", "Google trained me."),  # its own maker: no family word at all
    ("Gemini would say blue.", "Red."),  # a product of the other's maker
])
def test_an_answer_naming_either_contestant_flags_the_battle(owner, smollm_v_gemma, left, right):
    battle = comparison(owner, *smollm_v_gemma, prompt="Name a colour.", texts=(left, right),
                        mode=Battle.Mode.TOURNAMENT, blind=True)
    assert note_self_identification(battle)
    assert Battle.objects.get(id=battle.id).self_identified


def test_answers_that_name_nobody_or_only_what_the_prompt_named_leave_it_unflagged(owner, smollm_v_gemma):
    battle = comparison(owner, *smollm_v_gemma, prompt="Name a colour.", texts=("Blue.", "Red, like a Googleplex."))
    assert not note_self_identification(battle) and not Battle.objects.get(id=battle.id).self_identified
    asked = comparison(owner, *smollm_v_gemma, prompt="What does Google sell?", texts=("Ads.", "Google sells ads."))
    assert not note_self_identification(asked)  # the user named it first: the answer adds nothing


def test_an_entry_without_aliases_is_still_named_by_its_first_words(owner, smollm_v_gemma):
    smollm, gemma = smollm_v_gemma
    type(smollm).objects.filter(id__in=[smollm.id, gemma.id]).update(aliases=[])
    smollm.refresh_from_db()
    gemma.refresh_from_db()
    assert "SmolLM" in smollm.identity_words() and "Gemma" in gemma.identity_words()
    named = comparison(owner, smollm, gemma, texts=("I'm smollm2.", "Red."))
    assert note_self_identification(named)
    maker = comparison(owner, smollm, gemma, texts=("Blue.", "Google trained me."))
    assert not note_self_identification(maker)  # the maker is an alias, not part of the floor


def test_a_flag_follows_the_answers_when_they_change(owner, smollm_v_gemma):
    battle = comparison(owner, *smollm_v_gemma, texts=("I am Gemma.", "Red."))
    assert note_self_identification(battle)
    Generation.objects.filter(id=battle.left.id).update(text="Blue.")
    battle.left.refresh_from_db()
    assert not note_self_identification(battle) and not Battle.objects.get(id=battle.id).self_identified
