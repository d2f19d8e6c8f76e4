"""A conversation's total size (arena/conversations.py): at most ARENA_MAX_CONVERSATION_TURNS
user turns and ARENA_MAX_CONVERSATION_CHARS characters in all, on every path that takes or
grows a whole conversation: a comparison's follow-up (the page), /v1/ messages and a
tournament's API history. Each refusal names the limit and creates nothing."""

import pytest
from django.urls import reverse

from arena import conversations
from arena.battles.models import Battle
from arena.generations.models import Generation
from arena.tournaments.models import Tournament
from tests.arena.api_client import api
from tests.arena.factories import comparison, finish_battle

pytestmark = pytest.mark.django_db
CHAT = "/v1/chat/completions"
FOUR = ["smollm2-135m", "smollm2-135m-spec", "gemma-3-270m", "smollm2-135m-awq"]


def turns(n: int, content: str = "x") -> list[dict]:
    """n earlier exchanges (a user turn and its answer each)."""
    return [{"role": role, "content": content} for _ in range(n) for role in ("user", "assistant")]


def counts() -> tuple[int, int, int]:
    return Generation.objects.count(), Battle.objects.count(), Tournament.objects.count()


def test_the_check_counts_user_turns_with_the_prompt_and_every_character(settings):
    settings.ARENA_MAX_CONVERSATION_TURNS, settings.ARENA_MAX_CONVERSATION_CHARS = 3, 10
    conversations.check(prompt="abcd", history=turns(2), system_prompt="ab")  # 3 turns, 10 characters
    with pytest.raises(conversations.ConversationTooLong) as exc:
        conversations.check(prompt="a", history=turns(3))
    assert (exc.value.limit, exc.value.current, exc.value.allowed) == (conversations.TURNS, 4, 3)
    with pytest.raises(conversations.ConversationTooLong) as exc:
        conversations.check(prompt="abcde", history=turns(2), system_prompt="ab")
    assert (exc.value.limit, exc.value.current, exc.value.allowed) == (conversations.CHARS, 11, 10)
    settings.ARENA_MAX_CONVERSATION_TURNS, settings.ARENA_MAX_CONVERSATION_CHARS = 0, None  # 0: no turn limit
    settings.ARENA_MAX_PROMPT_CHARS = 500  # unset: the prompt limit
    conversations.check(prompt="a", history=turns(100))
    assert conversations.max_chars() == 500


def test_a_follow_up_past_the_turn_limit_is_a_form_error_and_starts_nothing(client, owner, catalogue, settings):
    settings.ARENA_MAX_CONVERSATION_TURNS = 2
    client.force_login(owner)
    first = comparison(owner, catalogue[0], catalogue[3], "Hi")
    assert client.post(reverse("battle-continue", args=[first.id]), {"prompt": "And?"}).status_code == 302
    second = finish_battle(Battle.objects.get(parent=first))
    before = counts()
    response = client.post(reverse("battle-continue", args=[second.id]), {"prompt": "And then?"})
    html = response.content.decode()
    assert response.status_code == 400
    assert "This conversation would have 3 turns, at most 2 allowed. Start a new comparison to go on." in html
    assert counts() == before


def test_a_follow_up_past_the_character_limit_is_a_form_error(client, owner, catalogue, settings):
    settings.ARENA_MAX_CONVERSATION_CHARS = 30
    client.force_login(owner)
    battle = comparison(owner, catalogue[0], catalogue[3], "Hi", texts=("Blue.", "A longer red answer."))
    before = counts()
    response = client.post(reverse("battle-continue", args=[battle.id]), {"prompt": "Why?"})
    # the right side's conversation: "Hi" + its answer (20) + "Why?" = 26; the left's is shorter
    assert response.status_code == 302
    battle2 = finish_battle(Battle.objects.get(parent=battle), "ok", "ok")
    response = client.post(reverse("battle-continue", args=[battle2.id]), {"prompt": "More"})
    html = response.content.decode()
    assert response.status_code == 400 and "characters in all, at most 30 allowed" in html, html
    assert counts()[:2] == (before[0] + 2, before[1] + 1)  # only the first follow-up was made


def test_the_openai_api_refuses_too_many_turns_and_characters_naming_the_limit(client, token, catalogue, settings):
    settings.ARENA_MAX_CONVERSATION_TURNS = 2
    messages = [*turns(2), {"role": "user", "content": "Hello"}]
    response = api(client, "post", CHAT, token, {"model": "smollm2-135m", "messages": messages})
    error = response.json()["error"]
    assert response.status_code == 400 and error["param"] == "messages"
    assert error["code"] == "array_above_max_length" and "3 user turns, at most 2 allowed" in error["message"]

    settings.ARENA_MAX_CONVERSATION_CHARS = 40
    messages = [*turns(1, "y" * 20), {"role": "user", "content": "z" * 10}]  # 50 characters
    response = api(client, "post", CHAT, token, {"model": "smollm2-135m", "messages": messages})
    error = response.json()["error"]
    assert response.status_code == 400 and error["code"] == "string_above_max_length"
    assert "50 characters in all, at most 40 allowed" in error["message"]
    assert not Generation.objects.exists()


def test_the_tournament_api_refuses_a_history_past_the_turn_limit(client, token, catalogue, settings):
    settings.ARENA_MAX_CONVERSATION_TURNS = 2
    response = api(client, "post", "/api/v1/tournaments", token,
                   {"contestants": FOUR, "prompt": "Hi", "history": turns(2)})
    assert response.status_code == 400
    assert "3 user turns, at most 2 allowed" in response.json()["error"]["message"]
    assert counts() == (0, 0, 0)
