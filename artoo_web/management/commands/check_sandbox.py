"""``manage.py check_sandbox``: verify that commands can run in their sandbox here."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from artoo_web import runtime
from roles.tools.sandbox_check import network_warning, write_owners


class Command(BaseCommand):
    help = (
        "Run a test command in a sandbox (namespaces, overlay, unprivileged uid) "
        "and fail with the reason when it does not work on this machine."
    )

    def handle(self, *args, **options):
        if settings.ARTOO_SANDBOX == "off":
            self.stderr.write(
                "WARNING: ARTOO_SANDBOX=off: shell commands of every run execute "
                "unconfined as this user and Law 1 judges them only by their "
                "spelling. Use this only for a single trusted user."
            )
            return
        policy = runtime.sandbox_policy()
        problem = runtime.sandbox_problem(policy)
        if problem:
            raise CommandError(
                f"The command sandbox does not work on this machine: {problem}.\n"
                "It needs Linux user and mount namespaces, overlayfs and the "
                "unshare command (util-linux), and slirp4netns for the egress "
                "network. Shell tools stay off without it; "
                "set ARTOO_SANDBOX=off only to run them unconfined for a single "
                "trusted user."
            )
        warning = network_warning(policy)
        if warning:
            self.stderr.write(f"WARNING: ARTOO_SANDBOX_NETWORK=host: {warning}")
        self.stdout.write(f"sandbox: ok (network: {policy.network})")
        for line in write_owners(policy, settings.ARTOO_ALLOWED_PATHS):
            self.stdout.write(f"allowed path {line}")
