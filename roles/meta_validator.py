"""R4b, the Meta-Validator: gate the round's outcomes, merge, verify, report to GGS.

The fan-in gate is code. A request that only deletes named paths is met when
they are gone and a command of the round deleted them (``roles.claims.deletions``),
whatever R2's criteria say. Otherwise one failed outcome sends a ReplanRequest
without a model call, and so does a request to delete a path that still exists
(``roles.claims.deletions``), an answer not in the form the ``Question`` asks
(``roles.claims.answer_rules``: no number for a count, no name a tool showed
for names, no change to the files it was to write) or a key's value no tool
showed (``roles.claims.stated_values``), whatever the criteria say. When every
subtask matched, the model merges the outputs and judges each of R2's task
criteria against the merged result, answering ``{"verdict": "accept|replan", "summary",
"merged_output", "criteria_results": [...], "gap_summary"}``. The code then
holds it to that: an accept with a failed, missing or ambiguous criterion is a
rejection. A rejection, a model error or an unusable reply becomes a
ReplanRequest that carries failing task-criteria verdicts, so GGS counts them in
D instead of declaring success.
An accepted merge is held to the facts the subtasks showed (``roles.claims.merged``).

The third ReplanRequest of a run recommends ``abandon`` (maxReplans = 3).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from roles.claims.answer_rules import unanswered_question
from roles.claims.deletions import (
    deletions_done,
    denied_effect,
    paths_to_delete,
    unmet_deletions,
)
from roles.claims.merged import evidence_note, grounded
from roles.claims.question import question_for
from roles.claims.stated_values import unanswered
from roles.contracts import (
    Criterion,
    CriterionVerdict,
    DispatchManifest,
    OutcomeSummary,
    ReplanRequest,
    SubTaskOutcome,
    normalise_criterion,
)
from roles.llm.client import LLMClient, LLMError, LLMOutputError, Usage
from roles.llm.offline import OfflineModel
from roles.meta_reply import CriterionResult, MetaReply
from roles.planning.prompts import output_text

__all__ = ["CriterionResult", "MetaReply", "MetaResult", "evaluate"]

MAX_REPLANS = 3
OUTPUT_CHARS = 4000
UNVERIFIED = "the merged result is verified against the task"

SYSTEM = """\
You are R4b, the Meta-Validator. Merge the subtask outputs into one result and \
verify EVERY task criterion against that merged result. Be skeptical: a false \
accept delivers a wrong result to the user, a false replan only costs one round. \
Mark a criterion met only on positive evidence in the outputs; when evidence is \
missing or ambiguous it is not met. Accept only when every criterion is met.
merged_output is the concrete combined data the user asked for, without process \
narration. Inside JSON strings never put a bare ASCII double quote (use curly \
quotes) and escape backslashes.
Reply with only this JSON object:
{"verdict": "accept|replan", "summary": "<one sentence>", "merged_output": ..., \
"criteria_results": [{"criterion": "<the criterion, verbatim>", "met": true, \
"failure_class": "logical|environmental", "evidence": "..."}], \
"gap_summary": "<what is missing, on replan>"}"""


@dataclass
class MetaResult:
    """R4b's message to GGS and the model usage it cost."""

    message: ReplanRequest | OutcomeSummary
    usage: Usage | None = None


