"""reply_schema: the JSON schema of a reply model for a json_schema response format.

``jsonschema`` is not installed, so ``conforms`` checks the subset of JSON
Schema these schemas use (type, properties, required, items, anyOf, enum,
minLength).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, Field

from roles.agent_validator import ValidatorReply
from roles.llm.schemas import MAX_ITEMS, reply_schema
from roles.meta_validator import MetaReply
from roles.perceiver import PerceiverReply
from roles.planning.replies import MAX_CRITERIA, MAX_SUBTASKS, PlanReply

TYPES = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "array": list,
    "object": dict,
    "null": type(None),
}

PLAN = {
    "task_criteria": ["the answer is one integer"],
    "subtasks": [
        {
            "intent": "count the Python files",
            "success_criteria": [
                "output is one integer",
                {"criterion": "exit 0", "check": {"type": "exit_code", "value": 0}},
            ],
            "context": "use glob **/*.py",
            "sequence": 1,
        }
    ],
}
VALIDATION = {
    "verdict": "matched",
    "criteria_results": [
        {"criterion": "output is one integer", "met": True, "evidence": "42"}
    ],
    "what_was_wrong": "",
    "what_to_do": "",
}
META = {
    "verdict": "accept",
    "summary": "There are 42 Python files.",
    "merged_output": {"count": 42},
    "criteria_results": [
        {"criterion": "the answer is one integer", "met": True, "evidence": "42"}
    ],
    "gap_summary": "",
}


def conforms(value: Any, schema: dict[str, Any]) -> bool:
    """Return True when ``value`` satisfies ``schema`` (the subset used here)."""
    if "anyOf" in schema:
        return any(conforms(value, option) for option in schema["anyOf"])
    if "enum" in schema and value not in schema["enum"]:
        return False
    kind = schema.get("type")
    if kind is None:
        return True
    if not isinstance(value, TYPES[kind]) or (
        isinstance(value, bool) and kind in ("integer", "number")
    ):
        return False
    if kind == "string":
        return len(value) >= schema.get("minLength", 0)
    if kind == "array":
        return all(conforms(item, schema.get("items", {})) for item in value)
    if kind == "object":
        props = schema.get("properties", {})
        if any(name not in value for name in schema.get("required", [])):
            return False
        if schema.get("additionalProperties") is False and set(value) - set(props):
            return False
        return all(conforms(v, props[k]) for k, v in value.items() if k in props)
    return True


def keys_anywhere(node: Any) -> set[str]:
    if isinstance(node, list):
        return set().union(*(keys_anywhere(item) for item in node))
    if not isinstance(node, dict):
        return set()
    return set(node).union(*(keys_anywhere(v) for v in node.values()))


@pytest.mark.parametrize(
    ("model_cls", "reply"),
    [(PlanReply, PLAN), (ValidatorReply, VALIDATION), (MetaReply, META)],
    ids=["planner", "validator", "meta-validator"],
)
def test_reply_schema_is_self_contained_and_accepts_a_well_formed_reply(
    model_cls, reply
):
    schema = reply_schema(model_cls)

    assert schema["type"] == "object"
    assert not {"$ref", "$defs", "title", "description"} & keys_anywhere(schema)
    assert json.loads(json.dumps(schema)) == schema
    assert conforms(reply, schema)
    assert model_cls.model_validate(reply).model_dump(mode="json", exclude_unset=True)


def test_plan_schema_asks_for_the_canonical_criterion_and_hides_parser_notes():
    schema = reply_schema(PlanReply)
    bare_check = {"type": "output_matches", "pattern": "x"}

    assert schema["required"] == ["subtasks"]
    assert "notes" not in schema["properties"]
    assert not conforms({**PLAN, "task_criteria": [bare_check]}, schema)
    assert not conforms({"task_criteria": []}, schema)


def test_meta_schema_refuses_an_unknown_verdict():
    assert not conforms({**META, "verdict": "maybe"}, reply_schema(MetaReply))


def test_a_property_named_title_is_kept_while_titles_are_dropped():
    class Report(BaseModel):
        title: str

    schema = reply_schema(Report)

    assert schema["properties"] == {"title": {"type": "string"}}
    assert schema["required"] == ["title"]


def test_a_recursive_model_is_refused():
    class Node(BaseModel):
        children: list[Node] = []

    Node.model_rebuild()

    with pytest.raises(ValueError, match="recursive"):
        reply_schema(Node)


def _arrays(node):
    if isinstance(node, dict):
        if node.get("type") == "array":
            yield node
        for value in node.values():
            yield from _arrays(value)
    elif isinstance(node, list):
        for value in node:
            yield from _arrays(value)


def test_every_array_is_bounded_so_a_repeating_model_must_close_it():
    arrays = list(_arrays(reply_schema(PerceiverReply)))
    assert arrays and all(a["maxItems"] for a in arrays)

    class Free(BaseModel):
        many: list[str]

    assert reply_schema(Free)["properties"]["many"]["maxItems"] == MAX_ITEMS
    plan = reply_schema(PlanReply)["properties"]
    assert plan["subtasks"]["maxItems"] == MAX_SUBTASKS
    assert plan["task_criteria"]["maxItems"] == MAX_CRITERIA
    step = plan["subtasks"]["items"]["properties"]
    assert step["success_criteria"]["maxItems"] == MAX_CRITERIA
    # The bound is the decoder's, not a validation: a longer list is read whole.
    many = [f"criterion {n}" for n in range(MAX_CRITERIA + 2)]
    reply = PlanReply.model_validate(
        {"subtasks": [{"intent": "a", "success_criteria": many}]}
    )
    assert len(reply.subtasks[0].success_criteria) == MAX_CRITERIA + 2

    class Bounded(BaseModel):
        few: list[str] = Field(max_length=2)

    assert reply_schema(Bounded)["properties"]["few"]["maxItems"] == 2
