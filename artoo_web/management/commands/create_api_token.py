from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from artoo_web import api_tokens


class Command(BaseCommand):
    help = "Create an API token for USER and print it once; --revoke PREFIX revokes."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="")
        parser.add_argument("--revoke", metavar="PREFIX")

    def handle(self, *args, username, name, revoke, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}.")
        if revoke:
            count = api_tokens.revoke(revoke, user=user)
            self.stdout.write(f"Revoked {count} token(s) of {username}.")
            return
        row, secret = api_tokens.create(user, name)
        self.stdout.write(secret)
        self.stderr.write(f"Token {row.prefix}… for {username}: shown once, store it.")
