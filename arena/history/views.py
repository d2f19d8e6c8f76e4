"""History lists, share links and exports. Thin: the querying is in queries.py, what a
shared page shows in share.py, the export formats in export.py."""

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from arena.accounts.bearer import token_required
from arena.api.http import error
from arena.battles.models import Battle
from arena.teams.membership import api_scope, current_team

from . import export, queries, share, view_counts
from .models import NEW_LINKS, ShareLink

PER_PAGE = 25
MODE_MUST_BE = f"mode must be one of {', '.join(Battle.Mode.values)} (or empty: all)."
TABS = {
    "generations": ("Generations", queries.generations),
    "comparisons": ("Comparisons", queries.comparisons),
    "anonymous": ("Anonymous battles", queries.anonymous_battles),
    "tournaments": ("Tournaments", queries.tournaments),
    "suite_runs": ("Suite runs", queries.suite_runs),
}


def _list(request, tab: str):
    filters = queries.Filters.from_query(request.GET, request.user)
    rows = TABS[tab][1](request.user, filters)
    page = Paginator(rows, PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "history/list.html", {
        "tab": tab, "tab_label": TABS[tab][0], "tabs": TABS, "page": page, "filters": filters,
        "counts": queries.counts(request.user, filters), "tag_choices": queries.tags_used(request.user, filters),
        "exportable": tab in ("generations", "comparisons"), "team": current_team(request.user),
    })


@login_required
def generations(request):
    return _list(request, "generations")


@login_required
def comparisons(request):
    return _list(request, "comparisons")


@login_required
def anonymous_battles(request):
    return _list(request, "anonymous")


@login_required
def tournaments(request):
    return _list(request, "tournaments")


@login_required
def suite_runs(request):
    return _list(request, "suite_runs")


@login_required
def shared(request):
    links = ShareLink.objects.filter(owner=request.user).select_related(
        "generation__model", "battle__left", "tournament").order_by("revoked_at", "-created_at")
    page = Paginator(links, PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "history/shared.html", {"tab": "shared", "tabs": TABS, "page": page,
                                                   "filters": queries.Filters()})


def _back(request, fallback: str):
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure()):
        return redirect(target)
    return redirect(fallback)


@login_required
@require_POST
def share_create(request, kind, object_id):
    obj = share.owned(request.user, kind, object_id)
    link = ShareLink.share(request.user, obj)
    if link.token:  # just made: its page shows the full link this once (only a digest is stored)
        request.session[NEW_LINKS] = {**request.session.get(NEW_LINKS, {}), str(link.id): link.token}
    return _back(request, obj.get_absolute_url() + "#share")


@login_required
@require_POST
def share_revoke(request, link_id):
    link = get_object_or_404(ShareLink, id=link_id, owner=request.user)
    link.revoke()
    return _back(request, link.target.get_absolute_url() + "#share")


@require_GET
def shared_page(request, token):
    """Anyone holding an active link; a revoked link and an unknown one get the same 404."""
    link = ShareLink.objects.resolve(token)
    if link is None:
        raise Http404("No such link.")
    template, context = share.page(link)
    view_counts.note(link)  # in Redis: a public view writes nothing to the database
    response = render(request, template, {**context, "link": link})
    response["Referrer-Policy"] = "no-referrer"  # the token must not leave in a Referer header
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Cache-Control"] = "private, no-store"  # a revoked link must not live on in a cache
    return response


def _export(request, dataset: str, fmt: str):
    filters = queries.Filters.from_query(request.GET, request.user)
    if dataset == "battles":
        mode = request.GET.get("mode") if request.GET.get("mode") in Battle.Mode.values else None
        rows = queries.battles(request.user, filters, mode)
        applied = {**filters.as_query(), **({"mode": mode} if mode else {})}
    else:
        rows, applied = queries.generations(request.user, filters), filters.as_query()
    return export.response(request, dataset, fmt, rows, applied)


@login_required
@require_GET
def export_page(request, dataset, fmt):
    return _export(request, dataset, fmt)


@require_GET
@token_required
def export_api(request, dataset):
    fmt = request.GET.get("format", "json")
    if fmt not in export.FORMATS:
        return error(400, "format must be csv or json.", {"format": "must be csv or json"})
    if dataset == "battles" and request.GET.get("mode", "") not in ("", *Battle.Mode.values):
        # the page ignores an unknown mode; a script must hear that its filter was not applied
        return error(400, MODE_MUST_BE, {"mode": MODE_MUST_BE})
    api_scope(request.user, request.GET.get("scope"))  # the page reads any other as "mine": a script hears it
    return _export(request, dataset, fmt)
