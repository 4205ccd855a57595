from __future__ import annotations

import functools

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from artoo_web import (
    api_tokens,
    benchmarks,
    bus,
    dashboard,
    followups,
    inputs,
    runlist,
    runs,
    topics,
)
from artoo_web.auditlog import AuditEventRecord, AuditReportRecord, check_chain
from artoo_web.forms import (
    AuditFilterForm,
    ForgetForm,
    MemorySearchForm,
    RememberForm,
    RunForm,
    TokenForm,
)
from artoo_web.models import ApiToken, Approval, Benchmark, Run, RunStatus
from roles.memory_contracts import owner_for_user

AUDIT_PAGE = 200


def staff_only(view):
    """Refuse a signed-in user who is not staff (403); login is required anyway."""

    @functools.wraps(view)
    def inner(request, *args, **kwargs):
        if not request.user.is_staff:
            raise PermissionDenied("Staff only.")
        return view(request, *args, **kwargs)

    return inner


def _list_context(request: HttpRequest) -> dict:
    status = request.GET.get("status", "")
    status = status if status in RunStatus.values else ""
    return {
        # Taken before the rows are read: the stream sends what changes after.
        "since_ms": int(timezone.now().timestamp() * 1000),
        "runs": runlist.listed(request.user, status),
        "status": status,
        "statuses": RunStatus,
        "ws_path": topics.WS_RUN_LIST,
    }


@require_http_methods(["GET"])
def run_list(request: HttpRequest) -> HttpResponse:
    context = {**_list_context(request), "form": RunForm()}
    return render(request, "artoo_web/run_list.html", context)


@require_POST
def run_create(request: HttpRequest) -> HttpResponse:
    """Submit a task and open its live page; a refused task stays on the list."""
    form = RunForm(request.POST)
    # The API's rule: text that is not UTF-8 is refused, not stored as U+FFFD.
    if form.is_valid() and not inputs.is_utf8_form(request):
        form.add_error("raw_input", "The task is not valid UTF-8 text.")
    if not form.is_valid():
        return _refused_form(request, form, 400)
    try:
        data = form.cleaned_data
        run = runs.submit(request.user, data["raw_input"], data["control"])
    except runs.LimitReached as exc:
        form.add_error("raw_input", exc.refusal.message)
        response = _refused_form(request, form, 429)
        response["Retry-After"] = str(exc.refusal.retry_after_s)
        return response
    if request.htmx:
        return HttpResponseClientRedirect(reverse("run-detail", args=[run.id]))
    return redirect("run-detail", run_id=run.id)


def _refused_form(request: HttpRequest, form: RunForm, status: int) -> HttpResponse:
    """Answer a refused task with the form and its error (the list without htmx)."""
    if request.htmx:
        template, context = "artoo_web/run_list.html#run-form", {}
    else:
        template, context = "artoo_web/run_list.html", _list_context(request)
    return render(request, template, {**context, "form": form}, status=status)


def _visible_run(request: HttpRequest, run_id) -> Run:
    return get_object_or_404(Run.objects.visible_to(request.user), id=run_id)


@require_http_methods(["GET"])
def run_detail(request: HttpRequest, run_id) -> HttpResponse:
    return _detail_page(request, _visible_run(request, run_id))


@require_http_methods(["GET"])
def run_bus(request: HttpRequest, run_id) -> HttpResponse:
    """Answer the bus rows before ``?before=<id>``, a page of them (htmx)."""
    run = _visible_run(request, run_id)
    try:
        before = int(request.GET.get("before", ""))
    except ValueError:
        return HttpResponse("?before= takes a message id.", status=400)
    context = {"run": run, **dashboard.bus_page(run, before)}
    return render(request, f"{dashboard.TEMPLATE}#bus-earlier-page", context)


def _detail_page(request: HttpRequest, run: Run, status: int = 200) -> HttpResponse:
    newest = dashboard.bus_page(run)
    rows = newest["bus_messages"]
    context = dashboard.context_for(run)
    context.update(
        newest,
        last_id=rows[-1].id if rows else 0,
        ws_path=topics.ws_run_path(run.id),
        sandbox_off=settings.ARTOO_SANDBOX == "off",
    )
    return render(request, "artoo_web/run_detail.html", context, status=status)


def _part(
    request: HttpRequest, run: Run, part: str, notice: str = "", status: int = 200
) -> HttpResponse:
    """Answer an action with the fresh part (htmx) or a redirect to the run.

    A refusal with its own status (409) is answered under that status: the part
    for htmx, the run's page otherwise.
    """
    if request.htmx:
        context = {**dashboard.context_for(run, [part]), "notice": notice}
        name = dashboard.PARTS[part]
        return render(request, f"{dashboard.TEMPLATE}#{name}", context, status=status)
    if notice:
        messages.error(request, notice)
    if status != 200:
        return _detail_page(request, run, status)
    return redirect("run-detail", run_id=run.id)


