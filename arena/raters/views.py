"""The rater's page (no account: whoever holds the link) and the run owner's management of
rater links (make, revoke) on the run's page (the section is templatetags/rater_tags.py).

The rater's page shows one blind pair at a time from the link's own queue (arena.raters.queue):
the prompt and two answers labelled A and B, never a model's name, never another run's answers.
It sends no Referer to other sites (the token is in its URL), asks not to be indexed nor cached."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from arena.suite_runs.access import access_run
from arena.suite_runs.forms import VoteForm, pair_token
from arena.suite_runs.models import VerdictError

from . import actions
from .access import access_link
from .forms import RaterLinkForm
from .models import ACTIVE, DONE, EXPIRED, REVOKED, RaterLink

CLOCK: Callable[[], datetime] = timezone.now  # the links' clock (tests set their own)
NEW_RATER_LINKS = "arena_new_rater_links"  # session key: links just made, by id, until the run page shows them once


def _private(response):
    # The token must not leave in a Referer header: none to outside links. (Not "no-referrer": a
    # browser then sends `Origin: null` with the form's POST, which Django's CSRF check refuses.)
    response["Referrer-Policy"] = "same-origin"
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Cache-Control"] = "private, no-store"
    return response


@require_http_methods(["GET", "POST"])
def rate(request, token):
    link = RaterLink.objects.resolve(token)
    if link is None:
        raise Http404("No such link.")
    now, run = CLOCK(), link.run
    state = link.state(now, actions.given(link))
    if state in (REVOKED, EXPIRED):
        actions.reveal(link)
        return _private(render(request, "raters/ended.html", {"link": link, "state": state}, status=410))
    error, status, note_form = "", 200, None
    if request.method == "POST":
        if state != ACTIVE:
            error, status = "This link takes no more verdicts.", 409
        elif "finish" in request.POST:
            actions.finish(link, now)
            return _private(redirect("rater-page", token))
        else:
            form = VoteForm(request.POST, run=run)
            try:
                if not form.is_valid():
                    raise VerdictError(" ".join(str(e) for errs in form.errors.values() for e in errs))
                left, right, outcome = form.verdict()
                actions.rate(link, left, right, form.cleaned_data["token"]["a"], outcome, form.note, now)
            except actions.RaterError as exc:
                error, status, note_form = str(exc), exc.status, form
            except VerdictError as exc:
                error, status, note_form = str(exc), 409, form
            else:
                return _private(redirect("rater-page", token))
    return _private(render(request, "raters/rate.html", {**_next(link, now), "error": error, "note_form": note_form},
                           status=status))


def _next(link: RaterLink, now: datetime) -> dict:
    """What the rater's page shows now: the next pair of the link's queue (A and B placed as the
    queue says), how many they gave and may still give, or why there is nothing to judge."""
    run = link.run
    given = actions.given(link)
    state = link.state(now, given)
    context = {"link": link, "state": state, "given": given, "pair": None}
    if state != ACTIVE:
        return context
    pairs, left = actions.left_for(link)
    if not left:
        if not run.live:
            actions.finish(link, now)
            context["state"] = DONE
        return context
    key, a_side = left[0]
    pair = pairs[key]
    a, b = (pair.left, pair.right) if a_side == "left" else (pair.right, pair.left)
    context.update(pair=pair, a=a, b=b, token=pair_token(run, pair.left.id, pair.right.id, a_side),
                   remaining=min(link.cap - given, len(left)), number=given + 1)
    return context


@login_required
@require_http_methods(["GET", "POST"])
def link_new(request, run_id):
    """Make a rater link (the run page's form posts here; a refused one comes back here to fix)."""
    run = access_run(request.user, run_id)
    form = RaterLinkForm(request.POST) if request.method == "POST" else RaterLinkForm.blank(CLOCK())
    error = ""
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            link, token = actions.create_link(run, name=data["name"], expires_at=data["expires_at"], cap=data["cap"],
                                              now=CLOCK())
        except actions.RaterError as exc:
            error = str(exc)
        else:  # the run page shows the full link this once (only a digest is stored)
            request.session[NEW_RATER_LINKS] = {**request.session.get(NEW_RATER_LINKS, {}),
                                                str(link.id): request.build_absolute_uri(link.url(token))}
            return redirect(f"{run.get_absolute_url()}#raters")
    bad = bool(error or form.errors)
    return render(request, "raters/new.html", {"run": run, "form": form, "error": error}, status=400 if bad else 200)


@login_required
@require_POST
def link_revoke(request, run_id, link_id):
    link = access_link(request.user, run_id, link_id)
    actions.revoke(link, CLOCK())
    return redirect(f"{link.run.get_absolute_url()}#raters")
