from django.apps import AppConfig


class LoginsConfig(AppConfig):
    name = "artoo_web.logins"
    label = "logins"
    verbose_name = "log-ins"
