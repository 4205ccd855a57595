"""R4a's verdict on each criterion of one attempt, before aggregation.

The evidence rule comes first (a verifiable criterion with no successful tool
call fails), then machine checks in code, then the model for the rest, each
criterion on its own; the offline model passes them on the executor's status.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from roles.agent_validator_prompts import (
    CriterionResult,
    ValidatorReply,
    build_messages,
)
from roles.aggregate import (
    asks_for_aggregate,
    asks_for_count,
    asks_for_file_count,
    asks_for_sum,
    column_total_command,
    computed,
    computing_error,
    counted_word,
    counts_lines_of_files,
    counts_other_lines,
    empty_sum,
    is_number,
    line_count_command,
    only_counted,
    shows_nothing,
    states_a_result,
    word_count_command,
)
from roles.checks import (
    FACT,
    appears,
    evaluate_check,
    evidence_text,
    output_text,
    unshown_facts,
)
from roles.contracts import Criterion, CriterionVerdict, ExecutionResult
from roles.criteria import DONE
from roles.csvsplit import split_quoted
from roles.evidence import only_echoes, parse_evidence
from roles.fieldcount import field_value, miscounted
from roles.llm import LLMError, LLMOutputError, Usage
from roles.offline import OfflineModel
from roles.ranscript import unrun_script
from roles.requested import deletions_shown
from roles.tools import head_tail

NO_EVIDENCE = "the executor's claimed output is not evidence"
COMPUTE = "run a command that prints it (wc -l, grep -c, awk)"
# A request that asks for echo or printf makes their output the work itself.
ECHO_ASKED = re.compile(r"\b(echo|printf)\b", re.IGNORECASE)
QUOTE = 300
# A planner's enumeration ("Step 1: read the file", "2) count") states no fact:
# its numbers do not make a claimed count of 1 or 2 known.
LABEL = re.compile(
    r"\b(?:step|part|stage|phase)\s+\d+\b|^\s*\(?\d+[.)](?=\s)", re.I | re.M
)


@dataclass
class Judged:
    """The verdicts on one attempt's criteria, before they are aggregated."""

    verdicts: list[CriterionVerdict]
    usage: Usage | None = None
    reply: ValidatorReply | None = None
    stop: str = ""  # why no retry is possible, when that is known before judging


def unsupported(result: ExecutionResult) -> str:
    """Return why a result has no evidence, or "" when a tool call succeeded.

    A refused, failed or denied call (``ERROR: …``, ``[LAW1] …``) is no
    evidence of anything; a shell command that exited non-zero is (it ran).
    """
    calls = [c for c in map(parse_evidence, result.tool_calls) if c is not None]
    if not calls:
        return "no tool was called"
    if all(c.output.lstrip().startswith(("ERROR:", "[LAW1]")) for c in calls):
        return "no tool call succeeded"
    return ""


def judge(
    subtask,
    result,
    criteria,
    model,
    workspace,
    today,
    inherited: Sequence[str] = (),
    request: str = "",
) -> Judged:
    """Return the verdict on each criterion: evidence rule, checks, model.

    ``inherited`` (the tool calls of the matched earlier groups whose outputs the
    executor was given) is evidence for this subtask's claims, judged as if its
    own calls came after them. ``request`` is the user's: when it asks for a
    total, a claimed number must be one a tool computed (``roles.aggregate``).
    """
    # The offline executor's output is its tool's output, never a claim.
    offline = isinstance(model, OfflineModel)
    asked = f"{request}\n{subtask.intent}\n{subtask.context}"
    own = result.tool_calls
    if not (offline or ECHO_ASKED.search(asked)):
        own = [call for call in own if not only_echoes(call)]
    echoed = len(own) < len(result.tool_calls)
    result = result.model_copy(update={"tool_calls": [*inherited, *own]})
    known: dict[int, CriterionVerdict] = {}
    missing = unsupported(result) if result.status != "failed" else ""
    if missing == "no tool was called" and echoed:
        missing = "only echo or printf of the claim itself was run"
    invented = ""
    if not (missing or offline):
        invented = invented_facts(subtask, result, request)
    for index, criterion in enumerate(criteria):
        if missing and criterion.mode == "verifiable":
            verdict = _verdict(criterion, False, f"{missing}: {NO_EVIDENCE}")
            if missing != "no tool call succeeded":
                verdict.failure_class = "environmental"
            known[index] = verdict
        elif invented and criterion.mode == "verifiable":
            known[index] = _verdict(criterion, False, invented)
    for index, criterion in enumerate(criteria):
        if index in known:
            continue
        if criterion.check is not None:
            check = evaluate_check(
                criterion.check, result, workspace=workspace, request=request
            )
            known[index] = _verdict(criterion, check.passed, check.evidence)
        elif criterion.criterion.startswith(DONE):
            deleted = deletions_shown(subtask.intent, request, result.tool_calls)
            if deleted:
                known[index] = _verdict(criterion, True, deleted)
    rest = [i for i in range(len(criteria)) if i not in known]
    if result.status == "failed":
        said = f"the executor reported failure: {_quote(output_text(result.output))}"
        known.update({i: _verdict(criteria[i], False, said) for i in rest})
        return Judged(_ordered(known), stop=said)
    if rest and isinstance(model, OfflineModel):
        model.pause()
        known.update({i: _by_status(criteria[i], result.status) for i in rest})
    elif rest:
        return _ask_model(subtask, result, criteria, rest, known, model, today)
    return Judged(_ordered(known))


