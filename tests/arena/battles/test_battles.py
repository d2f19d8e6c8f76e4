"""Comparison pages and battle records: the form, the permalink and its actions, votes,
ownership, and what a blind battle keeps to itself. No model runs here: the battle task
is only enqueued (on commit); the live tests run it for real."""

import pytest
from django.test import Client
from django.urls import reverse

from arena.battles.actions import note_self_identification, start_battle
from arena.battles.models import Battle
from arena.generations.models import Generation
from arena.history.models import NEW_LINKS
from tests.arena.factories import comparison, finish_battle
from tests.figures import shows_figure, shows_word

pytestmark = pytest.mark.django_db


def post_compare(client, **data):
    form = {"left_model": "smollm2-135m", "right_model": "gemma-3-270m", "prompt": "Name a colour.",
            "temperature": "0.5", "max_new_tokens": "16"}
    return client.post(reverse("compare"), {**form, **data})


@pytest.fixture
def battle(owner, catalogue):
    sides = {side: {"model": model, "params": {"temperature": 0.0, "max_new_tokens": 8}}
             for side, model in (("left", catalogue[0]), ("right", catalogue[3]))}
    return start_battle(owner, prompt="Hi", sides=sides)


def test_compare_starts_both_sides_together_and_redirects_to_the_permalink(
        client, owner, catalogue, django_capture_on_commit_callbacks):
    client.force_login(owner)
    with django_capture_on_commit_callbacks() as callbacks:
        response = post_compare(client, left_system_prompt="Be terse.", right_temperature="1.2")
    battle = Battle.objects.get()
    assert response.status_code == 302 and response["Location"] == battle.get_absolute_url()
    assert (battle.left.model.slug, battle.right.model.slug) == ("smollm2-135m", "gemma-3-270m")
    assert battle.left.params["temperature"] == 0.5 and battle.right.params["temperature"] == 1.2
    assert battle.left.params["max_new_tokens"] == battle.right.params["max_new_tokens"] == 16
    assert battle.left.messages()[0] == {"role": "system", "content": "Be terse."}
    assert battle.right.messages()[0]["role"] == "user"
    assert len(callbacks) == 1  # one run_battle task for both sides


def test_the_same_model_may_meet_itself_with_two_system_prompts(client, owner, catalogue):
    client.force_login(owner)
    post_compare(client, right_model="smollm2-135m", left_system_prompt="Answer as a pirate.",
                 right_system_prompt="Answer as a poet.")
    battle = Battle.objects.get()
    assert battle.left.model == battle.right.model and battle.left.system_prompt != battle.right.system_prompt


@pytest.mark.parametrize("field,value,message", [
    ("prompt", "   ", "Write a prompt."),
    ("left_model", "no-such-model", "No enabled catalogue model has that slug."),
    ("max_new_tokens", "0", "greater than or equal to"),
    ("right_temperature", "9", "less than or equal to"),
])
def test_bad_input_is_refused_with_the_reason_and_nothing_is_created(client, owner, catalogue, field, value, message):
    client.force_login(owner)
    response = post_compare(client, **{field: value})
    assert response.status_code == 400 and message in response.content.decode()
    assert not Battle.objects.exists() and not Generation.objects.exists()


def test_the_permalink_shows_both_sides_with_names_and_a_socket(client, owner, battle):
    client.force_login(owner)
    html = client.get(battle.get_absolute_url()).content.decode()
    assert f'ws-connect="/ws/battles/{battle.id}/"' in html
    assert "SmolLM2 135M Instruct" in html and "Gemma 3 270M" in html
    assert 'id="left-output"' in html and 'id="right-output"' in html
    assert "disabled" in html  # no vote before both answers are in
    assert "{#" not in html and "{%" not in html  # every template comment and tag rendered (a {# #} spans one line)


def test_a_running_side_keeps_a_place_for_its_chart_and_a_stored_one_shows_no_empty_chart(client, owner, battle):
    """A page read back from the database has no token times to draw: an empty chart box said nothing."""
    client.force_login(owner)
    assert client.get(battle.get_absolute_url()).content.decode().count('<svg class="chart"') == 2
    finish_battle(battle)
    assert '<svg class="chart"' not in client.get(battle.get_absolute_url()).content.decode()


