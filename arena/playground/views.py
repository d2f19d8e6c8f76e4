from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods
from django.views.decorators.vary import vary_on_headers

from arena.access import may_change
from arena.catalogue.defaults import DEFAULT_ENTRIES
from arena.catalogue.models import ModelEntry
from arena.generations import runs
from arena.generations.access import access_generation
from arena.generations.limits import PageRefusal
from arena.generations.models import Generation
from arena.generations.services import GenerationRequest, start_generation

from . import queries
from .forms import GenerationForm

RECENT = 10


@login_required
@vary_on_headers("HX-Request")
@require_http_methods(["GET", "POST"])
def playground(request):
    form = GenerationForm(request.POST or None, initial=_initial(request))
    refusal = PageRefusal(form)
    if request.method == "POST" and form.is_valid():
        with refusal:
            gen = start_generation(request.user, GenerationRequest.from_form(form.cleaned_data),
                                   origin=Generation.Origin.WEB, kind=runs.PLAYGROUND)
        if refusal.exc is None:
            if request.htmx:  # the answer streams in place, and the recent list shows it at once
                return render(request, "playground/generation.html#stream",
                              {"gen": gen, "in_playground": True, "recent": recent_for(request.user),
                               "can_change": True})
            return redirect(gen)
    status = 400 if form.errors else 200
    if request.htmx and request.method == "POST":  # put the form with its errors back in place
        response = render(request, "playground/playground.html#form", {"form": form}, status=status)
        response["HX-Retarget"] = "#playground-form"
        response["HX-Reswap"] = "outerHTML"
    else:
        response = render(request, "playground/playground.html", {"form": form, "recent": recent_for(request.user)},
                          status=status)
    return refusal.page(response)


def recent_for(user):
    """The user's own playground generations, as History lists them (no comparison's, tournament's
    or suite run's answers, no judge's prompts), newest first."""
    return queries.generations(user)[:RECENT]


def _initial(request) -> dict:
    """The first default catalogue model (a chat model) is preselected, else any."""
    enabled = ModelEntry.objects.enabled()
    model = enabled.filter(slug=DEFAULT_ENTRIES[0]["slug"]).first() or enabled.first()
    return {"model": model, **(model.default_params if model else {})} if model else {}


@login_required
def generation_detail(request, generation_id):
    gen = access_generation(request.user, generation_id, change=False)  # its team's members open it read-only
    return render(request, "playground/generation.html", {"gen": gen, "can_change": may_change(request.user, gen)})
