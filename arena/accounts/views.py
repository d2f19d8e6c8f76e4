"""A user's own API tokens: a page (/account/tokens/) and the API (/api/v1/tokens).

Both list the caller's tokens without any secret (name, hint, dates, state), make one (a
name and an optional expiry in days; the token itself is in that one answer only) and
revoke one (refused at once from then on). Another user's token is a 404, as if absent."""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from arena.api.http import created, error, json_body

from .bearer import token_required
from .models import MAX_EXPIRY_DAYS, NAME_MAX_LENGTH, ApiToken

CREATE_FIELDS = {"name", "expires_in_days"}
MAX_ID = 2**63 - 1


class TokenForm(forms.Form):
    name = forms.CharField(max_length=NAME_MAX_LENGTH, required=False, strip=True,
                           help_text="What the token is for, e.g. the script that uses it.")
    expires_in_days = forms.IntegerField(min_value=1, max_value=MAX_EXPIRY_DAYS, required=False,
                                         label="Expires in (days)", help_text="Empty: never expires.")


def token_json(token: ApiToken) -> dict:
    def iso(moment):
        return moment.isoformat() if moment else None

    return {"id": token.id, "name": token.name, "hint": token.hint, "state": token.state,
            "created_at": iso(token.created_at), "last_used_at": iso(token.last_used_at),
            "expires_at": iso(token.expires_at), "revoked_at": iso(token.revoked_at)}


# --- the page ------------------------------------------------------------------------------
@never_cache  # the page that shows a new token must not stay in any cache
@login_required
@require_http_methods(["GET", "POST"])
def tokens_page(request):
    new_token = None
    form = TokenForm(request.POST) if request.method == "POST" else TokenForm()
    if request.method == "POST" and form.is_valid():
        new_token, _record = ApiToken.create(request.user, name=form.cleaned_data["name"],
                                             expires_in_days=form.cleaned_data["expires_in_days"])
        form = TokenForm()
    tokens = ApiToken.objects.filter(user=request.user)
    return render(request, "accounts/tokens.html", {"tokens": tokens, "form": form, "new_token": new_token},
                  status=400 if form.errors else 200)


@login_required
@require_POST
def token_revoke(request, token_id):
    get_object_or_404(ApiToken, id=token_id, user=request.user).revoke()
    return redirect("account-tokens")


# --- the API -------------------------------------------------------------------------------
def _days(value):
    """expires_in_days as an int (None: never), or ValueError."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_EXPIRY_DAYS:
        raise ValueError(f"expires_in_days must be a whole number of days from 1 to {MAX_EXPIRY_DAYS}, or null.")
    return value


def _create(request):
    try:
        body = json_body(request, CREATE_FIELDS)
    except ValueError as exc:
        return error(400, str(exc))
    name = body.get("name") if body.get("name") is not None else ""
    if not isinstance(name, str) or len(name.strip()) > NAME_MAX_LENGTH:
        return error(400, f"name must be a string of at most {NAME_MAX_LENGTH} characters.",
                     {"name": f"a string of at most {NAME_MAX_LENGTH} characters"})
    try:
        days = _days(body.get("expires_in_days"))
    except ValueError as exc:
        return error(400, str(exc), {"expires_in_days": str(exc)})
    secret, record = ApiToken.create(request.user, name=name.strip(), expires_in_days=days)
    response = created({**token_json(record), "token": secret}, f"/api/v1/tokens/{record.id}")
    response["Cache-Control"] = "no-store"  # the secret, shown once
    return response


@require_http_methods(["GET", "POST"])
@token_required
def tokens_api(request):
    if request.method == "POST":
        return _create(request)
    return JsonResponse({"tokens": [token_json(t) for t in ApiToken.objects.filter(user=request.user)]})


@require_http_methods(["DELETE"])
@token_required
def token_api(request, token_id):
    if token_id > MAX_ID:  # past any database's integers: no such token, not a 500
        return error(404, "No such token (or not yours).")
    token = ApiToken.objects.filter(id=token_id, user=request.user).first()
    if token is None:
        return error(404, "No such token (or not yours).")
    token.revoke()  # a second DELETE of a revoked token changes nothing and answers the same
    return HttpResponse(status=204)