def evaluate(
    manifest: DispatchManifest,
    outcomes: Sequence[SubTaskOutcome],
    *,
    model: LLMClient | OfflineModel,
    elapsed_ms: int,
    replans_so_far: int,
    max_replans: int = MAX_REPLANS,
    intent: str = "",
) -> MetaResult:
    """Return the OutcomeSummary or ReplanRequest for one round's outcomes.

    ``replans_so_far`` counts the ReplanRequests already sent in this run. Only
    LLMCancelled propagates.
    """
    if replans_so_far < 0 or elapsed_ms < 0:
        raise ValueError("replans_so_far and elapsed_ms must not be negative")
    intent = intent or (manifest.task_spec.intent if manifest.task_spec else "")
    replan = _Replan(manifest.task_id, intent, elapsed_ms, list(outcomes))
    replan.abandon = replans_so_far + 1 >= max_replans
    if not manifest.subtask_ids:
        replan.abandon = True
        return MetaResult(
            replan.request(manifest.reason or "R2 dispatched no subtasks")
        )
    request = manifest.task_spec.raw_input if manifest.task_spec else ""
    # A file an earlier attempt deleted stays deleted: every attempt's calls count.
    calls = [c for o in outcomes for c in (*o.earlier_calls, *o.tool_calls)]
    deleted = deletions_done(request, calls)
    if deleted:
        return MetaResult(replan.accept(f"Deleted as asked: {deleted}.", deleted))
    failed = [o for o in outcomes if o.status == "failed"]
    spec = manifest.task_spec
    question = question_for(spec.asks if spec else None, request)
    own = [
        *paths_to_delete(request),
        *(question.paths if question.answer == "effect" else []),
    ]
    denied = denied_effect(own, calls)
    if failed and denied:
        # The operator refused what the request itself asks: end the run now,
        # rather than ask again in another spelling each round.
        replan.abandon = True
        return MetaResult(
            replan.request(
                f"{denied} (the request's own effect)", failed_subtasks=failed
            )
        )
    if failed:
        return MetaResult(replan.request(_gap(failed), failed_subtasks=failed))
    undone = (
        unmet_deletions(request)
        or unanswered_question(question, request, outcomes)
        or unanswered(request, outcomes)
    )
    if undone:
        gap = "; ".join(v.evidence for v in undone)
        return MetaResult(replan.request(gap, verdicts=undone))
    if isinstance(model, OfflineModel):
        model.pause()
        merged = "\n".join(t for t in (output_text(o.output) for o in outcomes) if t)
        return MetaResult(replan.accept("All subtasks matched their checks.", merged))
    return _verify(manifest, replan, model)


@dataclass
class _Replan:
    task_id: str
    intent: str
    elapsed_ms: int
    outcomes: list[SubTaskOutcome]
    abandon: bool = False

    def request(
        self,
        gap: str,
        *,
        failed_subtasks: Sequence[SubTaskOutcome] = (),
        verdicts: Sequence[CriterionVerdict] = (),
    ) -> ReplanRequest:
        # Go counted attempts (Σ len(gap_trajectory)); the Auditor's drift
        # threshold of 5 is calibrated on that count.
        corrections = sum(len(o.gap_trajectory) for o in self.outcomes)
        return ReplanRequest(
            task_id=self.task_id,
            intent=self.intent,
            gap_summary=gap,
            failed_subtasks=[o.subtask_id for o in failed_subtasks],
            correction_count=corrections,
            elapsed_ms=self.elapsed_ms,
            outcomes=self.outcomes,
            recommendation="abandon" if self.abandon else "replan",
            task_criteria_verdicts=list(verdicts),
        )

    def accept(self, summary: str, merged: Any) -> OutcomeSummary:
        return OutcomeSummary(
            task_id=self.task_id,
            intent=self.intent,
            summary=summary,
            merged_output=merged,
            elapsed_ms=self.elapsed_ms,
            outcomes=self.outcomes,
        )


def _gap(failed: Sequence[SubTaskOutcome]) -> str:
    reasons = [(o.failure_reason or "").strip() or o.subtask_id for o in failed]
    return "; ".join(reasons) or f"{len(failed)} subtask(s) failed"


