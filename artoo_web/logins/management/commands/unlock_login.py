from django.core.management.base import BaseCommand, CommandError

from artoo_web.logins import throttle


class Command(BaseCommand):
    help = "Lift the log-in locks of a user: forget the failures counted against it."

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username, **options):
        if not username:
            raise CommandError("name a user")
        keys = throttle.unlock(username)
        self.stdout.write(f"{username}: {keys} failed log-in counter(s) cleared")
