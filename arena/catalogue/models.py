"""The model catalogue: what a user can pick, and how each entry is served."""

from django.core.exceptions import ValidationError
from django.db import models

from inference.protocol import ModelSpec, SamplingParams
from inference.sources import ModelSourceError, resolve_source


class ModelEntryQuerySet(models.QuerySet):
    def enabled(self):
        return self.filter(enabled=True)


class ModelEntry(models.Model):
    """A contestant: a base model plus how it is served, with an optional system prompt
    and default parameters, so one base model can meet its own variants."""

    class Kind(models.TextChoices):
        FULL = "full", "Full precision"
        AWQ = "awq", "AWQ 4-bit"
        SPECULATIVE = "speculative", "Speculative decoding"

    class Precision(models.TextChoices):
        AUTO = "auto", "Auto (fp32 on CPU, bf16/fp16 on GPU)"
        FP32 = "fp32", "fp32"
        BF16 = "bf16", "bf16"
        FP16 = "fp16", "fp16"

    slug = models.SlugField(unique=True, max_length=80)
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    source = models.CharField(
        max_length=500,
        help_text="A local folder or file, a Hugging Face repo id in the local cache, "
        "or package:<python package> for a model shipped in a Python package.",
    )
    gguf_file = models.CharField(max_length=255, blank=True, help_text="GGUF file inside the source, if any.")
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.FULL)
    precision = models.CharField(max_length=10, choices=Precision.choices, default=Precision.AUTO)
    draft = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="Draft model for speculative decoding (same tokenizer).",
    )
    memory_estimate_mb = models.PositiveIntegerField(default=1024)
    default_params = models.JSONField(default=dict, blank=True, help_text='e.g. {"temperature": 0.7}')
    system_prompt = models.TextField(blank=True)
    context_length = models.PositiveIntegerField(default=0, help_text="0: take it from the model's config.")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ModelEntryQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        verbose_name = "model"

    def __str__(self) -> str:
        return self.name

    def clean(self):
        errors = {}
        try:
            resolve_source(self.source, self.gguf_file)
        except ModelSourceError as exc:
            errors["source"] = str(exc)
        try:
            SamplingParams.from_dict(self.default_params)
        except ValueError as exc:
            errors["default_params"] = str(exc)
        errors.update(self._draft_errors())
        if errors:
            raise ValidationError(errors)

    def _draft_errors(self) -> dict[str, str]:
        if self.draft is None:
            return {}
        if self.kind != self.Kind.SPECULATIVE:
            return {"draft": "Only a speculative-decoding entry uses a draft model."}
        if self.draft_id == self.id:
            return {"draft": "A model cannot be its own draft entry (leave it empty for prompt-lookup decoding)."}
        if self.draft.kind == self.Kind.SPECULATIVE:
            return {"draft": "The draft must be a full-precision or AWQ entry, not another speculative one."}
        return {}

    def spec(self) -> ModelSpec:
        draft = self.draft if self.kind == self.Kind.SPECULATIVE else None
        return ModelSpec(
            slug=self.slug,
            source=self.source,
            gguf_file=self.gguf_file,
            kind=self.kind,
            precision=self.precision,
            context_length=self.context_length,
            draft_source=draft.source if draft else "",
            draft_gguf_file=draft.gguf_file if draft else "",
            draft_kind=draft.kind if draft else "full",
            memory_mb=self.memory_estimate_mb or 0,
        )

    def params_with_defaults(self, overrides: dict | None = None) -> SamplingParams:
        merged = {**(self.default_params or {}), **{k: v for k, v in (overrides or {}).items() if v is not None}}
        return SamplingParams.from_dict(merged)
