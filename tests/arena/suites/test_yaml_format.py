"""Suite files in YAML (arena.suites.yaml_format): variables, defaults, every refusal with its
line; and the exports (YAML, JSONL, CSV) read back to the same suite, over generated suites."""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, assume, given
from hypothesis import settings as examples
from hypothesis import strategies as st

from arena.suites import export, files, parsing, yaml_format
from arena.suites.parsing import PromptSpec, SuiteError, SuiteFile


def load(text: str) -> SuiteFile:
    return files.parse_file("suite.yaml", text.encode())


def problems(text: str) -> list[str]:
    with pytest.raises(SuiteError) as caught:
        load(text)
    return caught.value.problems


SUPPORT = """\
name: Support replies
tag: Support
defaults:
  system_prompt: You are a support agent.
  checks: [{type: words, max: 150}]
prompts:
  - prompt: "Can I return {{item}} after {{ days }} days?"
    vars: [{item: shoes, days: 20}, {item: a laptop, days: 40}]
    reference: "Yes, {{item}} within 30 days: {{days}} is {{days}}."
    checks: [{type: contains, value: "{{item}}"}]
    tags: [returns, Refunds]
  - prompt: Say hello.
    system_prompt: ""
"""


def test_a_prompt_is_expanded_over_its_vars_and_takes_the_defaults():
    found = load(SUPPORT)
    assert (found.name, found.tag, found.default_checks) == ("Support replies", "support",
                                                              [{"type": "words", "max": 150}])
    assert found.prompts == [
        PromptSpec("Can I return shoes after 20 days?", "You are a support agent.",
                   "Yes, shoes within 30 days: 20 is 20.", checks=[{"type": "contains", "value": "shoes"}],
                   tags=["returns", "refunds"]),
        PromptSpec("Can I return a laptop after 40 days?", "You are a support agent.",
                   "Yes, a laptop within 30 days: 40 is 40.", checks=[{"type": "contains", "value": "a laptop"}],
                   tags=["returns", "refunds"]),
        PromptSpec("Say hello."),  # its own empty system prompt, not the default
    ]


def test_the_files_vars_fill_every_prompt_that_uses_them_as_written():
    found = load("""\
vars:
  - {city: Paris, price: 9.90}
  - {city: Oslo, price: 12}
prompts:
  - prompt: "Weather in {{city}}?"
  - prompt: "Is {{price}} a fair price in {{city}}?"
  - prompt: No variables here.
  - prompt: "Own table: {{x}}"
    vars: {x: one}
""")
    assert [p.prompt for p in found.prompts] == [
        "Weather in Paris?", "Weather in Oslo?", "Is 9.90 a fair price in Paris?", "Is 12 a fair price in Oslo?",
        "No variables here.", "Own table: one"]


def test_template_false_keeps_the_braces_and_a_value_is_filled_once():
    found = load("""\
prompts:
  - prompt: "Write {{name}} in Jinja"
    template: false
  - prompt: "Echo {{v}}"
    vars: [{v: "{{v}}"}]
""")
    assert [p.prompt for p in found.prompts] == ["Write {{name}} in Jinja", "Echo {{v}}"]


