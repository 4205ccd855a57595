from django import forms
from django.conf import settings


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

    def clean_raw_input(self) -> str:
        return clean_task_text(self.cleaned_data.get("raw_input", ""))
