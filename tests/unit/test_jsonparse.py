"""The JSON recovery rules for model replies (roles.llm.jsonparse)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from roles.llm.jsonparse import (
    JSONExtractError,
    balanced_end,
    describe_error,
    extract_json,
    parse_as,
    split_think,
    strip_fences,
    strip_think,
)


class Verdict(BaseModel):
    verdict: str
    score: int


def test_plain_object_is_returned():
    assert extract_json('{"a": 1, "b": [true, null]}') == {"a": 1, "b": [True, None]}


def test_prose_before_and_after_the_object_is_ignored():
    text = 'Here is the plan you asked for:\n{"a": 1}\nLet me know if it helps!'
    assert extract_json(text) == {"a": 1}


def test_two_concatenated_objects_give_the_first():
    assert extract_json('{"a": 1}{"a": 2}') == {"a": 1}
    assert extract_json('{"a": 1}\n\n{"a": 2}') == {"a": 1}


def test_braces_inside_strings_do_not_end_the_object():
    text = '{"cmd": "awk \'{print $1}\' f", "note": "}{]["} trailing }'
    assert extract_json(text) == {"cmd": "awk '{print $1}' f", "note": "}{]["}


def test_escaped_quotes_inside_strings_are_handled():
    text = r'{"say": "he said \"{ok}\" twice", "path": "C:\\dir\\"} and more'
    assert extract_json(text) == {"say": 'he said "{ok}" twice', "path": "C:\\dir\\"}


def test_nested_objects_and_arrays_are_kept_whole():
    text = 'x {"a": {"b": [1, {"c": "]"}]}, "d": []} y'
    assert extract_json(text) == {"a": {"b": [1, {"c": "]"}]}, "d": []}


def test_code_fence_with_language_tag_is_unwrapped():
    assert extract_json('```json\n{"a": 1}\n```') == {"a": 1}


def test_fenced_block_wins_over_braces_in_surrounding_prose():
    text = 'Use {"draft": true} as a template.\n```json\n{"final": true}\n```'
    assert extract_json(text) == {"final": True}


def test_unterminated_fence_still_yields_its_json():
    assert extract_json('```\n{"a": 1}\n') == {"a": 1}


def test_closed_think_block_is_removed_even_if_it_holds_json():
    text = '<think>maybe {"a": 0}?</think>\n{"a": 1}'
    assert extract_json(text) == {"a": 1}


def test_several_think_blocks_are_removed_case_insensitively():
    text = '<think>one {"a": 0}</think>{"a": 1}<THINK>two</THINK>'
    assert strip_think(text) == '{"a": 1}'


def test_text_before_a_lone_closing_think_is_reasoning():
    text = 'The user wants {"a": 0} perhaps.</think>{"a": 1}'
    assert extract_json(text) == {"a": 1}


def test_unclosed_think_hides_everything_after_it_from_text():
    assert strip_think("Answer: 42 <think>but wait, maybe 41") == "Answer: 42"


def test_json_before_an_unclosed_think_wins_over_drafts_inside_it():
    text = '{"a": 1}<think>or {"a": 2}'
    assert extract_json(text) == {"a": 1}


def test_unclosed_think_at_the_start_falls_back_to_its_last_json_value():
    text = '<think>Draft: {"a": 0}. Better:\n{"a": 1}'
    assert split_think(text) == ("", 'Draft: {"a": 0}. Better:\n{"a": 1}')
    assert extract_json(text) == {"a": 1}


def test_unclosed_think_without_any_json_is_reported_as_missing_json():
    with pytest.raises(JSONExtractError, match="no JSON"):
        extract_json("<think>I need to consider the options")


def test_array_is_returned_when_the_reply_holds_no_object():
    assert extract_json("Items: [1, 2, 3].") == [1, 2, 3]


def test_object_is_preferred_over_an_earlier_array_in_prose():
    assert extract_json('See [1] for details: {"a": 1}') == {"a": 1}


def test_balanced_but_invalid_braces_in_prose_are_skipped():
    assert extract_json('As requested {as you said}: {"a": 1}') == {"a": 1}


def test_a_trailing_comma_is_mended():
    assert extract_json('{"a": [1, 2,], "b": 3,}') == {"a": [1, 2], "b": 3}


def test_cjk_text_with_fullwidth_quotes_is_kept():
    text = '结果如下：{"summary": "他说“好的”", "ok": true}'
    assert extract_json(text) == {"summary": "他说“好的”", "ok": True}


def test_ascii_quotes_inside_a_value_are_reported_as_invalid_json():
    with pytest.raises(JSONExtractError, match="invalid") as caught:
        extract_json('{"summary": "他说"好的""}')
    assert "character 0" in str(caught.value)


def test_cut_off_object_is_reported_as_never_closed():
    with pytest.raises(JSONExtractError, match="never closed"):
        extract_json('Sure: {"a": 1, "b": "unfinished')


def test_empty_reply_is_reported_as_empty():
    with pytest.raises(JSONExtractError, match="empty"):
        extract_json("<think>all reasoning</think>   ")


def test_prose_only_reply_is_reported_as_having_no_json():
    with pytest.raises(JSONExtractError, match="no JSON object"):
        extract_json("I could not complete the task.")


def test_parse_as_validates_with_the_given_model():
    verdict = parse_as('ok ```json\n{"verdict": "matched", "score": 3}\n```', Verdict)
    assert verdict == Verdict(verdict="matched", score=3)


def test_parse_as_raises_validation_error_for_a_wrong_shape():
    with pytest.raises(ValidationError):
        parse_as('{"verdict": "matched", "score": "high"}', Verdict)


def test_describe_error_lists_fields_and_omits_input_values():
    with pytest.raises(ValidationError) as caught:
        parse_as('{"score": "SECRET-INPUT"}', Verdict)
    described = describe_error(caught.value)
    assert "2 validation error(s)" in described
    assert "- verdict: Field required" in described
    assert "- score:" in described
    assert "SECRET-INPUT" not in described


def test_describe_error_passes_extract_errors_through():
    assert describe_error(JSONExtractError("no JSON here")) == "no JSON here"


def test_balanced_end_skips_brackets_inside_strings():
    text = '{"a": "}"} tail'
    assert balanced_end(text, 0) == len('{"a": "}"}')


def test_balanced_end_rejects_mismatched_and_unclosed_brackets():
    assert balanced_end('{"a": [1}', 0) is None
    assert balanced_end('{"a": 1', 0) is None


def test_strip_fences_returns_the_first_fence_body_or_the_text():
    assert strip_fences("before\n```python\nprint(1)\n```\nafter") == "print(1)"
    assert strip_fences("  no fence  ") == "no fence"
