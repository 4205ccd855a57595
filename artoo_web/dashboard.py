"""The run dashboard's read model and its fragments.

Each part of the dashboard is one partial of ``artoo_web/run_detail.html`` whose
outer element carries a stable id (``PARTS``). The page renders every part; the
websocket re-renders the parts a message affects (``parts_for``) and pushes them
as ``swaps``: element id → html. Both roads go through ``render_parts``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime

from django.db.models import Q
from django.template.loader import render_to_string
from django.utils import timezone

from artoo_web import charts
from artoo_web.auditlog import AuditEventRecord, AuditReportRecord
from artoo_web.models import Approval, ApprovalStatus, BusMessage, Run, TraceEvent
from artoo_web.summaries import rounds_of, usage_by_role
from roles.tools.shell import parse_shell_output

TEMPLATE = "artoo_web/run_detail.html"
# Element id → partial name.
PARTS = {
    "run-header": "header",
    "ggs-timeline": "timeline",
    "loss-chart": "chart",
    "lanes": "lanes",
    "prompts": "prompts",
    "final-result": "final",
    "audit-panel": "audit",
}
_LANES = ("lanes",)
_PROMPTS = ("prompts",)
_DECISION = ("ggs-timeline", "loss-chart")
AFFECTS: dict[str, tuple[str, ...]] = {
    "PlanDirective": _DECISION,
    "FinalResult": (*_DECISION, "final-result", "prompts"),
    "MemoryRecall": ("ggs-timeline",),
    "DispatchManifest": ("ggs-timeline", *_LANES),
    "SubTask": _LANES,
    "ExecutionResult": _LANES,
    "CorrectionSignal": _LANES,
    "SubTaskOutcome": _LANES,
    "ApprovalRequest": _PROMPTS,
    "ApprovalDecision": _PROMPTS,
    "ClarificationRequest": _PROMPTS,
    "ClarificationAnswer": _PROMPTS,
    "NextMoves": ("final-result",),
    "AuditQuery": ("audit-panel",),
    "AuditReport": ("audit-panel",),
}
SUMMARY_CHARS = 160
FLAT_GRADIENT = 1e-3
ANOMALY_LIMIT = 50
# A message still undelivered after this long is flagged in the bus timeline;
# younger ones are normally in flight (live rows are published before delivery).
STUCK_AFTER_S = 60


def parts_for(type_: str) -> tuple[str, ...]:
    """Return the element ids a message of this type changes (header always)."""
    return ("run-header", *AFFECTS.get(type_, ()))


# -- one-line summaries of bus messages ------------------------------------


def _clip(text: object, limit: int = SUMMARY_CHARS) -> str:
    line = " ".join(str(text or "").split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _loss(p: dict) -> str:
    loss = p.get("loss") or {}
    return f"L={float(loss.get('L', 0)):.3f} ∇L={float(p.get('grad_l', 0)):+.3f}"


def _recall(p: dict) -> str:
    if p.get("available") is False:
        return "memory unavailable"
    return (
        f"{p.get('action', '?')}: attention {float(p.get('attention', 0)):.2f}, "
        f"decision {float(p.get('decision', 0)):+.2f}, {len(p.get('sops', []))} SOPs,"
        f" {len(p.get('recent', []))} recent"
    )


def _report(p: dict) -> str:
    return (
        f"{p.get('trigger', '?')} report: {p.get('tasks_observed', 0)} tasks, "
        f"{len(p.get('anomalies', []))} anomalies, "
        f"{len(p.get('boundary_violations', []))} boundary violations"
    )


SUMMARIES: dict[str, Callable[[dict], str]] = {
    "TaskSpec": lambda p: f"{p.get('task_id')}: {p.get('intent')}",
    "ClarificationRequest": lambda p: f"asks: {p.get('question')}",
    "ClarificationAnswer": lambda p: p.get("answer") or "(proceed as is)",
    "MemoryQuery": lambda p: f"{p.get('space') or 'intent'} / {p.get('entity')}",
    "MemoryRecall": _recall,
    "DispatchManifest": lambda p: (
        f"{len(p.get('subtask_ids', []))} subtasks dispatched"
        if p.get("subtask_ids")
        else f"no plan: {p.get('reason') or 'no subtasks'}"
    ),
    "SubTask": lambda p: (
        f"{p.get('subtask_id')} [group {p.get('sequence', 1)}] {p.get('intent')}"
    ),
    "ExecutionResult": lambda p: (
        f"{p.get('subtask_id')} {p.get('status')}: {output_text(p.get('output'))}"
    ),
    "CorrectionSignal": lambda p: (
        f"{p.get('subtask_id')} attempt {p.get('attempt_number')}: "
        f"{p.get('what_was_wrong')} → {p.get('what_to_do')}"
    ),
    "ApprovalRequest": lambda p: (
        f"{p.get('tool')}: {p.get('command')} ({p.get('reason')})"
    ),
    "ApprovalDecision": lambda p: f"{p.get('decision')}",
    "SubTaskOutcome": lambda p: (
        f"{p.get('subtask_id')} {p.get('status')}"
        + (f": {p['failure_reason']}" if p.get("failure_reason") else "")
    ),
    "ReplanRequest": lambda p: (
        f"{len(p.get('failed_subtasks', []))} failed, recommends "
        f"{p.get('recommendation')}: {p.get('gap_summary')}"
    ),
    "OutcomeSummary": lambda p: p.get("summary") or "all subtasks matched",
    "PlanDirective": lambda p: (
        f"{p.get('prev_directive')}→{p.get('directive')} {_loss(p)}"
    ),
    "Megram": lambda p: (
        f"[{p.get('level', 'M')}] {p.get('space')} / {p.get('entity')}: "
        f"{p.get('content')}"
    ),
    "FinalResult": lambda p: f"{p.get('directive')}: {p.get('summary')}",
    "NextMoves": lambda p: "next: " + "; ".join(p.get("next_moves", [])),
    "AuditQuery": lambda p: "on-demand audit requested",
    "AuditReport": _report,
}


def summarise(type_: str, payload: object) -> str:
    """Return a one-line summary of a bus message for the timeline."""
    fn = SUMMARIES.get(type_)
    if fn is not None and isinstance(payload, dict):
        try:
            return _clip(fn(payload))
        except (TypeError, ValueError, AttributeError, KeyError):
            pass
    return _clip(json.dumps(payload, ensure_ascii=False, default=str))


def decorate(msg: BusMessage, now: datetime | None = None) -> BusMessage:
    """Attach the row's summary, and flag a message stuck before delivery."""
    msg.summary = summarise(msg.type, msg.payload)
    age = ((now or timezone.now()) - msg.created_at).total_seconds()
    msg.stuck = msg.delivered_at is None and age > STUCK_AFTER_S
    return msg