def _verify(
    manifest: DispatchManifest, replan: _Replan, model: LLMClient
) -> MetaResult:
    criteria = [normalise_criterion(c) for c in manifest.task_criteria]
    try:
        reply, usage = model.complete_json(_messages(replan, criteria), MetaReply)
    except LLMOutputError as err:
        return _unverified(replan, criteria, f"verdict unusable: {err}", err.usage)
    except LLMError as err:
        return _unverified(replan, criteria, f"model unreachable: {err}", None)
    keys = {_key(c.criterion) for c in criteria}
    results = reply.criteria_results
    verdicts = [_verdict(c, i, results, keys) for i, c in enumerate(criteria)]
    failing = [v for v in verdicts if v.verdict == "fail"]
    if reply.verdict == "accept" and not failing:
        merged = grounded(reply.merged_output, replan.outcomes)
        summary = reply.summary.strip() or "All task criteria are met."
        summary = f"{summary} {evidence_note(replan.outcomes)}".strip()
        return MetaResult(replan.accept(summary, merged), usage)
    if not failing:
        # A replan verdict that names no failing criterion still needs D > 0.
        failing = [_failed(UNVERIFIED, reply.gap_summary or "the verifier rejected it")]
        verdicts = [*verdicts, *failing]
    gap = reply.gap_summary.strip() or "task criteria unmet: " + "; ".join(
        v.criterion for v in failing
    )
    return MetaResult(replan.request(gap, verdicts=verdicts), usage)


def _messages(replan: _Replan, criteria: list[Criterion]) -> list[dict[str, str]]:
    shown = [
        {
            "subtask_id": o.subtask_id,
            "intent": o.intent,
            "output": _cut(output_text(o.output)),
        }
        for o in replan.outcomes
    ]
    listed = [c.model_dump(mode="json", exclude_none=True) for c in criteria]
    user = (
        f"Task intent: {replan.intent or '(not given)'}\n\n"
        "Task criteria (written by R2 — ALL must be satisfied by the merged "
        f"output):\n{json.dumps(listed, ensure_ascii=False, indent=2)}\n\n"
        f"Subtask outcomes:\n{json.dumps(shown, ensure_ascii=False, indent=2)}\n\n"
        "Merge the subtask outputs and verify every task criterion."
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def _verdict(
    criterion: Criterion, index: int, results: list[CriterionResult], keys: set[str]
) -> CriterionVerdict:
    """Return the verdict on one criterion; a missing judgement is a fail.

    Models paraphrase, so when the texts do not match, the judgement in the
    criterion's place stands for it unless it names another criterion.
    """
    wanted = _key(criterion.criterion)
    found = next((r for r in results if _key(r.criterion) == wanted), None)
    if found is None and index < len(results) and len(results) == len(keys):
        if _key(results[index].criterion) not in keys:
            found = results[index]
    if found is None:
        return _failed(criterion.criterion, "no verdict given", mode=criterion.mode)
    failure_class = found.failure_class
    if failure_class not in ("logical", "environmental"):
        failure_class = None if found.passed else "logical"
    return CriterionVerdict(
        criterion=criterion.criterion,
        mode=criterion.mode,
        verdict="pass" if found.passed else "fail",
        failure_class=None if found.passed else failure_class,
        evidence=found.evidence or ("" if found.passed else "not shown to be met"),
    )


def _failed(
    criterion: str, evidence: str, *, mode: str = "verifiable", cls: str = "logical"
) -> CriterionVerdict:
    return CriterionVerdict(
        criterion=criterion, mode=mode, verdict="fail", failure_class=cls,
        evidence=evidence,
    )  # fmt: skip


def _unverified(
    replan: _Replan, criteria: list[Criterion], problem: str, usage: Usage | None
) -> MetaResult:
    verdicts = [
        _failed(c.criterion, problem, mode=c.mode, cls="environmental")
        for c in criteria
    ] or [_failed(UNVERIFIED, problem, cls="environmental")]
    return MetaResult(
        replan.request(
            f"R4b could not verify the merged result: {problem}", verdicts=verdicts
        ),
        usage,
    )


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def _cut(text: str) -> str:
    return text if len(text) <= OUTPUT_CHARS else text[:OUTPUT_CHARS] + "…"
