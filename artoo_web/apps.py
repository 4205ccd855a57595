from django.apps import AppConfig


class ArtooWebConfig(AppConfig):
    name = "artoo_web"
    verbose_name = "artoo"

    def ready(self):
        # Handlers register themselves with the bus on import.
        from artoo_web import handlers  # noqa: F401
