"""artoo_web: the Django project and app that run artoo."""

from artoo_web.celery import app as celery_app

__all__ = ["celery_app"]