def invented_facts(subtask, result: ExecutionResult, request: str = "") -> str:
    """Return why the claim is not evidence when it states numbers or paths that
    no tool call showed (or, for a total, no tool computed), else ""."""
    if result.status == "failed":
        return ""
    unrun = unrun_script(subtask.intent, result.tool_calls)
    if unrun:
        return f"{unrun}; {NO_EVIDENCE}"
    known = LABEL.sub(" ", f"{subtask.intent}\n{subtask.context}\n{request}")
    facts = unshown_facts(result, known)
    aggregate = asks_for_aggregate(request, subtask.intent, subtask.context)
    if facts:
        named = ", ".join(repr(f) for f in facts[:5])
        shown = "which no tool output shows"
        if aggregate and any(is_number(f) for f in facts):
            shown += f"; {_compute(request, subtask, result)}"
        return f"the claimed output states {named}, {shown}; {NO_EVIDENCE}"
    claim = output_text(result.output)
    if not (aggregate and states_a_result(claim)):
        return ""
    summed = asks_for_sum(request, subtask.intent, subtask.context)
    if empty_sum(claim) and summed:
        return (
            "the claimed sum is 0: a sum tool prints 0 for a field that holds text "
            "or does not exist; print the header (head -1) to find the column's "
            "number, then sum that column"
        )
    calls = result.tool_calls
    numbers = [f for f in dict.fromkeys(FACT.findall(claim)) if is_number(f)]
    if summed and numbers and all(only_counted(f, result.tool_calls) for f in numbers):
        return (
            f"the claimed {numbers[0]} was printed by a command that counts lines "
            "or matches (wc, grep -c), and a count is not a sum or an average: "
            "print the header (head -1) to find the column's number, then sum "
            "that column (awk -F, 'NR>1{s+=$N} END{print s}' FILE)"
        )
    word = counted_word(request)
    wrong = [(f, c) for f in numbers if (c := counts_other_lines(f, word, calls))]
    if (
        word
        and wrong
        and not any(
            computed(f, calls) and not counts_other_lines(f, word, calls)
            for f in numbers
        )
    ):
        value, command = wrong[0]
        return (
            f"the claimed {value} was printed by `{command}`, which does not look "
            f"for {word!r}: it counts every line, not the lines that hold {word!r}; "
            f"count only those (grep -c {shlex.quote(word)} FILE); {NO_EVIDENCE}"
        )
    miscomputed = miscounted(request, numbers, calls) or split_quoted(
        request, numbers, calls
    )
    if miscomputed:
        return miscomputed
    files = asks_for_file_count(request, subtask.intent)
    lengths = [(f, c) for f in numbers if (c := counts_lines_of_files(f, calls))]
    if files and numbers and len(lengths) == len(numbers):
        value, command = lengths[0]
        return (
            f"the claimed {value} was printed by `{command}`, which counts the "
            "lines inside the files it names, not the files: list the files and "
            "count the list (find DIR -type f -name '*.py' | wc -l); "
            f"{NO_EVIDENCE}"
        )
    read = [
        f
        for f in dict.fromkeys(FACT.findall(claim))
        if is_number(f) and not appears(f, known) and not computed(f, result.tool_calls)
    ]
    errors = [computing_error(f, result.tool_calls) for f in read]
    if read and all(errors):
        return (
            f"the command that printed {read[0]!r} also reported an error "
            f"({_quote(errors[0])}), so it counted what is not there; fix the "
            f"command (write the path itself) and run it again; {NO_EVIDENCE}"
        )
    counted = asks_for_count(request, subtask.intent, subtask.context)
    if empty_sum(claim) and counted and not shows_nothing(result.tool_calls):
        return (
            "the claimed count is 0, but no tool listing shows that nothing is "
            "there: a count of 0 often comes from looking in the wrong place (ls "
            "without the files in subdirectories, a pattern that matches nothing); "
            "list what is counted (find DIR -name '*.py', grep -rn WORD DIR), "
            f"then count that; {NO_EVIDENCE}"
        )
    if not read:
        return ""
    named = ", ".join(repr(f) for f in read[:5])
    return (
        f"the claimed output states {named} as a total or count, but no tool computed "
        "it: a value read among others from a file or listing is data, not the "
        f"answer; {_compute(request, subtask, result)}; {NO_EVIDENCE}"
    )


