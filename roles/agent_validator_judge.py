"""R4a's verdict on each criterion of one attempt, before aggregation.

The evidence rule comes first (a verifiable criterion with no successful tool
call fails), then machine checks in code, then the model for the rest, each
criterion on its own; the offline model passes them on the executor's status.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from roles.agent_validator_prompts import (
    CriterionResult,
    ValidatorReply,
    build_messages,
)
from roles.claims.answer_rules import answer_form, edit_shown
from roles.claims.checks import evaluate_check
from roles.claims.deletions import deletions_shown
from roles.claims.evidence import only_echoes, parse_evidence
from roles.claims.evidence_rules import NO_EVIDENCE, evidence_finding
from roles.claims.facts import FACT, appears, evidence_text, output_text
from roles.claims.question import Question, question_for
from roles.claims.script_runs import script_shown
from roles.contracts import Criterion, CriterionVerdict, ExecutionResult
from roles.criteria import DONE, FORM_CHECK
from roles.llm.client import LLMError, LLMOutputError, Usage
from roles.llm.offline import OfflineModel
from roles.tools import head_tail

# A request that asks for echo or printf makes their output the work itself.
ECHO_ASKED = re.compile(r"\b(echo|printf)\b", re.IGNORECASE)
QUOTE = 300


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
    question: Question | None = None,
) -> Judged:
    """Return the verdict on each criterion: evidence rule, checks, model.

    ``inherited`` (the tool calls of the matched earlier groups whose outputs the
    executor was given) is evidence for this subtask's claims, judged as if its
    own calls came after them. ``request`` is the user's: when it asks for a
    total, a claimed number must be one a tool computed (``roles.claims.computed``).
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
    finding = None
    if not (missing or offline):
        finding = evidence_finding(subtask, result, request, question)
    for index, criterion in enumerate(criteria):
        if missing and criterion.mode == "verifiable":
            rule = "echo-only" if echoed else "no-evidence"
            verdict = _verdict(criterion, False, f"{missing}: {NO_EVIDENCE}", rule)
            if missing != "no tool call succeeded":
                verdict.failure_class = "environmental"
            known[index] = verdict
        elif finding and criterion.mode == "verifiable":
            known[index] = _verdict(criterion, False, finding.reason, finding.rule)
    for index, criterion in enumerate(criteria):
        if index in known:
            continue
        if (criterion.check or {}).get("type") == FORM_CHECK:
            asked = question_for(question, request)
            rule, reason = answer_form(asked, request, result)
            said = (
                reason or f"the answer is in the form the request asks ({asked.answer})"
            )
            known[index] = _verdict(criterion, not reason, said, rule or FORM_CHECK)
        elif criterion.check is not None:
            check = evaluate_check(
                criterion.check, result, workspace=workspace, request=request
            )
            rule = f"check:{criterion.check.get('type', '')}"
            known[index] = _verdict(criterion, check.passed, check.evidence, rule)
        elif criterion.criterion.startswith(DONE):
            calls = result.tool_calls
            shown = (
                deletions_shown(subtask.intent, request, calls)
                or script_shown(subtask.intent, request, calls)
                or edit_shown(
                    question_for(question, request), subtask.intent, request, calls
                )
            )
            if shown:
                known[index] = _verdict(criterion, True, shown, "effect-shown")
    rest = [i for i in range(len(criteria)) if i not in known]
    if result.status == "failed":
        said = f"the executor reported failure: {_quote(output_text(result.output))}"
        known.update(
            {i: _verdict(criteria[i], False, said, "executor-failed") for i in rest}
        )
        return Judged(_ordered(known), stop=said)
    if rest and isinstance(model, OfflineModel):
        model.pause()
        known.update({i: _by_status(criteria[i], result.status) for i in rest})
    elif rest:
        return _ask_model(subtask, result, criteria, rest, known, model, today)
    return Judged(_ordered(known))


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
            known[index] = _verdict(criteria[index], False, reason, "scoring-error")
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
        return _verdict(
            criterion, False, "the validator gave no verdict for it", "model"
        )
    evidence = answer.evidence or (
        "met" if answer.met else "not met; no evidence given"
    )
    on_claim = quoted(evidence, claim) > quoted(evidence, shown)
    if answer.met and criterion.mode == "verifiable" and on_claim:
        # The model said "met" quoting the claim: only a tool result is evidence,
        # unless the quote states a number and a tool output shows every fact.
        if _facts_shown(evidence, shown):
            return _verdict(criterion, True, evidence, "model")
        said = f"{UNQUOTED}: {_quote(evidence)}"
        verdict = _verdict(criterion, False, said, "model-quoted-claim")
        verdict.failure_class = "logical"
        return verdict
    verdict = _verdict(criterion, answer.met, evidence, "model")
    if not answer.met:
        verdict.failure_class = answer.failure_class or "logical"
    return verdict


_EXIT_CODE = re.compile(r"\[exit code -?\d+\]")


def _facts_shown(quote: str, shown: str) -> bool:
    """Return True when ``quote`` states a number and a tool output shows each
    of its facts (numbers and paths), exit code lines left out of both."""
    facts = FACT.findall(_EXIT_CODE.sub(" ", quote))
    outputs = _EXIT_CODE.sub(" ", shown)
    return any(f[0].isdigit() for f in facts) and all(
        appears(fact, outputs) for fact in facts
    )


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
        "executor-status",
    )


def _verdict(
    criterion: Criterion, passed: bool, evidence: str, rule: str = ""
) -> CriterionVerdict:
    return CriterionVerdict(
        criterion=criterion.criterion,
        mode=criterion.mode,
        verdict="pass" if passed else "fail",
        failure_class=None if passed else "logical",
        evidence=evidence,
        rule=rule,
    )


def fail_all(criteria: list[Criterion], reason: str) -> Judged:
    """Return every criterion failed for ``reason``, with no retry possible."""
    verdicts = [_verdict(c, False, reason, "unjudged") for c in criteria]
    for verdict in verdicts:
        verdict.failure_class = "environmental"
    return Judged(verdicts, stop=reason)


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _quote(text: str) -> str:
    return head_tail(text.strip(), QUOTE)
