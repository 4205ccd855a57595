from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from artoo_web import pipeline, topics
from artoo_web.forms import RunForm
from artoo_web.models import Run, RunStatus

RUN_LIST_LIMIT = 200


def _runs_for(request: HttpRequest):
    runs = Run.objects.visible_to(request.user).select_related("owner")
    status = request.GET.get("status", "")
    if status in RunStatus.values:
        runs = runs.filter(status=status)
    return runs[:RUN_LIST_LIMIT], status


@require_http_methods(["GET"])
def run_list(request: HttpRequest) -> HttpResponse:
    runs, status = _runs_for(request)
    return render(
        request,
        "artoo_web/run_list.html",
        {"runs": runs, "form": RunForm(), "status": status, "statuses": RunStatus},
    )


@require_POST
def run_create(request: HttpRequest) -> HttpResponse:
    form = RunForm(request.POST)
    if not form.is_valid():
        template = "artoo_web/run_list.html#run-form"
        if not request.htmx:
            runs, status = _runs_for(request)
            template = "artoo_web/run_list.html"
            context = {"runs": runs, "status": status, "statuses": RunStatus}
        else:
            context = {}
        return render(request, template, {"form": form, **context}, status=400)
    run = pipeline.submit(request.user, form.cleaned_data["raw_input"])
    if request.htmx:
        return render(
            request,
            "artoo_web/run_list.html#run-created",
            {"run": run, "form": RunForm()},
            status=201,
        )
    return redirect("run-detail", run_id=run.id)


@require_http_methods(["GET"])
def run_detail(request: HttpRequest, run_id) -> HttpResponse:
    run = get_object_or_404(Run.objects.visible_to(request.user), id=run_id)
    messages = list(run.messages.order_by("id"))
    return render(
        request,
        "artoo_web/run_detail.html",
        {
            "run": run,
            "bus_messages": messages,
            "last_id": messages[-1].id if messages else 0,
            "ws_path": topics.ws_run_path(run.id),
        },
    )