@pytest.mark.parametrize(("text", "expected"), [
    ("prompts:\n  - prompt: [unclosed\n", "line 3, column 1: not valid YAML"),
    ("prompts:\n  - prompt: hi\n    chekcs: []\n", "line 3, column 5: unknown key 'chekcs' in prompts[0]"),
    ("name: x\nprompt: hi\n", "line 2, column 1: unknown key 'prompt' in the file"),
    ("prompts:\n  - prompt: x\ndefaults: {system: s}\n", "line 3, column 12: unknown key 'system' in defaults"),
    ('prompts:\n  - prompt: "Hi {{who}} {{when}}"\n    vars: [{who: Ann}]\n',
     "line 2, column 5, prompts[0] vars[0]: no value for {{when}}"),
    ('prompts:\n  - prompt: "Hi {{who}}"\n',
     "line 2, column 5, prompts[0]: it uses {{who}} but no 'vars' give a value"),
    ('prompts:\n  - prompt: "Hi {{who}}"\n    vars: [{who: Ann, whom: Bo}]\n',
     "prompts[0] vars[0]: gives 'whom', which the prompt does not use"),
    ("prompts:\n  - prompt: Hi\n    vars: [{who: Ann}]\n", "prompts[0]: it has 'vars' but uses no {{variable}}"),
    ('vars: [{a: 1, b: 1}, {a: 1, b: 2}]\nprompts:\n  - prompt: "{{a}}"\n  - prompt: "{{a}}{{b}}"\n',
     "prompts[0] the file's vars[1] makes the same prompt as the file's vars[0] (it uses only {{a}})"),
    ('vars: [{a: 1, z: 2}]\nprompts:\n  - prompt: "{{a}}"\n', "line 1, column 1: 'vars' gives 'z', which no prompt"),
    ('prompts:\n  - prompt: "{{ok}}"\n    vars: {ok: yes}\n', "the variable 'ok' is true/false"),
    ("prompts:\n  - prompt: !!python/object/apply:os.system [echo hi]\n",
     ("line 2, column 13: could not determine a constructor for the tag 'tag:yaml.org,2002:python/object/apply:os"
     ".system': a suite file holds plain text")),
    ("a: &x [1]\nb: *x\nprompts: [{prompt: hi}]\n", "line 1, column 4: aliases (*name) are not allowed"),
    ("prompts:\n  - prompt: a\n    prompt: b\n", "line 3, column 5: the key 'prompt' is given twice"),
    ("", "the file is empty"),
    ("- prompt: hi\n", "line 1, column 1: a suite file is a mapping with 'prompts'"),
    ("prompts: []\n", "'prompts' must be a list of 1 to"),
    ("tag: not a tag!\nprompts: [{prompt: hi}]\n", "line 1, column 1: a tag is"),
    ("prompts:\n  - prompt: hi\n    checks: {type: contains}\n", "prompts[0]: checks: must be a list of check objects"),
    ("prompts:\n  - prompt: hi\n    tags: [a b, 'no!']\n", "prompts[0]: 'tags': a tag is"),
    ("prompts:\n  - prompt: hi\n    regex: '(unclosed'\n", "line 2, column 5, prompts[0]: "),
])
def test_a_bad_file_is_refused_naming_the_place_and_the_reason(text, expected):
    found = problems(text)
    assert any(expected in p for p in found), found


def test_a_billion_laughs_is_refused_before_it_is_expanded():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 30)]
    assert "aliases (*name) are not allowed" in problems("\n".join(lines) + "\nprompts: [{prompt: hi}]\n")[0]


def test_a_deeply_nested_file_is_refused():
    assert problems("prompts: [{prompt: hi, checks: [" + "[" * 5000 + "]" * 5000 + "]}]") == [
        "the file is nested too deeply"]


def test_expansion_is_capped_at_the_prompt_limit_and_the_size_limit(settings):
    rows = ", ".join(f"{{n: {i}}}" for i in range(parsing.MAX_PROMPTS + 1))
    found = problems(f'prompts:\n  - prompt: "{{{{n}}}}"\n    vars: [{rows}]\n')
    assert any(f"the file makes more than {parsing.MAX_PROMPTS} prompts" in p for p in found)
    settings.ARENA_MAX_PROMPT_CHARS = 50
    found = problems('prompts:\n  - prompt: "{{v}}{{v}}{{v}}"\n    vars: {v: "' + "x" * 20 + '"}\n')
    assert any("'prompt' would be 60 characters once filled, at most 50 allowed" in p for p in found)


def test_a_prompt_may_be_its_text_alone():
    found = load('vars: {who: Ann}\nprompts:\n  - Say hello.\n  - "Greet {{who}}."\n')
    assert found.prompts == [PromptSpec("Say hello."), PromptSpec("Greet Ann.")]


def test_upload_names_the_formats_and_reads_yml():
    assert files.parse_file("s.YML", b"prompts: [{prompt: hi}]").prompts == [PromptSpec("hi")]
    with pytest.raises(SuiteError) as caught:
        files.parse_file("s.txt", b"hi")
    assert caught.value.problems[0].startswith("upload a .yaml file")


def test_jsonl_and_csv_carry_checks_and_tags():
    line = b'{"prompt": "Hi", "checks": [{"type": "contains", "value": "hi"}], "tags": ["Greet", "greet"]}\n'
    expected = [PromptSpec("Hi", checks=[{"type": "contains", "value": "hi"}], tags=["greet"])]
    assert parsing.parse_jsonl(line) == expected
    assert parsing.parse_csv(b'prompt,checks,tags\nHi,"[{""type"": ""contains"", ""value"": ""hi""}]","Greet, greet"\n'
                             ) == expected
    with pytest.raises(SuiteError) as caught:
        parsing.parse_jsonl(b'{"prompt": "Hi", "checks": "contains hi"}\n')
    assert caught.value.problems == ["line 1: checks: must be a list of check objects"]


def test_the_documented_example_reads_and_writes_back():
    found = load(SUPPORT)
    written = yaml_format.dump(found)
    assert "{{" not in written and load(written) == found  # the variables come back filled
    assert written.startswith(yaml_format.HEADER) and "- prompt: Can I return shoes after 20 days?" in written


