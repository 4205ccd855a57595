from django.db import models


class Kind(models.TextChoices):
    DEVICE = "device", "user on a known browser"
    USER = "user", "user from an address"
    ADDRESS = "address", "address, any user"


class LoginCounter(models.Model):
    """Failed log-ins in a row under one key; enough of them lock the key."""

    # A hash of the whole key: the device's nonce is never stored.
    digest = models.CharField(max_length=64, unique=True)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    username = models.CharField(max_length=150, blank=True, db_index=True)
    address = models.CharField(
        max_length=64, blank=True, help_text="where the last failure came from"
    )
    failures = models.PositiveIntegerField(default=0)
    last_failure = models.DateTimeField()

    class Meta:
        ordering = ["-last_failure"]
        verbose_name = "failed log-in counter"

    def __str__(self) -> str:
        who = self.username or self.address
        return f"{self.failures} failures ({self.get_kind_display()}: {who})"
