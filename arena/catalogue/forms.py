"""The form part every way of editing an entry shares: its API key, write-only."""

from django import forms

from .models import ModelEntry

KEY_STORED = "A key is stored (it is never shown). Paste another to replace it."
KEY_NONE = ("Paste the endpoint's key to store it, encrypted; it is never shown again. Or name an environment "
            "variable that holds it, below.")
KEY_ONLY_OPENAI = "Only an openai entry has an API key."
KEY_AND_REMOVE = "Paste a new key or remove the stored one, not both."


class StoredKeyForm(forms.ModelForm):
    """The endpoint's key, write-only: pasted once, stored encrypted (ModelEntry.store_key), never shown
    back; or the stored one removed. The staff catalogue API uses it too ("api_key")."""

    api_key = forms.CharField(
        required=False, label="API key", help_text=KEY_NONE,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )
    remove_stored_key = forms.BooleanField(required=False, label="Remove the stored key")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.has_stored_key and "api_key" in self.fields:
            self.fields["api_key"].help_text = KEY_STORED
            self.fields["api_key"].widget.attrs["placeholder"] = "a key is stored"

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data
        key, remove = cleaned.get("api_key"), cleaned.get("remove_stored_key")
        if key and remove:
            self.add_error("api_key", KEY_AND_REMOVE)
        elif key and cleaned.get("engine") != ModelEntry.Engine.OPENAI:
            self.add_error("api_key", KEY_ONLY_OPENAI)
        elif key:
            self.instance.store_key(key)  # not a model field of the form: kept by construct_instance
        elif remove:
            self.instance.store_key("")
        return cleaned
