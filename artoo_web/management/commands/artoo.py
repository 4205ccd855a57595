import sys
import time

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from artoo_web import runs
from artoo_web.dashboard.final import result_of
from artoo_web.forms import clean_task_text
from artoo_web.models import BusMessage, Run
from artoo_web.summaries import usage_by_role
from roles.contracts import (
    CONTRACTS,
    FinalResult,
    Loss,
    PlanDirective,
    read_payload,
)
from roles.ggs import control
from roles.result_text import as_lines

POLL_S = 0.1
# R2 writes the next moves with one more model call after the run has ended.
NEXT_MOVES_WAIT_S = 20.0
SUCCESS = {"accept", "success", "direct"}
NO_LOSS = Loss(D=0, P=0, Omega=0, L=0)
# A message's detail on its line: the first of these fields it has and fills.
DETAIL_FIELDS = ("intent", "summary", "status", "question", "answer", "accomplished")


def describe(msg: BusMessage) -> str:
    """Return one terminal line for a bus message (the GGS line for R7's)."""
    head = f"#{msg.id:<5} {msg.sender:>4} → {msg.recipient:<4} {msg.type}"
    if msg.type not in CONTRACTS:
        return head
    p = read_payload(msg.type, msg.payload)
    if isinstance(p, PlanDirective | FinalResult):
        loss = p.loss or NO_LOSS
        return (
            f"{head}  [{p.control or 'ggs'}] {p.prev_directive}→{p.directive}  "
            f"D={loss.D:.2f} P={loss.P:.2f} "
            f"∇L={p.grad_l or 0:+.2f} Ω={loss.Omega:.2f}"
        )
    detail = next((v for name in DETAIL_FIELDS if (v := getattr(p, name, None))), None)
    return f"{head}  {str(detail)[:100]}" if detail else head


class Command(BaseCommand):
    help = "Submit a task, stream the pipeline, print the result and the cost table."

    def add_arguments(self, parser):
        parser.add_argument("task")
        parser.add_argument(
            "--user", help="owner of the run (default: the first superuser)"
        )
        parser.add_argument("--timeout", type=float, default=900.0)
        parser.add_argument(
            "--control",
            dest="strategy",
            choices=control.NAMES,
            help="the run's control strategy (default: ARTOO_CONTROL, "
            f"{control.DEFAULT} when unset)",
        )
        parser.add_argument(
            "--yes", action="store_true", help="approve Law 1 prompts without asking"
        )
        parser.add_argument(
            "--next-moves-wait",
            type=float,
            default=NEXT_MOVES_WAIT_S,
            metavar="S",
            help="after an abandon, wait this long for R2's next moves "
            f"(default {NEXT_MOVES_WAIT_S:g} s)",
        )

    def handle(
        self, *args, task, user, timeout, yes, next_moves_wait, strategy, **options
    ):
        if next_moves_wait < 0:
            raise CommandError("--next-moves-wait must be 0 or more seconds.")
        owner = self.owner(user)
        try:
            text = clean_task_text(task)
        except Exception as exc:
            raise CommandError(" ".join(getattr(exc, "messages", [str(exc)]))) from None
        try:
            run = runs.submit(owner, text, strategy or "")
        except runs.LimitReached as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"run {run.id}")
        self.stdout.write(f"control {run.control}")
        last = self.follow(run, owner, timeout, yes)
        if run.expects_next_moves:
            self.await_next_moves(run, owner, last, next_moves_wait)
        run.refresh_from_db()
        self.report(run)
        directive = (run.final_result or {}).get("directive", "")
        sys.exit(0 if directive in SUCCESS else 1)

    def owner(self, username):
        users = get_user_model().objects
        found = (
            users.filter(username=username)
            if username
            else users.filter(is_superuser=True).order_by("id")
        ).first()
        if found is None:
            raise CommandError(
                "No such user; pass --user NAME (see make run's admin user)."
            )
        return found

    def follow(self, run: Run, owner, timeout: float, yes: bool) -> int:
        """Print the run's messages until it ends; return the last one's id."""
        last, deadline = 0, time.monotonic() + timeout
        while time.monotonic() < deadline:
            last = self.print_new(run, owner, yes, last)
            run.refresh_from_db()
            if run.is_terminal and not run.messages.filter(id__gt=last).exists():
                return last
            time.sleep(POLL_S)
        raise CommandError(
            f"The run did not finish within {timeout:.0f} s ({run.status})."
        )

    def print_new(self, run: Run, owner, yes: bool, last: int) -> int:
        for msg in BusMessage.objects.filter(run=run, id__gt=last).order_by("id"):
            last = msg.id
            self.stdout.write(describe(msg))
            self.respond(run, msg, owner, yes)
        return last

    def await_next_moves(self, run: Run, owner, last: int, wait_s: float) -> None:
        """Print R2's NextMoves, which follow an abandon's FinalResult, or say so.

        R2 writes them after the run ended (one more model call), so they may
        come a little later; the wait is bounded by ``--next-moves-wait``.
        """
        printed = run.messages.filter(type="NextMoves")
        deadline = time.monotonic() + wait_s
        while True:
            last = self.print_new(run, owner, False, last)
            if printed.filter(id__lte=last).exists():
                return
            if time.monotonic() >= deadline:
                self.stdout.write(
                    f"no next moves from R2 within {wait_s:g} s: the run page shows "
                    "them when they come (--next-moves-wait S waits longer)"
                )
                return
            time.sleep(POLL_S)

    def respond(self, run, msg, owner, yes):
        if msg.type == "ApprovalRequest":
            for change in msg.payload.get("changes") or []:
                self.stdout.write(f"  {change.get('kind')}: {change.get('path')}")
            ok = yes or self.confirm(
                f"Law 1: run `{msg.payload.get('command')}`? [y/N] "
            )
            try:
                runs.decide_approval(
                    run, msg.payload["approval_id"], "approve" if ok else "deny", owner
                )
            except runs.Conflict:
                pass
        elif msg.type == "ClarificationRequest":
            answer = (
                input(f"{msg.payload.get('question')} > ") if sys.stdin.isatty() else ""
            )
            runs.answer_clarification(run, answer)

    def confirm(self, prompt: str) -> bool:
        if not sys.stdin.isatty():
            return False
        return input(prompt).strip().lower() in ("y", "yes")

    def report(self, run: Run):
        record = run.final_result or {}
        final = read_payload("FinalResult", record)
        # R1's direct answer is stored as the record too, but "direct" is no GGS
        # directive, so the contract drops it: the run's own directive says it.
        directive = final.directive or (run.directive if record else "")
        self.stdout.write(f"\n{run.status}: {directive}")
        output = "" if final.output in (None, "") else str(final.output)
        if record:
            for line in as_lines(result_of(run, record, final), output):
                self.stdout.write(line)
        self.stdout.write(f"\n{'role':<6}{'calls':>7}{'tokens':>10}{'cost USD':>12}")
        for role, row in usage_by_role(run).items():
            self.stdout.write(
                f"{role:<6}{row['calls']:>7}{row['tokens']:>10}{row['cost_usd']:>12.6f}"
            )
        self.stdout.write(
            f"{'total':<6}{'':>7}{run.tokens:>10}{float(run.cost_usd):>12.6f}"
        )
