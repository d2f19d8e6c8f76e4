"""Every write on categories' assignments: assign a new prompt (by the first matching rule, else
queue the classifier), settle the classifier's finished replies, and the owner's own choice.

Battles (arena.battles.actions.start_battle) and suites (arena.suites.actions) call `assign` when
they create a prompt, in their own transaction. The classifier's reply is a generation of its own
run kind (CLASSIFY_KIND, a judging kind: never counted as the classifier model's results), run by
the generation core's Celery task in the fair line, so nothing here waits on a model; `settle`
(a periodic job, and called before a page reads categories) stores what the finished replies say.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from arena.catalogue.models import ModelEntry
from arena.generations import runs, services, tasks
from arena.generations.models import Generation
from arena.generations.services import GenerationRequest

from . import classifier, rules
from .models import Assignment, Category, Rule, digest

log = logging.getLogger(__name__)

CLASSIFY_KIND = "category"
NO_CLASSIFIER = "No rule matched, and the classifier ({slug}) is not in the catalogue or is disabled."


def register_run_kind() -> None:
    """CategoriesConfig.ready() calls this."""
    runs.register(runs.RunKind(CLASSIFY_KIND, start=tasks.start_run, judging=True))


def classifier_entry() -> ModelEntry | None:
    return ModelEntry.objects.filter(slug=settings.ARENA_CATEGORY_CLASSIFIER, enabled=True).first()


def assign(owner, subject_kind: str, subject_id, prompt: str, tags: Iterable[str] = (), *,
           team=None) -> Assignment | None:
    """The category of a new prompt among `team`'s (its battle's or suite's team: every team's
    categories and its own): the first matching rule's, else the classifier's (queued: it joins the
    line when the caller's transaction commits). None, and nothing written, while no category exists."""
    cats = list(Category.objects.for_team(team))
    if not cats:
        return None
    tags = sorted({t for t in tags if t})
    ordered = list(Rule.objects.filter(category__in=cats).select_related("category").order_by("position", "id"))
    match = rules.first_match([r.as_rule() for r in ordered], prompt, tags)
    row = Assignment(subject_kind=subject_kind, subject_id=str(subject_id), owner=owner, team=team, prompt=prompt,
                     digest=digest(prompt), tags=tags)
    if match is not None:
        rule = next(r for r in ordered if r.pk == match.rule.id)
        row.category, row.rule, row.source = rule.category, rule, Assignment.Source.RULE
    else:
        _classify(row, cats)
    if match is not None and match.timed_out:
        row.note = f"{len(match.timed_out)} regex rule(s) before it ran out of time and did not match."
    with transaction.atomic():
        row.save()
    return row


def _classify(row: Assignment, cats: list[Category]) -> None:
    """Queue the classifier for `row` (or reuse its reply to the same owner's same prompt)."""
    entry = classifier_entry()
    if entry is None:
        row.source, row.note = Assignment.Source.NONE, NO_CLASSIFIER.format(slug=settings.ARENA_CATEGORY_CLASSIFIER)
        return
    row.classifier, row.source = entry, Assignment.Source.PENDING
    earlier = (Assignment.objects.filter(owner=row.owner, team=row.team, digest=row.digest, classifier=entry,
                                         source__in=[Assignment.Source.PENDING, Assignment.Source.CLASSIFIER])
               .exclude(generation=None).order_by("-created_at").first())
    if earlier is not None and earlier.generation is not None and earlier.generation.status != Generation.Status.FAILED:
        row.generation = earlier.generation
        return
    names = [c.name for c in cats]
    request = GenerationRequest(model=entry, prompt=classifier.question(row.prompt, [(c.name, c.description)
                                                                                      for c in cats]),
                                params=entry.params_with_defaults(classifier.params(names)).to_dict())
    [row.generation] = services.start(row.owner, [request], origin=Generation.Origin.SUITE, kind=CLASSIFY_KIND,
                                      run_id=row.id, check_limits=False)


def settle() -> int:
    """Store what each finished classifier reply says (its category, or none and why); how many
    assignments it settled. The periodic job, and what a page calls before it reads categories."""
    pending = list(Assignment.objects.filter(source=Assignment.Source.PENDING,
                                             generation__status__in=Generation.FINISHED)
                   .select_related("generation"))
    if not pending:
        return 0
    settled = 0
    for row in pending:
        gen = row.generation
        assert gen is not None
        by_name = {c.name: c for c in Category.objects.for_team(row.team)}
        if gen.status == Generation.Status.DONE:
            name = classifier.read(gen.text, list(by_name))
            category = by_name.get(name) if name else None
            fields = {"category": category, "source": Assignment.Source.CLASSIFIER if category else
                      Assignment.Source.NONE,
                      "note": "" if category else "The classifier answered that no category fits."}
        else:
            fields = {"category": None, "source": Assignment.Source.NONE,
                      "note": f"The classifier's reply {gen.status}: {gen.failure_reason or 'no reason given'}"[:300]}
        # Conditional: an owner's choice made meanwhile is never overwritten.
        settled += Assignment.objects.filter(pk=row.pk, source=Assignment.Source.PENDING).update(
            updated_at=timezone.now(), **fields)
    return settled


def set_category(row: Assignment, category: Category | None) -> Assignment:
    """The owner's own choice (None: no category); it stands whatever rules or the classifier say."""
    row.category, row.source, row.note, row.updated_at = category, Assignment.Source.OWNER, "", timezone.now()
    row.save(update_fields=["category", "source", "note", "updated_at"])
    return row
