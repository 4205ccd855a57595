"""The JSON API, authenticated by per-user tokens (``Authorization: Bearer …``).

Errors are JSON ``{"error": "…"}`` with the right status; other users' runs are 404;
a submission over a per-user limit is 429 with ``Retry-After``.
"""

from __future__ import annotations

import functools

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from artoo_web import api_tokens, inputs, projects, runs
from artoo_web.forms import clean_task_text
from artoo_web.models import Approval, BusMessage, Project, Run
from artoo_web.summaries import rounds_of, usage_by_role
from roles import quota
from roles.ggs import control

PAGE = 500


class ApiError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def endpoint(*methods: str):
    """Authenticate by token, allow ``methods``, and turn ApiError into JSON."""

    def wrap(view):
        @csrf_exempt
        @login_not_required
        @require_http_methods(list(methods))
        @functools.wraps(view)
        def inner(request: HttpRequest, *args, **kwargs):
            user = api_tokens.authenticate(request.headers.get("Authorization", ""))
            if user is None:
                return error(
                    401, "A valid API token is required (Authorization: Bearer …)."
                )
            request.user = user
            try:
                return view(request, *args, **kwargs)
            except ApiError as exc:
                return error(exc.status, str(exc))
            except inputs.InputError as exc:
                return error(400, str(exc))
            except (runs.Conflict, projects.Conflict) as exc:
                return error(409, str(exc))
            except runs.LimitReached as exc:
                return limit_reached(exc.refusal)

        return inner

    return wrap


def limit_reached(refusal: quota.Refusal) -> JsonResponse:
    """Answer a submission over a limit: 429, the limit, and when to retry."""
    response = JsonResponse(
        {
            "error": refusal.message,
            "limit": refusal.limit,
            "retry_after": refusal.retry_after_s,
        },
        status=429,
    )
    response["Retry-After"] = str(refusal.retry_after_s)
    return response


def body(request: HttpRequest) -> dict:
    """Return the request's JSON object; raise ApiError or InputError if it is not."""
    data = inputs.parse_json(request.body)
    if not isinstance(data, dict):
        raise ApiError(400, "The body must be a JSON object.")
    return data


def string_field(data: dict, name: str) -> str:
    value = data.get(name, "")
    if not isinstance(value, str):
        raise ApiError(400, f"'{name}' must be a string.")
    return inputs.check_text(name, value)


def strings_field(data: dict, name: str) -> list[str]:
    """Return a list of strings (absent: none); its items are checked by whoever
    reads them."""
    value = data.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ApiError(400, f"'{name}' must be a list of strings.")
    return value


def control_field(data: dict) -> str:
    """Return the run's control strategy: absent means ARTOO_CONTROL's."""
    if "control" not in data:
        return ""
    value = data["control"]
    if value not in control.NAMES:
        raise ApiError(400, f"'control' must be one of {', '.join(control.NAMES)}.")
    return value


def visible_run(request: HttpRequest, run_id) -> Run:
    run = Run.objects.visible_to(request.user).filter(id=run_id).first()
    if run is None:
        raise ApiError(404, "No such run.")
    return run


def run_json(run: Run) -> dict:
    return {
        "id": str(run.id),
        "status": run.status,
        "task_id": run.task_id,
        "input": run.raw_input,
        "round": run.round,
        "control": run.control,
        "directive": run.directive,
        "rounds": rounds_of(run),
        "final_result": run.final_result,
        "tokens": run.tokens,
        "cost_usd": float(run.cost_usd),
        "cost_by_role": usage_by_role(run),
        "pending_approvals": [
            {
                "id": str(a.id),
                "tool": a.tool,
                "command": a.command,
                "reason": a.reason,
                "gate": a.gate,
                "changes": a.changes,
            }
            for a in run.approvals.filter(status="pending")
        ],
        "question": run.state.get("question") if run.status == "needs_input" else None,
        "created_at": run.created_at.isoformat(),
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "url": reverse("run-detail", args=[run.id]),
    }