def _compute(request: str, subtask, result: ExecutionResult) -> str:
    """Return how to compute the stated value: the command itself when the
    request (or the subtask's intent) and what the attempt read make it plain."""
    calls = result.tool_calls
    # A count by a field's value ("have the level ERROR") is not one by a word:
    # ``roles.fieldcount`` names its command once a count is claimed.
    by_word = not field_value(request)[1]
    command = next(
        (
            found
            for text in (request, subtask.intent)
            for found in (
                line_count_command(text, calls),
                column_total_command(text, calls),
                word_count_command(text, calls) if by_word else "",
            )
            if found
        ),
        "",
    )
    if command:
        return (
            f"call the shell tool with the command {command} and answer with its number"
        )
    return COMPUTE


def _ask_model(subtask, result, criteria, rest, known, model, today) -> Judged:
    checked = [(criteria[i].criterion, known[i]) for i in sorted(known)]
    asked = [criteria[i].criterion for i in rest]
    messages = build_messages(subtask, result, asked, checked, today)
    try:
        reply, usage = model.complete_json(messages, ValidatorReply)
    except LLMError as err:
        reason = f"scoring error: {err}"
        usage = err.usage if isinstance(err, LLMOutputError) else None
        for index in rest:
            known[index] = _verdict(criteria[index], False, reason)
            known[index].failure_class = "environmental"
        return Judged(_ordered(known), usage, stop=reason)
    shown, claim = evidence_text(result), output_text(result.output)
    for index, answer in zip(rest, _match_answers(asked, reply), strict=True):
        known[index] = _from_answer(criteria[index], answer, shown, claim)
    return Judged(_ordered(known), usage, reply)


def _ordered(verdicts: dict[int, CriterionVerdict]) -> list[CriterionVerdict]:
    return [verdicts[i] for i in sorted(verdicts)]


def _match_answers(
    texts: list[str], reply: ValidatorReply
) -> list[CriterionResult | None]:
    """Pair each criterion with the model's result: by text, else by position."""
    results = reply.criteria_results
    by_text = {_norm(r.criterion): r for r in results if r.criterion}
    paired = []
    for position, text in enumerate(texts):
        answer = by_text.get(_norm(text))
        if answer is None and len(results) == len(texts):
            answer = results[position]
        paired.append(answer)
    return paired


def _from_answer(
    criterion: Criterion,
    answer: CriterionResult | None,
    shown: str = "",
    claim: str = "",
) -> CriterionVerdict:
    if answer is None:
        return _verdict(criterion, False, "the validator gave no verdict for it")
    evidence = answer.evidence or (
        "met" if answer.met else "not met; no evidence given"
    )
    on_claim = quoted(evidence, claim) > quoted(evidence, shown)
    if answer.met and criterion.mode == "verifiable" and on_claim:
        # The model said "met" quoting the claim: only a tool result is evidence.
        verdict = _verdict(criterion, False, f"{UNQUOTED}: {_quote(evidence)}")
        verdict.failure_class = "logical"
        return verdict
    verdict = _verdict(criterion, answer.met, evidence)
    if not answer.met:
        verdict.failure_class = answer.failure_class or "logical"
    return verdict


UNQUOTED = (
    "the validator's evidence for 'met' quotes the executor's claim, not a tool output"
)
QUOTE_WINDOW = 20


def quoted(evidence: str, source: str) -> int:
    """Return how much of ``evidence`` quotes ``source`` (a tool output or the
    claim): the count of its ``QUOTE_WINDOW``-character windows found there.

    Whitespace is folded; a short quote counts once when it appears whole.
    """
    said, seen = " ".join(evidence.split()), " ".join(source.split())
    if not said or not seen:
        return 0
    if len(said) <= QUOTE_WINDOW:
        return int(said in seen)
    return sum(
        said[i : i + QUOTE_WINDOW] in seen
        for i in range(0, len(said) - QUOTE_WINDOW + 1, 4)
    )


def _by_status(criterion: Criterion, status: str) -> CriterionVerdict:
    passed = status == "completed"
    return _verdict(
        criterion,
        passed,
        f"no machine check: {'passes' if passed else 'fails'} because the executor "
        f"status is {status}",
    )


def _verdict(criterion: Criterion, passed: bool, evidence: str) -> CriterionVerdict:
    return CriterionVerdict(
        criterion=criterion.criterion,
        mode=criterion.mode,
        verdict="pass" if passed else "fail",
        failure_class=None if passed else "logical",
        evidence=evidence,
    )


def fail_all(criteria: list[Criterion], reason: str) -> Judged:
    """Return every criterion failed for ``reason``, with no retry possible."""
    verdicts = [_verdict(c, False, reason) for c in criteria]
    for verdict in verdicts:
        verdict.failure_class = "environmental"
    return Judged(verdicts, stop=reason)


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _quote(text: str) -> str:
    return head_tail(text.strip(), QUOTE)