# --- round trips over generated suites --------------------------------------------------
# Text as a user may write it: any script, line breaks of every kind, quotes, YAML's own
# signs, braces that look like variables, blanks at either end.
TRICKY = ["\n", "\r\n", "\r", "\t", " ", "'", '"', ":", "#", "- ", "{{x}}", "{{ y }}", "{", "}", "\u2028", "\x85",
          "é", "日本", "🙂", "yes", "null", "~", "&a", "*a", "!!str", "|", ">", "%", "@", "`", "\\"]
text = st.lists(st.one_of(st.sampled_from(TRICKY), st.text(st.characters(blacklist_categories=["Cs"],
                                                                           blacklist_characters="\x00"), max_size=8)),
                max_size=6).map("".join)
prompt_text = text.filter(lambda t: t.strip() != "")
# Checks the import accepts (arena/suites/checks.py judges them), their text as tricky as the rest.
check = st.one_of(
    st.builds(lambda value, ignore_case: {"type": "contains", "value": value, "ignore_case": ignore_case},
              prompt_text, st.booleans()),
    st.builds(lambda value: {"type": "starts_with", "value": value}, prompt_text),
    st.builds(lambda most: {"type": "words", "max": most}, st.integers(1, 500)),
    st.just({"type": "is_json", "not": True}))
tag = st.text(string.ascii_lowercase + string.digits + "-_é", min_size=1, max_size=8).filter(
    lambda t: t[0] not in "-")
constraint = st.sampled_from([(None, ""), ({}, ""), ({"type": "object", "required": ["a"]}, ""),
                              (None, "^[a-z]+$"), (None, "\\d{2}"), (None, "(yes|no)")])  # at most one
spec = st.builds(lambda prompt, system_prompt, reference, schema_or_regex, checks, tags: PromptSpec(
    prompt, system_prompt, reference, *schema_or_regex, checks=checks, tags=tags),
    prompt_text, text, text, constraint, st.lists(check, max_size=2), st.lists(tag, max_size=3, unique=True))
suite_file = st.builds(SuiteFile, prompts=st.lists(spec, min_size=1, max_size=4),
                       name=prompt_text.map(str.strip).filter(lambda n: 0 < len(n) <= 200),
                       tag=st.one_of(st.just(""), tag), default_checks=st.lists(check, max_size=2))


def _reads_back(fmt: str, written: str) -> SuiteFile:
    return files.parse_data(fmt, written.encode())


@examples(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(suite_file)
def test_yaml_export_reads_back_to_the_same_suite(original):
    written = export.write(original, "yaml")
    back = _reads_back("yaml", written)
    assert back.prompts == original.prompts, written
    assert (back.name, back.tag or "", back.default_checks) == (original.name, original.tag, original.default_checks)


@examples(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(spec, min_size=1, max_size=4), st.sampled_from(["jsonl", "csv"]))
def test_jsonl_and_csv_exports_read_back_to_the_same_prompts(prompts, fmt):
    written = export.write(SuiteFile(prompts), fmt)
    assert _reads_back(fmt, written).prompts == prompts, written


@examples(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["a", "b"]), text, min_size=2, max_size=2), min_size=1,
                max_size=5, unique_by=lambda row: (row["a"], row["b"])))
def test_a_file_with_vars_writes_back_to_the_same_expanded_prompts(rows):
    # each value quoted by the dumper itself: whatever the text, the table reads as written
    import yaml

    source = "prompts:\n  - prompt: 'A {{a}} and {{ b }}.'\n    vars: " + yaml.safe_dump(rows, default_flow_style=True,
                                                                                           width=10**6)
    assume(len({f"{row['a']}|{row['b']}" for row in rows}) == len(rows))
    assume(len({f"A {row['a']} and {row['b']}." for row in rows}) == len(rows))  # two rows, one prompt: refused
    expanded = load(source)
    assert [p.prompt for p in expanded.prompts] == [f"A {row['a']} and {row['b']}." for row in rows]
    assert load(yaml_format.dump(expanded)) == expanded


def test_the_same_check_twice_is_written_twice_not_as_an_alias():
    """Found by the round-trip property: PyYAML wrote a repeated object as an alias, which the import refuses."""
    check = {"type": "contains", "value": "x"}
    original = SuiteFile([PromptSpec("p", checks=[check, check])], name="Twice", default_checks=[check, check])
    written = export.write(original, "yaml")
    assert "*" not in written and "&" not in written
    back = _reads_back("yaml", written)
    assert back.prompts == original.prompts and back.default_checks == [check, check]
