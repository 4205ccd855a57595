"""A general check before the special ones: the same fact, derived a second way.

Every special rule of evidence names one way a computation misses what was
asked (``wc -l`` for distinct values, a line count for a count of files, a
file's length for a count of its matches). A check that needs no such list:
an answer that is a number, a path, a name or names, or a yes or no, and
rests on one computation, is asked for again, blind to the first answer, with
the first derivation's command blocked, and passes only when the two agree (a
yes or no rests on every call that read)::

    first = first_derivation(question, result, request)
    # Derivation(kind="number", value="240", command="wc -l web.log",
    #            programs=("shell:wc",))
    second = execute(second_subtask(subtask, first, request), (first.target,))
    agreement(first, second.result)
    # CriterionVerdict(verdict="fail", rule="re-derived", evidence="two
    #   derivations disagree: `wc -l web.log` gave 240; `cut -d' ' -f1 web.log
    #   | sort -u | wc -l` gave 17")

Two values that differ fail the claim as a logical failure, with both results.
A second derivation that stopped before it answered is judged by the number
its last computing command printed, when that command computes what is asked.
A second derivation that yields no value of the kind (the executor failed, or
stated one no tool showed or the rules of evidence refuse), or got the same
value by the same programs, confirms nothing and refutes nothing (another
value, by any means, still disagrees): the verdict passes, named
``re-derivation-unconfirmed``, so a small model's failed second try does not
turn a right first answer into an abandon (measured: with a 1.5B model it did,
on "how many lines does FILE have?": the correction sent the executor from
``wc -l`` to a wrong count). A yes or no, which no tool prints (the
executor read the data and said which), is not confirmed by an unconfirmed
second derivation: it fails as under ``strict`` (measured with a 1.5B
executor: "requests>=2.31" read as an exact pin, and the second try answered
a number). Nor are names the executor picked out of an output that printed
others too (``Derivation.read_off``: no call printed only them), which are its
reading as much as a yes or no is. ``strict`` fails every kind instead, as
an environmental failure (nothing refuted the approach, so GGS blocks none of
its tools), with a correction asking for a command that computes what is
asked.
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from roles.claims.answer_values import body, claimed_value, successful
from roles.claims.command import parse_command
from roles.claims.command_queries import command_counts
from roles.claims.count_rules import COUNTED_BY
from roles.claims.evidence import (
    ToolCall,
    first_target,
)
from roles.claims.evidence_rules import NOT_AN_ENTRY, invented_facts
from roles.claims.facts import appears, output_text
from roles.claims.question import Question
from roles.contracts import CriterionVerdict, ExecutionResult, SubTask
from roles.cookbook import lines_for
from roles.toolclass import describe, tool_classes

__all__ = [
    "CRITERION",
    "REDERIVE_TURNS",
    "Derivation",
    "agreement",
    "computed_kinds",
    "first_derivation",
    "rederive",
    "rederives",
    "second_subtask",
]

CRITERION = "a second derivation by another means gives the same answer"
# Model turns of the second derivation: one question, asked again (a small
# model spends its first turn on the blocked command).
REDERIVE_TURNS = 6
UNCONFIRMED = "re-derivation-unconfirmed"
# What could not be confirmed was not refuted: the failure is the check's
# circumstance, not the approach's, so GGS changes targets, not tools (a
# logical failure blocked grep and wc after they had printed the right count).
ENVIRONMENT = "environmental"
KINDS = {
    "count": "number", "total": "number", "number": "number",
    "path": "path", "name": "name", "names": "names", "yes_no": "yes_no",
}  # fmt: skip
WHAT = {
    "number": "number", "path": "path", "name": "name", "names": "names",
    "yes_no": "yes or no",
}  # fmt: skip
QUOTE = 160
# What counts things, of any kind (``command_counts``'s kinds); a size does not.
COUNTS = ("lines", "matches", "distinct", "files", "words", "chars", "sum")


class _Executes(Protocol):
    result: ExecutionResult


Execute = Callable[[SubTask, Sequence[str]], _Executes]


@dataclass(frozen=True)
class Derivation:
    """One derivation of the answer: its value, the call behind it, its programs."""

    kind: str  # number | path | name | names | yes_no
    value: str
    command: str  # the call behind it, as a reader says it
    programs: tuple[str, ...]  # its tool classes (roles.toolclass)
    target: str = ""  # its exact target (the command line), blocked the next time
    # Names the executor picked out of an output that printed others too:
    # its reading, like a yes or no, not a value a tool printed.
    read_off: bool = False


def first_derivation(
    question: Question, result: ExecutionResult, request: str = ""
) -> Derivation | None:
    """Return the derivation a claim rests on, when it is one value of the kind
    the question asks and one computation (one program or tool) shows it;
    else None (nothing to re-derive, or it is already shown two ways)."""
    kind = KINDS.get(question.answer)
    # An uncertain executor that states a value still claims it.
    if kind is None or result.status not in ("completed", "uncertain"):
        return None
    calls = successful(result.tool_calls)
    asked = f"{request}\n{question.subject}"
    value = claimed_value(kind, output_text(result.output), calls, asked)
    if value is None:
        return None
    # A yes or no is no word a tool prints: it rests on every call that read.
    showing = (
        calls if kind == "yes_no" else [c for c in calls if _shows(kind, value, c)]
    )
    means = {tuple(tool_classes(c.tool, c.args)) for c in showing}
    means.discard(())
    if kind == "yes_no" and means:
        means = {tuple(dict.fromkeys(p for m in means for p in m))}
    if len(means) != 1:
        return None
    (programs,) = means
    last = showing[-1]
    read_off = kind in ("name", "names") and not any(
        _prints_only(value, c) for c in showing
    )
    return Derivation(
        kind, value, _said(last), programs, first_target(last.args), read_off
    )


def second_subtask(
    subtask: SubTask,
    first: Derivation,
    request: str,
    answer: str = "",
    count_of: str = "",
) -> SubTask:
    """Return the subtask that asks for the same fact again, blind to the first
    answer and to its command: only the programs it used are named, to be
    avoided. A 1.5B executor told the first command ran it again, word for
    word, three times, and confirmed nothing. (The subtask's words are read
    for what a subtask asks, so they name no kind of count.)"""
    what = WHAT[first.kind]
    used = " and ".join(describe(p) for p in first.programs) or "one program"
    context = (
        f"Work this out on your own from the files. An earlier derivation used "
        f"{used}: get the answer by other means (other programs, or another "
        f"tool). Answer with the {what} alone."
    )
    # The commands for such an answer go with the criteria, which no reading
    # of what a subtask asks looks at (its words would name a kind of count).
    ways = lines_for(answer, count_of, frozenset(first.programs))
    criteria = (
        [f"the {what} is printed by one of these: {'; or '.join(ways)}"] if ways else []
    )
    return SubTask(
        # The same subtask: its card shows the second derivation as an attempt.
        subtask_id=subtask.subtask_id,
        parent_task_id=subtask.parent_task_id,
        intent=request.strip() or subtask.intent,
        success_criteria=criteria,
        context=context,
    )


def agreement(
    first: Derivation,
    second: ExecutionResult,
    asked: str = "",
    refused: str = "",
    strict: bool = False,
    computes: tuple[str, ...] = (),
) -> CriterionVerdict:
    """Return the verdict of the two derivations: they agree (pass), they
    disagree (fail), or the second confirms nothing: it showed no value of the
    kind, got it by the same programs, or the rules of evidence ``refused``
    it. That passes, named ``re-derivation-unconfirmed``, unless ``strict``
    or the answer is a yes or no, which rests on the executor's reading alone.

    A second derivation that stopped before it stated a number still
    computed one when its last computing command printed exactly one: that
    number is its result (``computes`` names what such a command computes,
    ``command_counts``'s kinds; any, when empty)."""
    verdict = _compared(first, second, asked, refused, computes)
    # A yes or no is no value a tool printed: it is the executor's reading of
    # what it read, and so are names picked out of an output that printed
    # others too. Unconfirmed, nothing but that reading stands behind them.
    read = first.kind == "yes_no" or first.read_off
    if verdict.rule == UNCONFIRMED and not strict and not read:
        return verdict.model_copy(update={"verdict": "pass", "failure_class": None})
    return verdict


def _compared(
    first: Derivation,
    second: ExecutionResult,
    asked: str,
    refused: str,
    computes: tuple[str, ...] = (),
) -> CriterionVerdict:
    if refused:
        return _failed(
            f"`{first.command}` gave {first.value}, and a second derivation by "
            f"another means confirmed nothing (its answer is no evidence: "
            f"{refused[:QUOTE]}). Show the answer by a command that computes "
            "exactly what the request asks, and check that it does",
            UNCONFIRMED,
            ENVIRONMENT,
        )
    calls = successful(second.tool_calls)
    value = (
        claimed_value(first.kind, output_text(second.output), calls, asked)
        # An uncertain executor that states a value still states it.
        if second.status in ("completed", "uncertain")
        else None
    )
    showing = [c for c in calls if value is not None and _shows(first.kind, value, c)]
    if first.kind == "yes_no":
        showing = calls
    computed = _computed(first, calls, asked, computes) if value is None else None
    if computed is not None:
        value, showing = computed
    programs = {p for c in showing for p in tool_classes(c.tool, c.args)}
    same_means = programs == set(first.programs)
    # The same means agreeing is no second derivation; disagreeing, it still
    # shows that one of the two is wrong.
    if value is None or (same_means and _same(first.kind, first.value, value)):
        said = output_text(second.output).strip()[:QUOTE] or "nothing"
        how = "by the same programs" if value is not None else "no value a tool showed"
        return _failed(
            f"`{first.command}` gave {first.value}, and a second derivation by "
            f"another means confirmed nothing ({how}: {said}). Show the answer by "
            "a command that computes exactly what the request asks, and check "
            "that it does",
            UNCONFIRMED,
            ENVIRONMENT,
        )
    command = _said(showing[-1]) if showing else "another derivation"
    if _same(first.kind, first.value, value):
        return _verdict(
            True, f"`{first.command}` and `{command}` both give {value}", "re-derived"
        )
    return _failed(
        f"two derivations disagree: `{first.command}` gave {first.value}; "
        f"`{command}` gave {value}. Work out which of them computes exactly what "
        "the request asks (the condition it states, the files it names), then "
        "answer with that one's result",
        "re-derived",
    )


def computed_kinds(question: Question) -> tuple[str, ...]:
    """Return what a command that computes the answer to ``question`` computes
    (``command_counts``'s kinds): a count of its kind (any count when its kind
    is not known), a sum or an average for a total; any number else."""
    if question.answer == "count":
        return COUNTED_BY.get(question.count_of, COUNTS)
    if question.answer == "total":
        return ("sum", "average")
    return ()


def _computed(
    first: Derivation, calls: Sequence[ToolCall], asked: str, computes: tuple[str, ...]
) -> tuple[str, list[ToolCall]] | None:
    """Return the number the last command of a second derivation that
    computes one of ``computes`` printed, alone, with that call, when its
    programs are not the first's; else None."""
    if first.kind != "number":
        return None
    for call in reversed(calls):
        command = call.args.get("command") if call.tool == "shell" else None
        if not isinstance(command, str):
            continue
        kind = command_counts(parse_command(command))
        if not kind or (computes and kind not in computes):
            continue
        if set(tool_classes(call.tool, call.args)) == set(first.programs):
            return None
        value = claimed_value("number", body(call), [call], asked)
        return (value, [call]) if value is not None else None
    return None


def rederives(model: object) -> bool:
    """Return True when ``model``'s settings ask for second derivations (a
    model without settings, the offline one, derives nothing)."""
    settings = getattr(model, "settings", None)
    return getattr(settings, "rederive", "off") in ("on", "strict")


def rederive(
    subtask: SubTask,
    result: ExecutionResult,
    question: Question,
    request: str,
    execute: Execute,
    *,
    strict: bool = False,
) -> CriterionVerdict | None:
    """Return the verdict of deriving the claimed answer again, or None when the
    claim is not one value resting on one computation. ``execute(subtask,
    blocked)`` runs the second derivation with ``blocked`` targets."""
    first = first_derivation(question, result, request)
    if first is None:
        return None
    again = second_subtask(subtask, first, request, question.answer, question.count_of)
    second = execute(again, (first.target,)).result
    # The second answer is held to the rules of evidence as the first was.
    refused = invented_facts(again, second, request, question)
    asked = f"{request}\n{question.subject}"
    computes = computed_kinds(question)
    return agreement(first, second, asked, refused, strict=strict, computes=computes)


def _shows(kind: str, value: str, call: ToolCall) -> bool:
    if kind == "names":
        return any(appears(v, body(call)) for v in value.split(", "))
    if kind == "path":
        return appears(posixpath.basename(value.rstrip("/")), body(call))
    return appears(value, body(call))


def _prints_only(value: str, call: ToolCall) -> bool:
    """True when every line ``call`` printed holds one of the names of
    ``value``: it printed the answer and nothing else (a listing's header or
    total aside)."""
    names = value.split(", ")
    lines = [t.strip() for t in body(call).splitlines()]
    lines = [t for t in lines if t and not NOT_AN_ENTRY.fullmatch(t)]
    return bool(lines) and all(any(appears(n, t.lower()) for n in names) for t in lines)


def _same(kind: str, first: str, second: str) -> bool:
    if kind == "names":
        return set(first.split(", ")) == set(second.split(", "))
    if kind == "number":
        a, b = float(first), float(second)
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    if kind == "path":
        return posixpath.basename(first.rstrip("/")) == posixpath.basename(
            second.rstrip("/")
        )
    return first.lower() == second.lower()


def _said(call: ToolCall) -> str:
    command = call.args.get("command") if call.tool == "shell" else None
    if isinstance(command, str):
        text = " ".join(command.split())
    else:
        text = f"{call.tool} {call.target}".strip()
    return text if len(text) <= QUOTE else text[:QUOTE] + "…"


def _failed(evidence: str, rule: str, cls: str = "logical") -> CriterionVerdict:
    verdict = _verdict(False, evidence, rule)
    verdict.failure_class = cls  # type: ignore[assignment]
    return verdict


def _verdict(passed: bool, evidence: str, rule: str) -> CriterionVerdict:
    return CriterionVerdict(
        criterion=CRITERION,
        verdict="pass" if passed else "fail",
        evidence=evidence,
        rule=rule,
    )