def test_vote_needs_both_answers_then_records_the_verdict(client, owner, battle):
    client.force_login(owner)
    url = reverse("battle-vote", args=[battle.id])
    assert client.post(url, {"outcome": "left"}).status_code == 400
    finish_battle(battle)
    response = client.post(url, {"outcome": "left"}, headers={"HX-Request": "true"})
    assert response.status_code == 200 and 'data-outcome="left"' in response.content.decode()
    battle.refresh_from_db()
    assert battle.outcome == "left" and battle.voted_at is not None and not battle.blind
    client.post(url, {"outcome": "tie"})  # a change of mind replaces the verdict
    battle.refresh_from_db()
    assert battle.outcome == "tie"
    assert client.post(url, {"outcome": "both-good"}).status_code == 400


def test_rerun_swap_and_follow_up_make_new_battles_linked_to_the_first(client, owner, battle):
    client.force_login(owner)
    finish_battle(battle)
    client.post(reverse("battle-rerun", args=[battle.id]))
    client.post(reverse("battle-swap", args=[battle.id]))
    client.post(reverse("battle-continue", args=[battle.id]), {"prompt": "And another?"})
    rerun, swapped, follow = Battle.objects.filter(parent=battle).order_by("created_at")
    assert (rerun.left.model, rerun.right.model) == (battle.left.model, battle.right.model)
    assert (swapped.left.model, swapped.right.model) == (battle.right.model, battle.left.model)
    assert follow.prompt == "And another?"
    assert follow.left.messages()[-3:] == [{"role": "user", "content": "Hi"},
                                           {"role": "assistant", "content": "Blue."},
                                           {"role": "user", "content": "And another?"}]
    assert follow.right.history[-1] == {"role": "assistant", "content": "Red."}


def thread(html: str, side: str) -> str:
    """The text of one side's transcript of earlier turns on a battle page."""
    after = html.split(f'<ol class="thread" data-thread="{side}"')
    assert len(after) == 2, f"no {side} thread"
    return after[1].split("</ol>")[0]


LEFT_ANSWER, RIGHT_ANSWER = "The left model answers with a heron.", "The right model answers with an otter."


def test_each_follow_up_side_shows_its_own_thread_and_keeps_it_through_swap_rerun_and_edit(client, owner, battle):
    client.force_login(owner)
    finish_battle(battle, LEFT_ANSWER, RIGHT_ANSWER)
    client.post(reverse("battle-continue", args=[battle.id]), {"prompt": "And another?"})
    follow = Battle.objects.get(parent=battle)
    html = client.get(follow.get_absolute_url()).content.decode()
    left, right = thread(html, "left"), thread(html, "right")
    assert LEFT_ANSWER in left and RIGHT_ANSWER not in left and "Hi" in left
    assert RIGHT_ANSWER in right and LEFT_ANSWER not in right and "Hi" in right
    assert left.index("turn-user") < left.index("turn-assistant")  # turn by turn: the question, then its answer
    # Its read-only share link shows each side's own thread too.
    client.post(reverse("share-create", args=["battle", follow.id]))
    (token,) = client.session[NEW_LINKS].values()
    shared = Client().get(f"/s/{token}/").content.decode()
    assert LEFT_ANSWER in thread(shared, "left") and RIGHT_ANSWER in thread(shared, "right")
    assert RIGHT_ANSWER not in thread(shared, "left") and LEFT_ANSWER not in thread(shared, "right")

    finish_battle(follow, "Second left.", "Second right.")
    client.post(reverse("battle-swap", args=[follow.id]))
    swapped = Battle.objects.get(parent=follow)
    assert swapped.left.model == battle.right.model
    html = client.get(swapped.get_absolute_url()).content.decode()
    assert RIGHT_ANSWER in thread(html, "left") and LEFT_ANSWER not in thread(html, "left")  # its own, moved along
    assert LEFT_ANSWER in thread(html, "right") and RIGHT_ANSWER not in thread(html, "right")

    client.post(reverse("battle-rerun", args=[swapped.id]))
    rerun = Battle.objects.filter(parent=swapped).get()
    assert (rerun.left.history, rerun.right.history) == (swapped.left.history, swapped.right.history)

    # Edit the prompt: the form carries which battle's turn it redoes, and each side keeps its thread.
    form = client.get(reverse("compare") + f"?from={follow.id}").content.decode()
    assert f'name="continues" value="{follow.id}"' in form and 'class="hint continuing"' in form
    response = post_compare(client, left_model=follow.left.model.slug, right_model=follow.right.model.slug,
                            prompt="Or rather this?", continues=str(follow.id))
    edited = Battle.objects.filter(parent=follow).exclude(id=swapped.id).get()
    assert response.status_code == 302 and edited.prompt == "Or rather this?"
    assert (edited.left.history, edited.right.history) == (follow.left.history, follow.right.history)