def output_text(output: object) -> str:
    """Return an output as display text, without the leading exit-code line."""
    if output is None:
        return ""
    if not isinstance(output, str):
        return json.dumps(output, ensure_ascii=False, indent=2, default=str)
    return parse_shell_output(output)[1]


def exit_code(output: object) -> int | None:
    return parse_shell_output(output)[0] if isinstance(output, str) else None


# -- header ------------------------------------------------------------------


def elapsed_s(run: Run, now: datetime | None = None) -> int:
    end = run.finished_at or now or timezone.now()
    return max(0, int((end - run.created_at).total_seconds()))


def header_context(run: Run) -> dict:
    usage = usage_by_role(run)
    return {
        "usage": usage,
        "usage_tokens": sum(u["tokens"] for u in usage.values()),
        "usage_calls": sum(u["calls"] for u in usage.values()),
        "elapsed_s": elapsed_s(run),
    }


# -- GGS timeline --------------------------------------------------------------


def arrow(grad_l: float) -> tuple[str, str]:
    """Return the arrow and its words for a loss gradient (negative improves)."""
    if grad_l < -FLAT_GRADIENT:
        return "↓", "improving"
    if grad_l > FLAT_GRADIENT:
        return "↑", "worsening"
    return "→", "flat"


def judged_round(entry: dict) -> int:
    # R7 bumps the run's round before sending a PlanDirective: it judges the
    # round before it. A FinalResult carries the round it judged.
    if entry["directive"] in ("accept", "success", "abandon"):
        return entry["round"]
    return max(0, entry["round"] - 1)