@require_POST
def run_cancel(request: HttpRequest, run_id) -> HttpResponse:
    run = _visible_run(request, run_id)
    notice = ""
    try:
        runs.cancel(run)
    except runs.Conflict as exc:
        notice = str(exc)
    run.refresh_from_db()
    return _part(request, run, "run-header", notice)


@require_POST
def run_approval(request: HttpRequest, run_id, approval_id) -> HttpResponse:
    run = _visible_run(request, run_id)
    decision = request.POST.get("decision", "")
    notice, status = "", 200
    try:
        runs.decide_approval(run, approval_id, decision, request.user)
    except runs.Voided as exc:
        notice, status = str(exc), 409
    except runs.Conflict as exc:
        notice = str(exc)
    except ValueError:
        notice = "Choose approve or deny."
    except Approval.DoesNotExist:
        notice = "This approval does not belong to this run."
    run.refresh_from_db()
    return _part(request, run, "prompts", notice, status)


@require_POST
def run_answer(request: HttpRequest, run_id) -> HttpResponse:
    run = _visible_run(request, run_id)
    answer = request.POST.get("answer", "").strip()
    notice = inputs.answer_problem(answer)
    if not inputs.is_utf8_form(request):
        notice = "The answer is not valid UTF-8 text."
    if not notice:
        try:
            runs.answer_clarification(run, answer)
        except runs.Conflict as exc:
            notice = str(exc)
    run.refresh_from_db()
    return _part(request, run, "prompts", notice)


@require_POST
def run_audit(request: HttpRequest, run_id) -> HttpResponse:
    run = _visible_run(request, run_id)
    with transaction.atomic():
        bus.send(run, "User", "R6", "AuditQuery", {})
    return _part(request, run, "audit-panel")


# -- memory -----------------------------------------------------------------------


class MemoryUnavailable(Exception):
    """The memory worker did not answer in time."""


def ask_memory(task: str, *args):
    """Return a memory task's answer, or raise MemoryUnavailable after the timeout."""
    timeout = settings.ARTOO_WEB_MEMORY_TIMEOUT_S
    try:
        result = followups.enqueue(task, list(args), queue="memory", answered=True)
        return result.get(timeout=timeout)
    except Exception as exc:
        raise MemoryUnavailable(
            f"memory worker unavailable: no answer within {timeout} s "
            f"({type(exc).__name__}). Is the memory process running?"
        ) from None


