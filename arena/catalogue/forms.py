"""The form part every way of editing an entry shares: its API key, write-only."""

from django import forms

from inference import destinations
from inference.config import KEY_VARIABLE_PREFIX

from .models import ModelEntry

KEY_STORED = ("A key is stored (it is never shown). It goes only to this base URL's host: a new host (or scheme or "
              "port) removes it unless you paste it again. Paste another to replace it.")
KEY_NONE = ("Paste the endpoint's key to store it, encrypted; it is never shown again. Or name an environment "
            "variable that holds it, below.")
KEY_VARIABLE_HELP = (f"The NAME of the environment variable that holds the endpoint's key where the workers run; it "
                     f"must begin with {KEY_VARIABLE_PREFIX} (e.g. {KEY_VARIABLE_PREFIX}TEAM). Or store the key "
                     "itself instead, encrypted.")
KEY_ONLY_OPENAI = "Only an openai entry has an API key."
KEY_AND_REMOVE = "Paste a new key or remove the stored one, not both."


class StoredKeyForm(forms.ModelForm):
    """The endpoint's key, write-only: pasted once, stored encrypted (ModelEntry.store_key), never shown
    back; or the stored one removed. The staff catalogue API uses it too ("api_key").

    A stored key goes only to the origin it was given for: a new base URL on another scheme, host or
    port removes it unless the same save gives a key again (`key_dropped` then says so)."""

    api_key = forms.CharField(
        required=False, label="API key", help_text=KEY_NONE,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )
    remove_stored_key = forms.BooleanField(required=False, label="Remove the stored key")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.key_dropped = False
        if "api_key_env" in self.fields:
            self.fields["api_key_env"].help_text = KEY_VARIABLE_HELP
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
        elif self._moves_stored_key(cleaned.get("base_url")):
            self.instance.store_key("")
            self.key_dropped = True
        return cleaned

    def _moves_stored_key(self, base_url: str | None) -> bool:
        """Whether this save would send the stored key to another origin than the saved base URL's."""
        if base_url is None or not self.instance.pk or not self.instance.has_stored_key:
            return False
        saved = ModelEntry.objects.filter(pk=self.instance.pk).values_list("base_url", flat=True).first()
        return not destinations.same_origin(saved or "", base_url)