def recall_view(payload: dict | None, unavailable: bool) -> dict | None:
    if payload is None and not unavailable:
        return None
    if unavailable or (payload or {}).get("available") is False:
        return {"available": False}
    return {
        "available": True,
        "action": payload.get("action", "Ignore"),
        "attention": float(payload.get("attention", 0.0)),
        "decision": float(payload.get("decision", 0.0)),
        "constraints": payload.get("constraints", ""),
        "sops": len(payload.get("sops", [])),
        "recent": len(payload.get("recent", [])),
        "space": payload.get("space", ""),
        "entity": payload.get("entity", ""),
    }


def _memory_by_round(run: Run) -> dict[int, dict | None]:
    recalls = {
        m.round: m.payload
        for m in BusMessage.objects.filter(run=run, type="MemoryRecall").order_by("id")
    }
    missing = {
        int(r)
        for r in TraceEvent.objects.filter(
            run=run, kind="memory_unavailable"
        ).values_list("data__round", flat=True)
        if r is not None
    }
    rounds = set(recalls) | missing
    return {r: recall_view(recalls.get(r), r in missing) for r in rounds}


def timeline_rows(run: Run) -> list[dict]:
    """Return one row per GGS decision, plus the round still in progress."""
    memory = _memory_by_round(run)
    rows = []
    for entry in rounds_of(run):
        judged = judged_round(entry)
        loss = entry.get("loss") or {}
        grad = float(entry.get("grad_l") or 0.0)
        symbol, words = arrow(grad)
        rows.append(
            {
                **entry,
                "judged": judged,
                "D": loss.get("D"),
                "P": loss.get("P"),
                "Omega": loss.get("Omega"),
                "L": loss.get("L"),
                "grad_l": grad,
                "arrow": symbol,
                "trend": words,
                "memory": memory.get(judged),
                "pending": False,
            }
        )
    judged = {r["judged"] for r in rows}
    if not run.is_terminal and run.round not in judged and run.task_id:
        rows.append(
            {
                "judged": run.round,
                "pending": True,
                "transition": f"{run.directive or 'init'}→…",
                "memory": memory.get(run.round),
            }
        )
    return rows


def decided_rows(run: Run) -> list[dict]:
    return [row for row in timeline_rows(run) if not row["pending"]]


# -- sequence lanes --------------------------------------------------------------


def _criteria(subtask: dict, outcome: dict | None) -> list[dict]:
    verdicts = {
        v.get("criterion"): v for v in (outcome or {}).get("criteria_verdicts", [])
    }
    rows = []
    for spec in subtask.get("success_criteria", []):
        text = spec if isinstance(spec, str) else spec.get("criterion", "")
        verdict = verdicts.pop(text, None) or {}
        rows.append({"criterion": text, **verdict, "verdict": verdict.get("verdict")})
    rows.extend(verdicts.values())
    return rows


def _attempt(payload: dict) -> dict:
    return {
        **payload,
        "text": output_text(payload.get("output")),
        "exit_code": exit_code(payload.get("output")),
    }


