import time

from django.core.management.base import BaseCommand, CommandError

from artoo_web import bus, followups
from artoo_web.models import BusMessage

TIMEOUT_S = 15


class Command(BaseCommand):
    help = "Inspect and edit memory through the memory worker (never opens LevelDB)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("summary")
        groups = sub.add_parser("groups")
        groups.add_argument("--space")
        remember = sub.add_parser("remember")
        remember.add_argument("text")
        remember.add_argument("--level", default="C", choices=["M", "K", "C", "T"])
        remember.add_argument("--space", default="global:user")
        remember.add_argument("--entity", default="env:local")
        forget = sub.add_parser("forget")
        forget.add_argument("id_prefix")
        dream = sub.add_parser("dream")
        dream.add_argument(
            "--timeout",
            type=float,
            default=TIMEOUT_S,
            help="seconds to wait for the pass (its rules may each take a model call)",
        )

    def handle(self, *args, action, **opts):
        getattr(self, f"do_{action}")(**opts)

    def wait(self, result, timeout: float = TIMEOUT_S):
        try:
            return result.get(timeout=timeout)
        except Exception as exc:
            raise CommandError(
                f"The memory worker did not answer within {timeout:g} s ({exc!r}); "
                "is `make run` (the memory process) up?"
            ) from None

    def do_summary(self, **_):
        data = self.wait(
            followups.enqueue(
                followups.MEMORY_SUMMARY, [], queue="memory", answered=True
            )
        )
        counts = "  ".join(f"{k}={v}" for k, v in data["counts"].items())
        self.stdout.write(f"{counts}  total={data['total']}")
        for rule in data["rules"]:
            self.stdout.write(f"C {rule['id'][:8]} [{rule['space']}] {rule['content']}")

    def do_groups(self, space=None, **_):
        for g in self.wait(
            followups.enqueue(
                followups.MEMORY_GROUPS, [space], queue="memory", answered=True
            )
        ):
            p = g["potentials"]
            self.stdout.write(
                f"{g['space']} | {g['entity']}  {g['counts']}  "
                f"att={p['attention']:.2f} dec={p['decision']:+.2f} {p['action']}"
            )

    def do_remember(self, text, level, space, entity, **_):
        text = text.strip()
        if not text:
            raise CommandError("Nothing to remember: the text is empty.")
        megram = {
            "level": level,
            "space": space,
            "entity": entity,
            "content": text,
            "state": "user-injected",
            "f": 1.0,
            "sigma": 1.0,
            "k": 0.0 if level in ("C", "T") else 0.05,
        }
        msg = bus.send(None, "User", "R5", "Megram", megram)
        deadline = time.monotonic() + TIMEOUT_S
        while not BusMessage.objects.filter(
            id=msg.id, delivered_at__isnull=False
        ).exists():
            if time.monotonic() > deadline:
                raise CommandError(
                    "The memory worker has not stored it yet; it is queued "
                    f"as bus message #{msg.id} and will land when it runs."
                )
            time.sleep(0.1)
        self.stdout.write(f"Remembered ({level}, {space}): {text}")

    def do_forget(self, id_prefix, **_):
        if not id_prefix.strip():
            raise CommandError(
                "Give an id prefix; an empty prefix would forget everything."
            )
        count = self.wait(
            followups.enqueue(
                followups.MEMORY_FORGET, [id_prefix], queue="memory", answered=True
            )
        )
        self.stdout.write(f"Forgot {count} Megram(s).")

    def do_dream(self, timeout=TIMEOUT_S, **_):
        if not 0 < timeout <= 86400:
            raise CommandError("--timeout must be between 0 and 86400 seconds.")
        report = self.wait(
            followups.enqueue(followups.DREAM, [], queue="memory", answered=True),
            timeout,
        )
        self.stdout.write(
            f"deleted={report['deleted']} demoted={report['demoted']} "
            f"promoted={report['promoted']}"
        )
