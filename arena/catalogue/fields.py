"""The catalogue entry picker of the forms: an entry by its slug, labelled with what a base model
does ("Gemma 3 270M (base: continues text)"), so nobody picks one for a chat by mistake."""

from django import forms


class EntryChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj) -> str:
        return obj.picker_label