def lane_rounds(run: Run) -> list[dict]:
    """Return rounds, newest first, each with its sequence groups of cards."""
    rows = BusMessage.objects.filter(
        run=run,
        type__in=("SubTask", "ExecutionResult", "CorrectionSignal", "SubTaskOutcome"),
    ).order_by("id")
    cards: dict[str, dict] = {}
    for m in rows:
        sid = str(m.payload.get("subtask_id", ""))
        if m.type == "SubTask":
            cards[sid] = {
                "subtask": m.payload,
                "round": m.round,
                "attempts": [],
                "corrections": [],
                "outcome": None,
            }
        elif sid in cards:
            card = cards[sid]
            if m.type == "ExecutionResult":
                card["attempts"].append(_attempt(m.payload))
            elif m.type == "CorrectionSignal":
                card["corrections"].append(m.payload)
            else:
                card["outcome"] = m.payload
    rounds: dict[int, dict[int, list]] = {}
    for sid, card in cards.items():
        card["id"] = sid
        card["criteria"] = _criteria(card["subtask"], card["outcome"])
        seq = int(card["subtask"].get("sequence", 1) or 1)
        rounds.setdefault(card["round"], {}).setdefault(seq, []).append(card)
    return [
        {"round": r, "groups": [{"sequence": s, "cards": g[s]} for s in sorted(g)]}
        for r, g in sorted(rounds.items(), reverse=True)
    ]


# -- prompts, final result, audit ---------------------------------------------------


def prompts_context(run: Run) -> dict:
    approvals = Approval.objects.filter(run=run).select_related("decided_by")
    approvals = list(approvals.order_by("created_at"))
    return {
        "pending_approvals": [
            a for a in approvals if a.status == ApprovalStatus.PENDING
        ],
        "decided_approvals": [
            a for a in approvals if a.status != ApprovalStatus.PENDING
        ],
        "question": (
            run.state.get("question", "") if run.status == "needs_input" else ""
        ),
        "needs_input": run.status == "needs_input",
    }


def final_context(run: Run) -> dict:
    final = run.final_result
    if not final:
        return {"final": None}
    moves = final.get("next_moves")
    if moves is None and final.get("directive") == "abandon":
        msg = (
            BusMessage.objects.filter(run=run, type="NextMoves").order_by("-id").first()
        )
        moves = msg.payload if msg else None
    return {
        "final": final,
        "final_text": output_text(final.get("output")),
        "final_exit_code": exit_code(final.get("output")),
        "next_moves": moves,
    }


def audit_context(run: Run) -> dict:
    anomalies = AuditEventRecord.objects.filter(run_id=str(run.id)).filter(
        ~Q(anomaly="none")
    )
    queries = list(
        BusMessage.objects.filter(run=run, type="AuditQuery").values_list(
            "id", flat=True
        )
    )
    answered = set(
        AuditReportRecord.objects.filter(in_reply_to__in=queries).values_list(
            "in_reply_to", flat=True
        )
    )
    report = AuditReportRecord.objects.order_by("-id").first()
    return {
        "anomalies": list(anomalies.order_by("-id")[:ANOMALY_LIMIT]),
        "report": report,
        "report_payload": report.payload if report else None,
        "audit_pending": [q for q in queries if q not in answered],
    }


# -- rendering ------------------------------------------------------------------------

BUILDERS: dict[str, Callable[[Run], dict]] = {
    "run-header": header_context,
    "ggs-timeline": lambda run: {"timeline": timeline_rows(run)},
    "loss-chart": lambda run: {"chart": charts.loss_chart(decided_rows(run))},
    "lanes": lambda run: {"lane_rounds": lane_rounds(run)},
    "prompts": prompts_context,
    "final-result": final_context,
    "audit-panel": audit_context,
}


def context_for(run: Run, parts: Iterable[str] = PARTS) -> dict:
    """Return the template context the given parts need."""
    context: dict = {"run": run}
    for part in parts:
        context.update(BUILDERS[part](run))
    return context


def render_parts(run_id, parts: Iterable[str], extra: dict | None = None) -> dict:
    """Return element id → freshly rendered html for each part of a run."""
    parts = [p for p in dict.fromkeys(parts) if p in PARTS]
    run = Run.objects.filter(id=run_id).first()
    if run is None or not parts:
        return {}
    context = {**context_for(run, parts), **(extra or {})}
    return {
        part: render_to_string(f"{TEMPLATE}#{PARTS[part]}", context) for part in parts
    }
