from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from artoo_web import benchmarks


class Command(BaseCommand):
    help = (
        "Store a benchmark record (bench/control.py's control.json) so the "
        "Benchmarks page shows it."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)

    def handle(self, *args, path, **options):
        try:
            record = benchmarks.read_record(path)
        except benchmarks.BadRecord as exc:
            raise CommandError(f"Not stored: {exc}") from None
        bench = benchmarks.store(record)
        self.stdout.write(
            f"Stored benchmark #{bench.pk} ({bench.name} {bench.session}): "
            "staff see it on /benchmarks/."
        )