def _age(created_at: str | None, now) -> str:
    when = parse_datetime(created_at or "")
    if when is None:
        return "?"
    seconds = max(0, int((now - when).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def filter_groups(groups: list[dict], space: str, entity: str, text: str) -> list:
    """Keep groups and Megrams matching the substrings (case-insensitive)."""
    now = timezone.now()
    space, entity, text = space.lower(), entity.lower(), text.lower()
    kept = []
    for g in groups:
        if space not in g["space"].lower() or entity not in g["entity"].lower():
            continue
        megrams = [m for m in g["megrams"] if text in m.get("content", "").lower()]
        if text and not megrams:
            continue
        for m in megrams:
            m["age"] = _age(m.get("created_at"), now)
        kept.append({**g, "megrams": megrams})
    return kept


def memory_reader(user) -> str | None:
    """Return whose Megrams ``user`` may browse: staff all (None), others theirs.

    "Theirs" are those their runs wrote and the shared ones (an operator's
    remembered entries); ``memory/owners.py`` applies the rule.
    """
    return None if user.is_staff else owner_for_user(user.pk)


def memory_context(request: HttpRequest) -> dict:
    search = MemorySearchForm(request.GET or None)
    terms = search.cleaned_data if search.is_valid() else {}
    context = {"search": search, "summary": None, "groups": [], "unavailable": ""}
    reader = memory_reader(request.user)
    try:
        context["summary"] = ask_memory(followups.MEMORY_SUMMARY, reader)
        groups = ask_memory(followups.MEMORY_GROUPS, None, reader)
    except MemoryUnavailable as exc:
        context["unavailable"] = str(exc)
        return context
    context["groups"] = filter_groups(
        groups,
        terms.get("space", ""),
        terms.get("entity", ""),
        terms.get("content", ""),
    )
    return context


@require_http_methods(["GET"])
def memory_browser(request: HttpRequest) -> HttpResponse:
    context = memory_context(request)
    context.update(remember=RememberForm(), forget=ForgetForm())
    return render(request, "artoo_web/memory.html", context)


def _memory_answer(request, notice="", error="", remember=None, forget=None):
    context = memory_context(request)
    context.update(
        remember=remember or RememberForm(),
        forget=forget or ForgetForm(),
        notice=notice,
        error=error,
    )
    status = 400 if error or (remember and remember.errors) else 200
    if forget is not None and forget.errors:
        status = 400
    return render(request, "artoo_web/memory.html", context, status=status)


@require_POST
@staff_only
def memory_remember(request: HttpRequest) -> HttpResponse:
    form = RememberForm(request.POST)
    if not form.is_valid():
        return _memory_answer(request, remember=form)
    with transaction.atomic():
        msg = bus.send(None, "User", "R5", "Megram", form.megram())
    notice = f"Sent to memory as bus message #{msg.id}; R5 stores it when it runs."
    return _memory_answer(request, notice=notice)


@require_POST
@staff_only
def memory_forget(request: HttpRequest) -> HttpResponse:
    form = ForgetForm(request.POST)
    if not form.is_valid():
        return _memory_answer(request, forget=form)
    try:
        count = ask_memory(followups.MEMORY_FORGET, form.cleaned_data["id_prefix"])
    except MemoryUnavailable as exc:
        return _memory_answer(request, error=str(exc))
    return _memory_answer(request, notice=f"Forgot {count} Megram(s).")


# -- API tokens ----------------------------------------------------------------------


def _token_page(request: HttpRequest, form=None, status: int = 200) -> HttpResponse:
    context = {
        "tokens": list(api_tokens.live_for(request.user)),
        "form": form or TokenForm(),
        "max_live": api_tokens.MAX_LIVE,
    }
    return render(request, "artoo_web/tokens.html", context, status=status)


@require_http_methods(["GET"])
def token_list(request: HttpRequest) -> HttpResponse:
    return _token_page(request)


@never_cache
@require_POST
def token_create(request: HttpRequest) -> HttpResponse:
    form = TokenForm(request.POST)
    if form.is_valid() and not inputs.is_utf8_form(request):
        form.add_error("name", "The name is not valid UTF-8 text.")
    if form.is_valid():
        try:
            row, secret = api_tokens.issue(request.user, form.cleaned_data["name"])
        except api_tokens.Refused as exc:
            form.add_error("name", str(exc))
    if not form.is_valid():
        return _token_page(request, form, status=400)
    # The one time the secret is shown: never stored, never cached (never_cache).
    context = {"token": row, "secret": secret}
    return render(request, "artoo_web/token_created.html", context, status=201)


@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    row = get_object_or_404(ApiToken, id=token_id, user=request.user)
    label = f"{row.name or 'unnamed'} ({api_tokens.PREFIX}{row.prefix}…)"
    if api_tokens.revoke_one(row):
        messages.success(request, f"Revoked the token {label}: it no longer works.")
    else:
        messages.info(request, f"The token {label} was revoked already.")
    return redirect("token-list")


# -- audit ---------------------------------------------------------------------------


@require_http_methods(["GET"])
@staff_only
def audit_log(request: HttpRequest) -> HttpResponse:
    form = AuditFilterForm(request.GET or None)
    events = AuditEventRecord.objects.order_by("-id")
    if form.is_valid():
        anomaly = form.cleaned_data.get("anomaly")
        if anomaly == "any":
            events = events.exclude(anomaly="none")
        elif anomaly:
            events = events.filter(anomaly=anomaly)
        if run_id := form.cleaned_data.get("run"):
            events = events.filter(run_id=run_id)
    chain = check_chain()
    return render(
        request,
        "artoo_web/audit.html",
        {
            "form": form,
            "events": list(events[:AUDIT_PAGE]),
            "reports": list(AuditReportRecord.objects.order_by("-id")[:20]),
            "chain": chain,
        },
    )


# -- benchmarks ----------------------------------------------------------------------


@require_http_methods(["GET"])
@staff_only
def benchmark(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """Show one benchmark (the latest when no id is given) with links to its runs."""
    if pk is None:
        bench = Benchmark.objects.first()
    else:
        bench = get_object_or_404(Benchmark, pk=pk)
    context = benchmarks.page_context(bench)
    return render(request, "artoo_web/benchmark.html", context)


def admin_memory(request: HttpRequest) -> HttpResponse:
    """Show Megrams inside the admin, fed by the memory worker."""
    from django.contrib import admin

    context = {**admin.site.each_context(request), **memory_context(request)}
    context["title"] = "Memory (Megrams)"
    return render(request, "admin/artoo_web/memory.html", context)
