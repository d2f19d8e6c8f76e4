from django import template
from django.utils.safestring import SafeString

from arena import markdown as md
from arena.battles.judging import by_judge, judge_verdict, orders_agree
from arena.catalogue import pricing
from arena.suites import checks

register = template.Library()


@register.filter
def markdown(text: str) -> SafeString:
    """A model's answer as the other pages show one: Markdown without HTML (untrusted: arena.markdown)."""
    return md.render(text)


@register.filter
def check_text(spec) -> str:
    """A check spec in words (arena.suites.checks.describe)."""
    return checks.describe(spec)


@register.filter
def failed_checks(results: list) -> list[dict]:
    """An answer's stored check results that failed (a rubric check still waiting for its grade has
    not failed: it is pending)."""
    return [r for r in results or [] if not r.get("passed") and not r.get("pending")]


@register.filter
def pending_checks(results: list) -> list[dict]:
    """An answer's stored check results still waiting for a judge's grade (a rubric check)."""
    return [r for r in results or [] if r.get("pending")]


@register.filter
def rubric_graded(results: list) -> list[dict]:
    """An answer's rubric check results whose grades are not all said already: a passed one's, and
    a jury's (a failed check with one judge says its grade and reason among the failures)."""
    return [r for r in results or [] if r.get("type") == "rubric" and not r.get("pending") and r.get("grades")
            and (r.get("passed") or len(r["grades"]) > 1)]


@register.filter
def grade_text(grade: dict, result: dict) -> str:
    """One judge's grade of a rubric check in words: "pass", "fail", "4 of 5", or why none."""
    value = grade.get("grade")
    if value is None:
        return "no grade (its reply failed or could not be read)"
    return checks.grade_words("pass" if isinstance(value, bool) else "1-5", value)


@register.filter
def percent(rate) -> str:
    """A pass rate (report.Rate) as a whole percentage."""
    return f"{round(100 * rate.count / rate.total)}%" if rate.total else "—"


@register.filter
def interval(rate) -> str:
    """A pass rate's 95% Wilson interval, in whole percent: "62–91%"."""
    bounds = getattr(rate, "share", rate).interval  # a report.Rate, or a reliability.Share
    return f"{round(100 * bounds[0])}–{round(100 * bounds[1])}%" if bounds else ""


@register.filter
def money(value) -> str:
    """A cost in dollars, written out ("$0.0000153"; arena.catalogue.pricing.money); "" for None."""
    return pricing.money(value)


ORDERS_DISAGREED = "Tie because the two orders disagreed"
SAID = {"tie": "a tie", "both_bad": "both are bad"}


def _label(model) -> str:
    return getattr(model, "label", "") or model.name


def _said(verdict: str, names: dict) -> str:
    return f"{names[verdict]} is better" if verdict in names else SAID.get(verdict, "no verdict")


def _reading(reading: dict, names: dict) -> dict:
    order = reading.get("order", "")
    first, second = ("right", "left") if order == "right_first" else ("left", "right")
    return {"order": order, "first": names[first], "second": names[second],
            "said": _said(reading.get("verdict", ""), names) if reading.get("raw") else "no reply (it failed)",
            "reason": reading.get("reason", ""), "raw": reading.get("raw", "")}


@register.filter
def readings(battle) -> list[dict]:
    """A model judge's readings of a pair in words: which answer it was shown first (as A), what
    it said (naming the answer it preferred), its reason and its raw text. A judged pair's names
    are not blind."""
    names = {"left": _label(battle.left.model), "right": _label(battle.right.model)}
    return [_reading(reading, names) for reading in battle.judgements or ()]


@register.simple_tag
def jury_readings(battle, judges) -> list[dict]:
    """Per judge of the pair (`judges`: the run's, in order), its label, its own verdict in words
    (what its two readings agree on, else a tie) and its readings (`readings`)."""
    names = {"left": _label(battle.left.model), "right": _label(battle.right.model)}
    labels = {model.slug: _label(model) for model in judges}
    default = battle.judge.slug if battle.judge_id else ""
    out = []
    for slug, by_order in by_judge(battle.judgements, default).items():
        shown = list(by_order.values())
        verdicts = [r.get("verdict", "") if r.get("raw") else "" for r in shown]
        own = judge_verdict(*verdicts) if len(verdicts) == 2 else ""
        out.append({"judge": slug, "label": labels.get(slug, slug),
                    "verdict": _said(own, names) if own else "abstains (a reading failed)",
                    "readings": [_reading(r, names) for r in shown]})
    return out


@register.filter
def orders_disagreed(battle) -> bool:
    """The pair is a tie only because the judge's two orders disagreed."""
    return orders_agree(battle.judgements) is False


@register.simple_tag
def orders_disagreed_text() -> str:
    return ORDERS_DISAGREED


@register.simple_tag
def comparator_pairs(run) -> list[dict]:
    """The LLM Comparator export's choices: each pair of contestants ({value, label}), the first
    being the default export."""
    from arena.suite_runs import export

    return [{"value": export.pair_value(a, b), "label": f"{_label(a)} vs {_label(b)}"}
            for a, b in export.comparator_pairs(run)]