@endpoint("GET", "POST")
def run_list(request: HttpRequest):
    if request.method == "GET":
        mine = Run.objects.visible_to(request.user)[:100]
        return JsonResponse(
            {
                "runs": [
                    {"id": str(r.id), "status": r.status, "task_id": r.task_id}
                    for r in mine
                ]
            }
        )
    data = body(request)
    try:
        text = clean_task_text(string_field(data, "input"))
    except Exception as exc:
        messages = getattr(exc, "messages", [str(exc)])
        raise ApiError(400, " ".join(messages)) from None
    run = runs.submit(request.user, text, control_field(data))
    return JsonResponse(run_json(run), status=201)


@endpoint("GET")
def run_detail(request: HttpRequest, run_id):
    return JsonResponse(run_json(visible_run(request, run_id)))


@endpoint("GET")
def run_messages(request: HttpRequest, run_id):
    run = visible_run(request, run_id)
    try:
        after = int(request.GET.get("after", "0"))
    except ValueError:
        raise ApiError(400, "'after' must be an integer message id.") from None
    rows = BusMessage.objects.filter(run=run, id__gt=after).order_by("id")[:PAGE]
    return JsonResponse({"messages": [m.envelope() for m in rows]})


@endpoint("POST")
def run_cancel(request: HttpRequest, run_id):
    run = visible_run(request, run_id)
    runs.cancel(run)
    return JsonResponse(run_json(Run.objects.get(id=run.id)))


@endpoint("POST")
def run_approval(request: HttpRequest, run_id, approval_id):
    run = visible_run(request, run_id)
    decision = string_field(body(request), "decision")
    if decision not in ("approve", "deny"):
        raise ApiError(400, "'decision' must be 'approve' or 'deny'.")
    try:
        approval = runs.decide_approval(run, approval_id, decision, request.user)
    except Approval.DoesNotExist:
        raise ApiError(404, "No such approval for this run.") from None
    return JsonResponse({"id": str(approval.id), "status": approval.status})


@endpoint("POST")
def run_answer(request: HttpRequest, run_id):
    run = visible_run(request, run_id)
    answer = string_field(body(request), "answer").strip()
    if problem := inputs.answer_problem(answer):
        raise ApiError(400, problem)
    msg = runs.answer_clarification(run, answer)
    return JsonResponse({"message_id": msg.id}, status=202)


def visible_project(request: HttpRequest, project_id) -> Project:
    found = Project.objects.visible_to(request.user).filter(id=project_id).first()
    if found is None:
        raise ApiError(404, "No such project.")
    return found


def project_json(project: Project) -> dict:
    state = project.load_state()
    return {
        "id": str(project.id),
        "status": project.status,
        "request": project.request,
        "directory": project.directory,
        "remit": state.remit,
        "milestones": [m.description for m in state.milestones],
        "milestone_index": state.milestone_index,
        "completed_tasks": state.completed_tasks,
        "runs": [
            {"id": str(r.id), "dispatch_id": r.dispatch_id, "status": r.status}
            for r in project.runs.order_by("created_at")
        ],
        "usage": project.usage,
        "reason": project.reason,
        "created_at": project.created_at.isoformat(),
        "finished_at": (
            project.finished_at.isoformat() if project.finished_at else None
        ),
        "url": reverse("project-detail", args=[project.id]),
    }


@endpoint("GET", "POST")
def project_list(request: HttpRequest):
    if request.method == "GET":
        mine = Project.objects.visible_to(request.user)[:100]
        rows = [
            {"id": str(p.id), "status": p.status, "request": p.request} for p in mine
        ]
        return JsonResponse({"projects": rows})
    data = body(request)
    text = string_field(data, "request")
    directory = string_field(data, "directory")
    verify = strings_field(data, "verify")
    protected = strings_field(data, "protected")
    try:
        project = projects.create(request.user, text, directory, verify, protected)
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
    return JsonResponse(project_json(project), status=201)


@endpoint("GET")
def project_detail(request: HttpRequest, project_id):
    return JsonResponse(project_json(visible_project(request, project_id)))


@endpoint("POST")
def project_cancel(request: HttpRequest, project_id):
    project = visible_project(request, project_id)
    projects.cancel(project)
    return JsonResponse(project_json(project), status=202)
