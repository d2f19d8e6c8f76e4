"""arena.suites.parsing: JSONL, CSV, the create page's text and the API's list, good and bad;
every problem names its line (or item) and all of them are reported, up to a cap."""

import json

import pytest

from arena.suites import parsing
from arena.suites.parsing import MAX_PROBLEMS, MAX_PROMPTS, PromptSpec, SuiteError

SCHEMA = {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}}


def problems(parse, data) -> list[str]:
    with pytest.raises(SuiteError) as caught:
        parse(data)
    return caught.value.problems


def jsonl(*lines) -> bytes:
    return "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines).encode()


def test_jsonl_reads_every_field_and_skips_blank_lines():
    data = jsonl({"prompt": "Capital of France?", "system_prompt": "Be brief.", "reference": "Paris",
                  "json_schema": SCHEMA}, "", "   ", {"prompt": "Say hi", "regex": "^hi$", "reference": None})
    assert parsing.parse_jsonl(data) == [
        PromptSpec("Capital of France?", "Be brief.", "Paris", SCHEMA, ""),
        PromptSpec("Say hi", regex="^hi$"),
    ]


def test_jsonl_problems_each_name_their_line_and_all_are_listed():
    data = jsonl({"prompt": "ok"}, "", {"promt": "typo"}, "not json", {"prompt": "x", "json_schema": {"type": 5}},
                 {"prompt": "x", "regex": "(unclosed"}, {"prompt": "x", "regex": "a", "json_schema": {}},
                 {"prompt": "   "}, ["a list"], {"prompt": 5, "reference": ["x"]})
    found = problems(parsing.parse_jsonl, data)
    assert found[0].startswith("line 3: unknown field(s) 'promt'")
    assert found[1] == "line 3: 'prompt' is missing"
    assert found[2].startswith("line 4 is not valid JSON: ")
    assert found[3].startswith("line 5: Not a valid JSON schema (at type): ")
    assert found[4].startswith("line 6: Not a valid regex: ")
    assert found[5] == "line 7: Give a JSON schema or a regex, not both."
    assert found[6] == "line 8: 'prompt' is blank"
    assert found[7] == "line 9: must be a JSON object with a 'prompt', not a list"
    assert found[8:] == ["line 10: 'prompt' must be a string, not a number",
                         "line 10: 'reference' must be a string, not a list"]


def test_jsonl_refuses_text_no_database_can_store():
    found = problems(parsing.parse_jsonl, b'{"prompt": "a\\u0000b"}\n{"prompt": "\\ud800"}')
    assert found[0].startswith("line 1 cannot be accepted: ") and "NUL" in found[0]
    assert found[1].startswith("line 2 cannot be accepted: ") and "surrogate" in found[1]


def test_a_file_that_is_not_utf8_names_the_line():
    assert problems(parsing.parse_jsonl, b'{"prompt": "a"}\n{"prompt": "\xff"}') == [
        "line 2: the file is not UTF-8 text (invalid start byte)"]


def test_an_empty_file_holds_no_prompts():
    for parse in (parsing.parse_jsonl, parsing.parse_csv):
        assert problems(parse, b"\n\n") == ["there are no prompts: a suite holds at least one"]


def test_too_many_prompts_and_too_many_problems_stop():
    many = jsonl(*[{"prompt": f"p{i}"} for i in range(MAX_PROMPTS + 1)])
    assert problems(parsing.parse_jsonl, many) == [
        f"line {MAX_PROMPTS + 1}: a suite holds at most {MAX_PROMPTS} prompts"]
    bad = problems(parsing.parse_jsonl, jsonl(*["{"] * 50))
    assert len(bad) == MAX_PROBLEMS + 1 and bad[-1] == f"stopped after {MAX_PROBLEMS} problems"


def test_a_prompt_longer_than_the_apps_limit_is_refused(settings):
    settings.ARENA_MAX_PROMPT_CHARS = 10
    assert problems(parsing.parse_jsonl, jsonl({"prompt": "x" * 11})) == [
        "line 1: 'prompt' is 11 characters, at most 10 allowed"]


def test_csv_reads_columns_in_any_order_with_a_json_schema_cell_and_multiline_cells():
    data = (b'reference,prompt,json_schema\n'
            b'Paris,"Capital of France?\nOne word.",\n'
            b'\n'
            b',Where?,"{""type"": ""object""}"\n')
    assert parsing.parse_csv(data) == [PromptSpec("Capital of France?\nOne word.", reference="Paris"),
                                       PromptSpec("Where?", json_schema={"type": "object"})]


