from typing import get_args

from django import forms
from django.conf import settings

from artoo_web import api_tokens
from roles.contracts import Anomaly
from roles.ggs.control import STRATEGIES


def clean_task_text(text: str) -> str:
    """Return the task text stripped, or raise ValidationError with the reason."""
    text = (text or "").strip()
    if not text:
        raise forms.ValidationError("Enter a task: the input is empty.")
    limit = settings.ARTOO_MAX_INPUT_CHARS
    if len(text) > limit:
        raise forms.ValidationError(
            f"The task is {len(text):,} characters; the limit is {limit:,}."
        )
    if "\x00" in text:
        raise forms.ValidationError("The task contains a NUL character.")
    return text


class RunForm(forms.Form):
    raw_input = forms.CharField(
        label="Task",
        strip=False,
        required=False,
        widget=forms.Textarea(
            attrs={
                "rows": 3,
                "placeholder": "What should artoo do? (Enter submits, "
                "Shift+Enter for a new line)",
            }
        ),
    )

    control = forms.ChoiceField(
        label="Control strategy",
        required=False,
        choices=[(s.name, f"{s.name}: {s.label}") for s in STRATEGIES.values()],
        help_text="How the run replans after a round fails.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["control"].initial = settings.ARTOO_CONTROL

    def clean_raw_input(self) -> str:
        return clean_task_text(self.cleaned_data.get("raw_input", ""))


class MemorySearchForm(forms.Form):
    space = forms.CharField(required=False, max_length=200, label="Space contains")
    entity = forms.CharField(required=False, max_length=200, label="Entity contains")
    content = forms.CharField(required=False, max_length=200, label="Content contains")


LEVELS = [("C", "C: consolidated rule"), ("K", "K: knowledge"), ("M", "M: memory")]


class RememberForm(forms.Form):
    text = forms.CharField(
        label="Remember",
        max_length=2000,
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    level = forms.ChoiceField(choices=LEVELS, initial="C")
    space = forms.CharField(max_length=200, initial="global:user")
    entity = forms.CharField(max_length=200, initial="env:local")

    def clean_text(self) -> str:
        text = (self.cleaned_data.get("text") or "").strip()
        if not text:
            raise forms.ValidationError("Nothing to remember: the text is empty.")
        return text

    def megram(self) -> dict:
        """Return the Megram a user injects, as ``manage.py memory remember`` does."""
        level = self.cleaned_data["level"]
        return {
            "level": level,
            "space": self.cleaned_data["space"].strip(),
            "entity": self.cleaned_data["entity"].strip(),
            "content": self.cleaned_data["text"],
            "state": "user-injected",
            "f": 1.0,
            "sigma": 1.0,
            "k": 0.0 if level in ("C", "T") else 0.05,
        }


class ForgetForm(forms.Form):
    id_prefix = forms.CharField(
        label="Forget Megrams whose id starts with",
        min_length=4,
        max_length=64,
        error_messages={"min_length": "Give at least 4 characters of the id."},
    )

    def clean_id_prefix(self) -> str:
        prefix = self.cleaned_data["id_prefix"].strip()
        if len(prefix) < 4:
            raise forms.ValidationError("Give at least 4 characters of the id.")
        return prefix


ANOMALIES = [
    ("", "all events"),
    ("any", "any anomaly"),
    *[(a, a.replace("_", " ")) for a in get_args(Anomaly) if a != "none"],
]


class AuditFilterForm(forms.Form):
    anomaly = forms.ChoiceField(choices=ANOMALIES, required=False)
    run = forms.CharField(required=False, max_length=64, label="Run id")


class TokenForm(forms.Form):
    name = forms.CharField(
        label="Name",
        required=False,
        strip=False,
        widget=forms.TextInput(
            attrs={
                "maxlength": api_tokens.NAME_CHARS,
                "placeholder": "what uses it, e.g. laptop CLI",
                "autocomplete": "off",
            }
        ),
    )

    def clean_name(self) -> str:
        try:
            return api_tokens.clean_name(self.cleaned_data.get("name", ""))
        except api_tokens.Refused as exc:
            raise forms.ValidationError(str(exc)) from None


class ProjectForm(forms.Form):
    request = forms.CharField(
        label="Request",
        strip=False,
        required=False,
        widget=forms.Textarea(
            attrs={"rows": 3, "placeholder": "What should the project achieve?"}
        ),
    )
    directory = forms.CharField(
        label="Working directory",
        required=False,
        max_length=1000,
        help_text="An absolute path inside the allowed paths (a git repository is "
        "created when it is not one); empty for a new directory.",
    )
    # One item a line; the items are checked where the API's are, on creation
    # (roles.projects.verification), so the form only splits the lines.
    verify = forms.CharField(
        label="Verification commands",
        required=False,
        strip=False,
        widget=forms.Textarea(
            attrs={"rows": 2, "placeholder": "python3 -m unittest -q"}
        ),
        help_text="One command a line, run in the repository at each milestone's "
        "end: a milestone is done only when every one exits 0.",
    )
    protected = forms.CharField(
        label="Protected paths",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "tests/"}),
        help_text="One file or directory a line, relative to the repository, that "
        "no task may change once it is committed.",
    )

    def clean_verify(self) -> list[str]:
        return given_lines(self.cleaned_data.get("verify", ""))

    def clean_protected(self) -> list[str]:
        return given_lines(self.cleaned_data.get("protected", ""))


def given_lines(text: str) -> list[str]:
    """Return the lines of ``text`` that hold anything (blank lines are none)."""
    return [line for line in (text or "").splitlines() if line.strip()]