def test_follow_up_waits_for_both_answers(client, owner, battle):
    client.force_login(owner)
    response = client.post(reverse("battle-continue", args=[battle.id]), {"prompt": "More"})
    assert response.status_code == 400 and "must be complete" in response.content.decode()


def test_edit_prefills_the_form_from_a_battle(client, owner, battle):
    client.force_login(owner)
    html = client.get(reverse("compare") + f"?from={battle.id}").content.decode()
    assert "\nHi</textarea>" in html and 'value="gemma-3-270m" selected' in html


def test_another_user_gets_404_everywhere_and_anonymous_is_sent_to_log_in(client, outsider, battle):
    client.force_login(outsider)
    for name in ("battle-detail",):
        assert client.get(reverse(name, args=[battle.id])).status_code == 404
    for name in ("battle-vote", "battle-rerun", "battle-swap", "battle-continue"):
        assert client.post(reverse(name, args=[battle.id]), {"outcome": "left", "prompt": "x"}).status_code == 404
    assert client.get(reverse("compare") + f"?from={battle.id}").content.decode().count("\nHi</textarea>") == 0
    client.logout()
    response = client.get(battle.get_absolute_url())
    assert response.status_code == 302 and reverse("login") in response["Location"]
    assert Battle.objects.count() == 1


def test_a_blind_battle_hides_names_in_its_page_and_its_generations(client, owner, catalogue):
    sides = {side: {"model": model, "params": {}} for side, model in (("left", catalogue[2]), ("right", catalogue[3]))}
    battle = start_battle(owner, prompt="Hi", sides=sides, mode=Battle.Mode.TOURNAMENT, blind=True)
    finish_battle(battle)
    client.force_login(owner)
    html = client.get(battle.get_absolute_url()).content.decode()
    for name in ("smollm2", "SmolLM2", "gemma", "Gemma", "AWQ"):
        assert not shows_word(html, name), name
    for speed in ("12.5", "31.2", "31.3"):
        assert not shows_figure(html, speed), speed
    assert "Model A" in html and "Speeds are shown at the reveal" in html
    assert client.get(battle.left.get_absolute_url()).status_code == 404  # the generation page names the model
    battle.revealed = True
    battle.save()
    assert "Gemma 3 270M" in client.get(battle.get_absolute_url()).content.decode()
    assert client.get(battle.left.get_absolute_url()).status_code == 200


def test_an_answer_naming_its_own_model_flags_the_battle(owner, battle):
    finish_battle(battle, left="I am SmolLM, a small model.", right="Red.")
    assert note_self_identification(battle) and Battle.objects.get().self_identified
    Generation.objects.filter(id=battle.left.id).update(text="As a language model I cannot say.")
    battle.left.refresh_from_db()  # the word "model" alone names nobody
    assert not note_self_identification(battle) and not Battle.objects.get().self_identified


def test_a_tournament_battle_is_judged_and_rerun_only_on_its_tournament_page(client, owner, catalogue):
    sides = {side: {"model": model, "params": {}} for side, model in (("left", catalogue[0]), ("right", catalogue[3]))}
    battle = start_battle(owner, prompt="Hi", sides=sides, mode=Battle.Mode.TOURNAMENT, blind=True)
    finish_battle(battle)
    client.force_login(owner)
    assert 'id="verdict"' not in client.get(battle.get_absolute_url()).content.decode()
    assert client.post(reverse("battle-vote", args=[battle.id]), {"outcome": "left"}).status_code == 409
    for name in ("battle-rerun", "battle-swap", "battle-continue"):
        assert client.post(reverse(name, args=[battle.id]), {"prompt": "x"}).status_code == 404
    assert Battle.objects.count() == 1


def test_a_comparison_says_what_its_speeds_were_measured_under(client, owner, catalogue, monkeypatch):
    client.force_login(owner)
    battle = comparison(owner, catalogue[0], catalogue[1])
    monkeypatch.setenv("ARENA_CPU_SHARES", "2")
    assert "1/2 of the cores" in client.get(battle.get_absolute_url()).content.decode()
    monkeypatch.setenv("ARENA_CPU_SHARES", "1")
    assert "every core" in client.get(battle.get_absolute_url()).content.decode()
