from django.apps import AppConfig


class ArtooWebConfig(AppConfig):
    name = "artoo_web"
    verbose_name = "artoo"
