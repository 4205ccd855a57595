"""The project pages: the list with its form, one project's page, its cancel,
and each task attempt's commit with its diff.

The page reads the stored state (remit, milestones, the window, the task in
hand) and the project's bus messages (done tasks, escalations, the Assessor's
verdicts); nothing here decides anything about the project's course. Its parts
(``PARTS``, one partial each) are rendered alike for the page and for the live
stream (``render_parts``), which pushes them when the project changes.
"""

from __future__ import annotations

from pathlib import Path

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_http_methods, require_POST

from artoo_web import inputs, projectrepo, projects, topics
from artoo_web.forms import ProjectForm
from artoo_web.models import Project
from roles.projects import ProjectState

LIMIT = 200
RECORDS = (
    "RecordDone",
    "RecordEscalation",
    "RecordVerification",
    "AssessorReply",
    "FinishProject",
)
PAGE = "artoo_web/project_detail.html"
# The page's live parts: element id = partial name.
PARTS = (
    "project-header",
    "project-remit",
    "project-milestones",
    "project-window",
    "project-verdicts",
    "project-escalations",
    "project-runs",
    "project-commits",
    "project-usage",
)


def _visible(request: HttpRequest, project_id) -> Project:
    return get_object_or_404(Project.objects.visible_to(request.user), id=project_id)


@require_http_methods(["GET"])
def project_list(request: HttpRequest) -> HttpResponse:
    return _list_page(request, ProjectForm())


def _list_page(request, form: ProjectForm, status: int = 200) -> HttpResponse:
    mine = Project.objects.visible_to(request.user).select_related("owner")[:LIMIT]
    context = {"projects": mine, "form": form}
    return render(request, "artoo_web/project_list.html", context, status=status)


@require_POST
def project_create(request: HttpRequest) -> HttpResponse:
    form = ProjectForm(request.POST)
    if form.is_valid() and not inputs.is_utf8_form(request):
        form.add_error("request", "The request is not valid UTF-8 text.")
    if not form.is_valid():
        return _list_page(request, form, 400)
    data = form.cleaned_data
    try:
        project = projects.create(
            request.user,
            data["request"],
            data["directory"],
            data["verify"],
            data["protected"],
        )
    except projectrepo.DirectoryError as exc:
        form.add_error("directory", str(exc))
        return _list_page(request, form, 400)
    except projects.ConfigError as exc:
        field = exc.field if exc.field in ("verify", "protected") else "request"
        form.add_error(field, config_message(exc))
        return _list_page(request, form, 400)
    except ValueError as exc:
        form.add_error("request", str(exc))
        return _list_page(request, form, 400)
    return redirect("project-detail", project_id=project.id)


def config_message(error: projects.ConfigError) -> str:
    """Return a bad command's or path's problem as the form shows it."""
    what = "Command" if error.field == "verify" else "Path"
    where = f"{what} {error.index + 1}: " if error.index is not None else ""
    return f"{where}{error.reason[:1].upper()}{error.reason[1:]}."


@require_http_methods(["GET"])
def project_detail(request: HttpRequest, project_id) -> HttpResponse:
    project = _visible(request, project_id)
    context = {
        "project": project,
        "ws_path": topics.ws_project_path(project.id),
        **page_of(project),
    }
    return render(request, PAGE, context)


@require_POST
def project_cancel(request: HttpRequest, project_id) -> HttpResponse:
    project = _visible(request, project_id)
    notice = ""
    try:
        projects.cancel(project)
    except projects.Conflict as exc:
        notice = str(exc)
    if request.htmx:
        project.refresh_from_db()
        context = {"project": project, **page_of(project), "notice": notice}
        return render(request, f"{PAGE}#project-header", context)
    if notice:
        messages.error(request, notice)
    return redirect("project-detail", project_id=project.id)


@require_http_methods(["GET"])
def project_task(request: HttpRequest, project_id, dispatch_id: str) -> HttpResponse:
    project = _visible(request, project_id)
    record = get_object_or_404(project.task_commits, dispatch_id=dispatch_id)
    try:
        diff = projectrepo.show(Path(project.directory), record.commit)
        from_repo = True
    except (projectrepo.DirectoryError, OSError):
        diff, from_repo = record.diff, False
    context = {
        "project": project,
        "record": record,
        "diff": diff,
        "from_repo": from_repo,
    }
    return render(request, "artoo_web/project_task.html", context)


def page_of(project: Project) -> dict:
    """Return what the project page shows, read from the state and the bus."""
    state = project.load_state()
    records = project.messages.filter(type__in=RECORDS).order_by("id")
    done = [m.payload for m in records if m.type == "RecordDone"]
    runs = {r.dispatch_id: r for r in project.runs.all()}
    commits = {c.dispatch_id: c for c in project.task_commits.all()}
    return {
        "state": state,
        "milestones": milestone_rows(state, done, commits),
        "task": state.task,
        "task_run": runs.get(state.task.dispatch_id) if state.task else None,
        "runs": sorted(runs.values(), key=lambda r: r.created_at),
        "commits": list(commits.values()),
        "verdicts": [m for m in records if m.type == "AssessorReply"],
        "escalations": [m for m in records if m.type == "RecordEscalation"],
        "verifications": [m for m in records if m.type == "RecordVerification"],
        "usage": sorted(project.usage.items()),
        "tokens": sum(row.get("tokens", 0) for row in project.usage.values()),
    }


def render_parts(project_id) -> dict[str, str]:
    """Return element id → the page's partial for each live part, as it is now."""
    project = Project.objects.get(id=project_id)
    context = {"project": project, **page_of(project)}
    return {part: render_to_string(f"{PAGE}#{part}", context) for part in PARTS}


def milestone_rows(
    state: ProjectState, done: list[dict], commits: dict | None = None
) -> list[dict]:
    """Return each milestone with its status and the tasks done under it, each
    with its commit (none for a skip)."""
    commits = commits or {}
    rows = []
    for index, milestone in enumerate(state.milestones):
        if index < state.milestone_index or state.phase == "complete":
            status = "done"
        elif index == state.milestone_index and state.phase not in ("scope",):
            status = "current"
        else:
            status = "pending"
        tasks = [
            {
                **d["entry"],
                "commit": commits.get(d.get("dispatch_id") or d["entry"]["task_id"]),
            }
            for d in done
            if d.get("milestone_index") == index
        ]
        rows.append({"milestone": milestone, "status": status, "tasks": tasks})
    return rows