def test_csv_problems_name_the_line_a_row_starts_on():
    data = (b'prompt,json_schema,regex\n'
            b'"two\nlines",{bad,\n'
            b',,\n'
            b'ok,,(\n'
            b',,x\n'
            b'a,b,c,d\n')
    assert problems(parsing.parse_csv, data) == [
        ("line 2: json_schema is not valid JSON: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)"),
        "line 5: Not a valid regex: missing ), unterminated subpattern at position 0.",
        "line 6: 'prompt' is missing",
        "line 7: 4 cells, but the header names 3 columns",
    ]


def test_csv_header_problems_are_line_1():
    found = problems(parsing.parse_csv, b"question,prompt,prompt\nHi,Hi,Hi\n")
    assert found == [("line 1: unknown column(s) 'question' (known: prompt, system_prompt, reference, json_schema, "
                     "regex, checks)"), "line 1: a column is named twice"]
    assert problems(parsing.parse_csv, b"reference\nParis\n") == ["line 1: the header row has no 'prompt' column"]


def test_csv_that_is_not_csv_names_the_line():
    assert problems(parsing.parse_csv, b'prompt\nok\n"a"b\n') == [
        "line 3: not valid CSV: ',' expected after '\"'"]
    assert problems(parsing.parse_csv, b'prompt\nok\n"never\nclosed\n') == [
        "line 3: not valid CSV: unexpected end of data"]
    assert problems(parsing.parse_csv, b'prompt\n"a\x00b"\n')[0].startswith("line 2: text must not contain NUL")


def test_an_upload_is_read_by_its_extension_and_limited_in_size(settings):
    assert parsing.parse_file("suite.JSONL", jsonl({"prompt": "Hi"})) == [PromptSpec("Hi")]
    assert parsing.parse_file("suite.csv", b"prompt\nHi\n") == [PromptSpec("Hi")]
    assert problems(lambda d: parsing.parse_file("suite.txt", d), b"Hi")[0].startswith("upload a .jsonl file")
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10
    assert problems(lambda d: parsing.parse_file("suite.csv", d), b"prompt\nHello there\n") == [
        "the file is larger than 10 bytes"]


def test_the_api_list_names_each_item_by_its_index():
    assert parsing.api_items([{"prompt": "Hi", "system_prompt": None}]) == [PromptSpec("Hi")]
    found = problems(parsing.api_items, [{"prompt": "Hi"}, {"system_prompt": "x"}])
    assert found == ["prompts[1]: 'prompt' is missing"]
    for empty in (None, [], {"prompt": "Hi"}, "Hi"):
        assert problems(parsing.api_items, empty) == [f"prompts must be a list of 1 to {MAX_PROMPTS} prompt objects"]


def test_the_create_pages_text_splits_on_separator_lines():
    text = "Name a colour.\r\n---\r\n\r\nWrite a haiku\r\nabout rain.\r\n  ---  \r\n---\r\n"
    assert parsing.parse_blocks(text) == [PromptSpec("Name a colour."), PromptSpec("Write a haiku\nabout rain.")]
    assert problems(parsing.parse_blocks, "---\n \n---") == ["there are no prompts: a suite holds at least one"]


def test_the_constraint_is_judged_by_inference_structured():
    """The workers build their grammars from the same place; what its checkers cannot read is refused, not raised."""
    deep = '{"prompt": "x", "json_schema": ' + '{"not": ' * 900 + "{}" + "}" * 900 + "}"
    [too_deep] = problems(parsing.parse_jsonl, deep.encode())
    assert too_deep.startswith("line 1: ") and "nested too deeply" in too_deep
    found = problems(parsing.api_items, [{"prompt": "x", "json_schema": {"const": float("nan")}},
                                         {"prompt": "x", "json_schema": {"const": float("inf")}},
                                         {"prompt": "x", "regex": "(?<=a)b"},
                                         {"prompt": "x", "json_schema": {"": -9223372036854775809}}])
    stored = "'json_schema' holds a number JSON cannot store (NaN or infinity)"
    assert found[:2] == [f"prompts[0]: {stored}", f"prompts[1]: {stored}"]
    assert found[2].startswith("prompts[2]: The regex cannot constrain decoding: ")
    assert found[3].startswith("prompts[3]: The JSON schema cannot constrain decoding: ")  # the fuzzer's: a 500
