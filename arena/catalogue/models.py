"""The model catalogue: what a user can pick, and how each entry is served."""

import hashlib
import json
import math
import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from inference import config, destinations
from inference.managed import check_template
from inference.protocol import ENGINE_KINDS, ModelSpec, ParamError, SamplingParams
from inference.sources import ModelSourceError, SourceNameError, check_source
from inference.structured import engine_problem
from orchestration import sealing

from . import checks, keys, labels, pricing

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
MAX_ALIASES = 30
MAX_ALIAS_LENGTH = 60
LABEL_TAKEN = "Another entry has this label: labels tell entries apart in charts and tables, so each needs its own."
KEY_TWICE = ("Either a stored key or a key variable, not both: clear the variable's name to use the stored key, "
             "or remove the stored key to use the variable.")
# One sentence for every source that names no model this app can load, whether the path is missing,
# a file of another kind or a folder without a model: staff cannot probe this machine's files with it.
SOURCE_UNUSABLE = ("Not found, or not a model this app can load (a GGUF file, or a folder with config.json): give a "
                   ".gguf file (or its folder and the GGUF file's name), a model folder, a Hugging Face repo id in "
                   "this machine's cache, or package:<python package>.")
# What both sides of a blind comparison must share: an entry's own defaults for these never apply
# to one side only (ModelEntry.params_with_defaults(shared=True)).
SHARED_CONDITIONS = frozenset({"max_new_tokens", "stop", "json_schema", "regex"})
# How an entry gets its prompt, as the pages say it after a reveal.
PROMPT_FORM_CHAT = "chat template"
PROMPT_FORM_TEXT = "plain text to continue (base model)"
# A base model in pickers: what "base" means, in the fewest words.
BASE_MARK = "(base: continues text)"
BASE_IN_NAME = re.compile(r"\s*\(base\)", re.IGNORECASE)
# What the check before enabling covers: a change to any of these is checked again.
CHECKED_FIELDS = ("engine", "base_url", "remote_model", "api_key_env", "api_key_sealed", "server_command")
# What decides an entry's answers (its `version`): the served model and how it is served, not where a
# worker runs, how much it may hold or how it authenticates.
VERSION_FIELDS = ("slug", "engine", "base", "source", "gguf_file", "kind", "precision", "context_length",
                  "draft_source", "draft_gguf_file", "draft_kind", "num_speculative_tokens", "base_url",
                  "remote_model", "server_command")
# What one worker may ask a Ray cluster for (it runs on one machine), and the finest fraction Ray counts.
MAX_CPUS = 1024
MAX_GPUS = 64
RESOURCE_DECIMALS = 4


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

    class Engine(models.TextChoices):
        TRANSFORMERS = "transformers", "transformers (this app's worker)"
        LLAMACPP = "llamacpp", "llama.cpp (GGUF as shipped)"
        OPENAI = "openai", "OpenAI-compatible endpoint"
        SERVER = "server", "OpenAI-compatible server started from a command (e.g. vLLM)"

    class Precision(models.TextChoices):
        AUTO = "auto", "Auto (fp32 on CPU, bf16/fp16 on GPU)"
        FP32 = "fp32", "fp32"
        BF16 = "bf16", "bf16"
        FP16 = "fp16", "fp16"

    slug = models.SlugField(unique=True, max_length=80)
    name = models.CharField(max_length=120)
    label = models.CharField(
        max_length=labels.MAX_LABEL, blank=True,
        help_text="A short name that tells this entry apart from the others in charts and tables, e.g. "
        "\"SmolLM2 135M · llama.cpp Q4_1 · spec\". Left empty, it is derived from the name and how the entry "
        "is served. No two entries share one.",
    )
    description = models.TextField(blank=True)
    engine = models.CharField(max_length=20, choices=Engine.choices, default=Engine.TRANSFORMERS)
    source = models.CharField(
        max_length=500, blank=True,
        help_text="A local folder or file, a Hugging Face repo id in the local cache, "
        "or package:<python package> for a model shipped in a Python package (not for an endpoint).",
    )
    gguf_file = models.CharField(max_length=255, blank=True, help_text="GGUF file inside the source, if any.")
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.FULL)
    precision = models.CharField(max_length=10, choices=Precision.choices, default=Precision.AUTO)
    draft = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="Draft model for speculative decoding (same tokenizer).",
    )
    memory_estimate_mb = models.PositiveIntegerField(default=1024)
    cpus = models.FloatField(
        default=2.0, verbose_name="CPUs",
        help_text="CPU cores a worker of this entry asks for on a Ray cluster; it runs that many threads. The local "
        "backend shares this machine's cores instead (ARENA_CPU_SHARES).",
    )
    gpus = models.FloatField(
        default=0.0, verbose_name="GPUs",
        help_text="GPUs a worker asks for: 0.5 lets two workers share one GPU; 0 runs without one (on a machine "
        "with a GPU the local backend still uses it).",
    )
    default_params = models.JSONField(default=dict, blank=True, help_text='e.g. {"temperature": 0.7}')
    system_prompt = models.TextField(blank=True)
    context_length = models.PositiveIntegerField(default=0, help_text="0: take it from the model's config.")
    base = models.BooleanField(
        default=False, verbose_name="base model",
        help_text="A pretrained (not instruction-tuned) model: it gets the prompt as plain text to continue, "
        "never a chat template, so it continues a question (often by repeating it) rather than answering it. "
        "Base models stay out of anonymous battles unless \"in chat draws\" is set.",
    )
    in_chat_draws = models.BooleanField(
        default=False, verbose_name="in chat draws",
        help_text="Base models only: let this base model be drawn into anonymous battles, whose prompts are chat. "
        "Off: it plays only where someone picks it (a comparison, a tournament, a suite run).",
    )
    base_url = models.CharField(  # not a URLField: http://gpu-node-1:8000/v1 has no dotted domain
        blank=True, max_length=500, verbose_name="endpoint base URL",
        help_text="OpenAI-compatible endpoint, up to its version: e.g. https://api.example.com/v1.",
    )
    remote_model = models.CharField(blank=True, max_length=200, help_text="The model's name at the endpoint.")
    api_key_env = models.CharField(
        blank=True, max_length=128, verbose_name="API key variable",
        help_text="The NAME of the environment variable that holds the endpoint's key on the machines that run "
        "workers (or store the key itself instead, encrypted).",
    )
    # The endpoint's key pasted in the admin or the API, Fernet-encrypted with ARENA_SECRETS_KEY
    # (orchestration/sealing.py): never shown back, opened only to check the endpoint and by the
    # backend that spawns the entry's worker.
    api_key_sealed = models.TextField(blank=True, editable=False)
    check_error = models.TextField(
        blank=True, editable=False,
        help_text="Why the last check failed (key, endpoint, model listed); empty once it passed.",
    )
    checked_at = models.DateTimeField(null=True, blank=True, editable=False)
    server_command = models.TextField(
        blank=True,
        help_text="server engine: the command that starts an OpenAI-compatible server, with {port} (and optionally "
        "{host}, {api_key}, {model}: the source, {fraction}: the memory estimate's share of the machine's GPU "
        "memory). E.g. vllm serve {model} --port {port} --api-key {api_key} --gpu-memory-utilization {fraction}. "
        "Workers run it only where ARENA_ALLOW_SERVER_COMMANDS=1.",
    )
    max_concurrency = models.PositiveIntegerField(
        default=0, help_text="Requests served at once (an endpoint's limit, llama.cpp's slots); 0: the default (16).",
    )
    # What an answer costs (arena/catalogue/pricing.py; suite runs show it beside their pass rates):
    # prices per million tokens (a hosted API's), or per hour of the machine, or none.
    price_input_per_mtok = models.FloatField(
        null=True, blank=True, verbose_name="price per million input tokens",
        help_text="US dollars per million prompt tokens (a hosted API's price); give the output price too. "
        "Empty: no price.")
    price_output_per_mtok = models.FloatField(
        null=True, blank=True, verbose_name="price per million output tokens",
        help_text="US dollars per million generated tokens.")
    price_per_hour = models.FloatField(
        null=True, blank=True, verbose_name="price per hour",
        help_text="US dollars per hour of the machine that serves it (instead of token prices): an answer costs "
        "its generation time, from its measured tokens/s, at this price.")
    aliases = models.JSONField(
        default=list, blank=True,
        help_text="Words that name this model's identity (family, maker, product), e.g. Gemma, Google, DeepMind. "
        "A blind battle whose answer mentions one of either contestant is flagged and left out of the "
        "leaderboard by default. The first word of the name and of the slug always count.",
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ModelEntryQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        verbose_name = "model"

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        if not self.label.strip():
            self.label = self.default_label()
            if kwargs.get("update_fields") is not None:
                kwargs["update_fields"] = {*kwargs["update_fields"], "label"}
        super().save(*args, **kwargs)

    def default_label(self) -> str:
        """The derived label (arena/catalogue/labels.py), made unique with the slug if another entry has it."""
        derived = labels.derive(self.name, self.engine, self.kind, self.precision, self.gguf_file,
                                self.draft.name if self.draft is not None else "")
        return labels.unique(derived, self.slug, self._labels_of_others())

    def _labels_of_others(self) -> set[str]:
        others = ModelEntry.objects.exclude(pk=self.pk) if self.pk else ModelEntry.objects.all()
        return {label.casefold() for label in others.values_list("label", flat=True)}

    @property
    def price(self) -> pricing.Price | None:
        """Its price (None: none given), for what its answers cost (arena/catalogue/pricing.py)."""
        price = pricing.Price(self.price_input_per_mtok, self.price_output_per_mtok, self.price_per_hour)
        return price if price.per_token or price.hourly else None

    @property
    def takes_chat(self) -> bool:
        """May meet chat prompts blind: not a base model, or one staff let into chat draws."""
        return not self.base or self.in_chat_draws

    @property
    def prompt_form(self) -> str:
        """How the worker hands it a prompt (inference/engine.py): plain text for a base model."""
        return PROMPT_FORM_TEXT if self.base else PROMPT_FORM_CHAT

    @property
    def picker_label(self) -> str:
        """The name in pickers, saying what a base model does ("Gemma 3 270M (base: continues text)")."""
        if not self.base:
            return self.name
        # The mark goes last: a picker cuts a long name, and what tells variants apart comes first.
        return f"{BASE_IN_NAME.sub('', self.name).strip()} {BASE_MARK}"

    @property
    def is_endpoint(self) -> bool:
        return self.engine == self.Engine.OPENAI

    # --- the key and the check before enabling ------------------------------------------------
    @property
    def is_checked(self) -> bool:
        """An entry served by something this app does not load itself is checked before it is enabled."""
        return self.engine in (self.Engine.OPENAI, self.Engine.SERVER)

    @property
    def has_stored_key(self) -> bool:
        return bool(self.api_key_sealed)

    def store_key(self, key: str) -> None:
        """Keep `key` encrypted (an empty one removes the stored key); save to keep it."""
        self.api_key_sealed = sealing.seal(settings.ARENA_SECRETS_KEY, key) if key else ""

    def endpoint_key(self) -> str:
        """The key as a worker here would send it: the stored one opened, else the named variable of
        this app's environment (on a single machine, the one its workers get). Only for the check."""
        if self.api_key_sealed:
            return sealing.unseal(settings.ARENA_SECRETS_KEY, self.api_key_sealed)
        return config.secret(self.api_key_env) if config.is_key_variable(self.api_key_env) else ""

    def run_check(self) -> str:
        """Check the key, the endpoint and its model list (arena/catalogue/checks.py); record and return
        the problem ("" when it passed). Saves nothing."""
        problem = checks.problem(self) or ""
        self.check_error, self.checked_at = problem, timezone.now()
        return problem

    def hold_for_check(self) -> bool:
        """Before an admin or API save. True when the entry must pass the check first: an openai or server
        entry being enabled, or enabled with what the check covers changed. It is then saved disabled,
        and `enable_if_checked` enables it once the check passes."""
        if not self.is_checked:
            self.check_error, self.checked_at = "", None
            return False
        previous = ModelEntry.objects.filter(pk=self.pk).first() if self.pk else None
        changed = previous is None or any(getattr(previous, f) != getattr(self, f) for f in CHECKED_FIELDS)
        if changed:  # an earlier check's reason says nothing of the entry as it is now
            self.check_error, self.checked_at = "", None
        if not self.enabled or (previous is not None and previous.enabled and not changed):
            return False
        self.enabled = False
        return True

    def enable_if_checked(self) -> str:
        """Check a held entry and enable it only if it passed, recording the outcome; the problem, or "".
        Call it outside any transaction (after the save commits): it waits on the network, and must
        not hold the database's write lock meanwhile."""
        problem = self.run_check()
        self.enabled = not problem
        ModelEntry.objects.filter(pk=self.pk).update(enabled=self.enabled, check_error=self.check_error,
                                                     checked_at=self.checked_at)
        return problem

    def recheck(self) -> str:
        """The check again (the change page's Test), recorded; enabled or not stays as it is."""
        problem = self.run_check()
        ModelEntry.objects.filter(pk=self.pk).update(check_error=self.check_error, checked_at=self.checked_at)
        return problem

    def clean(self):
        errors = self._engine_errors()
        if self.engine in (self.Engine.TRANSFORMERS, self.Engine.LLAMACPP):
            errors.update(self._source_errors())
        try:
            SamplingParams.from_dict(self.default_params)
        except ValueError as exc:
            errors["default_params"] = str(exc)
        errors.update(self._draft_errors())
        errors.update(self._alias_errors())
        errors.update(self._label_errors())
        errors.update(self._resource_errors())
        if found := pricing.problem(pricing.Price(self.price_input_per_mtok, self.price_output_per_mtok,
                                                  self.price_per_hour)):
            errors.setdefault(found[0], found[1])
        if errors:
            raise ValidationError(errors)

    def _engine_errors(self) -> dict[str, str | ValidationError]:
        """A kind or setting the entry's engine cannot serve, with the reason."""
        if self.engine not in ENGINE_KINDS:
            return {"engine": f"Unknown engine '{self.engine}'."}
        if self.kind not in ENGINE_KINDS[self.engine]:
            reasons = {
                "llamacpp": "llama.cpp serves the GGUF's own quantisation; AWQ needs the transformers engine.",
                "openai": "an endpoint serves its model as it is; speculative decoding or AWQ is the server's "
                          "own setting.",
                "server": "the server's command says how it serves the model (its quantisation, speculative "
                          "decoding).",
            }
            return {"kind": f"The {self.engine} engine cannot serve this kind: {reasons[self.engine]}"}
        if self.engine != self.Engine.TRANSFORMERS and self.precision != self.Precision.AUTO:
            return {"precision": f"The {self.engine} engine runs the model's own number types; "
                                 "leave precision on auto."}
        if self.max_concurrency > 256:
            return {"max_concurrency": "At most 256 requests at once."}
        if self.engine == self.Engine.SERVER:
            problem = check_template(self.server_command)
            return {"server_command": problem} if problem else {}
        return self._endpoint_errors() if self.is_endpoint else {}

    def _endpoint_errors(self) -> dict[str, str | ValidationError]:
        errors: dict[str, str | ValidationError] = {}
        if not self.base_url.startswith(("http://", "https://")) or destinations.origin(self.base_url) is None:
            errors["base_url"] = "An endpoint needs its base URL (http:// or https://, up to /v1)."
        elif destinations.has_userinfo(self.base_url):
            errors["base_url"] = keys.USERINFO_IN_URL
        elif problem := keys.host_problem(self.base_url):
            errors["base_url"] = ValidationError(problem, code=keys.HOST_CODE)
        if not self.remote_model.strip():
            errors["remote_model"] = "An endpoint needs the model's name at the endpoint."
        if self.api_key_env and not ENV_NAME.match(self.api_key_env):
            errors["api_key_env"] = ("The NAME of an environment variable (letters, digits, _), not the key itself: "
                                     "set the key in that variable where the workers run, or store the key.")
        elif self.api_key_env and not config.is_key_variable(self.api_key_env):
            errors["api_key_env"] = ValidationError(keys.KEY_VARIABLE_OUTSIDE.format(name=self.api_key_env),
                                                    code=keys.KEY_VARIABLE_CODE)
        elif self.api_key_env and self.api_key_sealed:
            errors["api_key_env"] = KEY_TWICE
        if self.draft_id is not None:
            errors["draft"] = "An endpoint has no draft model."
        return errors

    def _resource_errors(self) -> dict[str, str]:
        """CPUs and GPUs a worker can ask a Ray cluster for (orchestration/backends/ray.py)."""
        errors = {}
        if problem := self._cpus_problem():
            errors["cpus"] = problem
        if problem := self._gpus_problem():
            errors["gpus"] = problem
        return errors

    def _cpus_problem(self) -> str:
        if not _finite(self.cpus):
            return "CPUs must be a number, e.g. 2."
        cpus = float(self.cpus)
        if cpus <= 0:
            return ("CPUs must be more than 0: every worker needs some CPU. "
                    + ("An endpoint's worker only relays the stream, so a little is enough (0.25 is fine)."
                       if self.is_endpoint else "The default is 2."))
        if cpus > MAX_CPUS:
            return f"At most {MAX_CPUS} CPUs: a worker runs on one machine."
        if round(cpus, RESOURCE_DECIMALS) != cpus:
            return f"Ray counts CPUs to {10 ** -RESOURCE_DECIMALS:g}: give at most {RESOURCE_DECIMALS} decimals."
        if self.is_endpoint:
            return "" if cpus < 1 or cpus.is_integer() else (
                "A fraction below 1 (an endpoint's worker only relays the stream: 0.25 is fine) or a whole number.")
        if cpus < 1 or not cpus.is_integer():
            return ("A worker that runs the model on our machines runs one thread per CPU it asks for: give a whole "
                    "number, at least 1 (the default is 2). Only an openai endpoint's worker, which only relays "
                    "the stream, may ask for a fraction such as 0.25.")
        return ""

    def _gpus_problem(self) -> str:
        if not _finite(self.gpus):
            return "GPUs must be a number: 0 runs the worker without a GPU."
        gpus = float(self.gpus)
        if self.is_endpoint and gpus != 0:
            return ("An openai endpoint runs on its own server, not on this app's machines: its worker needs no GPU "
                    "(leave 0), and little CPU (0.25 is fine).")
        if gpus < 0:
            return "GPUs cannot be negative: 0 runs the worker without a GPU."
        if gpus > MAX_GPUS:
            return f"At most {MAX_GPUS} GPUs: a worker runs on one machine."
        if round(gpus, RESOURCE_DECIMALS) != gpus:
            return f"Ray counts GPUs to {10 ** -RESOURCE_DECIMALS:g}: give at most {RESOURCE_DECIMALS} decimals."
        if gpus > 1 and not gpus.is_integer():
            return (f"{gpus:g} GPUs cannot be placed: a share of one GPU (more than 0, at most 1; 0.5 lets two "
                    "workers share one) or a whole number of GPUs (2), never a share spanning two GPUs.")
        return ""

    def _source_errors(self) -> dict[str, str]:
        """What is wrong with the source as typed (a malformed name), else one sentence for every source
        that is no model here (SOURCE_UNUSABLE): never which path exists, what kind of file it is or
        what a folder holds. The worker that loads a source logs the full reason."""
        try:
            path = check_source(self.source, self.gguf_file)  # imports nothing of the model's package
        except SourceNameError as exc:
            return {"source": str(exc)}
        except ModelSourceError:
            return {"source": SOURCE_UNUSABLE}
        if self.engine == self.Engine.LLAMACPP and path.suffix.lower() != ".gguf":
            return {"source": SOURCE_UNUSABLE}
        return {}

    def _draft_errors(self) -> dict[str, str]:
        if self.draft is None:
            return {}
        if self.kind != self.Kind.SPECULATIVE:
            return {"draft": "Only a speculative-decoding entry uses a draft model."}
        if self.draft_id == self.id:
            return {"draft": "A model cannot be its own draft entry (leave it empty for prompt-lookup decoding)."}
        if self.draft.kind == self.Kind.SPECULATIVE:
            return {"draft": "The draft must be a full-precision or AWQ entry, not another speculative one."}
        if self.engine == self.Engine.LLAMACPP and self.draft.engine != self.Engine.LLAMACPP:
            return {"draft": "A llama.cpp entry's draft must be a llama.cpp entry (a GGUF of the same tokenizer)."}
        return {}

    def _label_errors(self) -> dict[str, str]:
        self.label = " ".join(self.label.split())
        if self.label and self.label.casefold() in self._labels_of_others():
            return {"label": LABEL_TAKEN}
        return {}

    def _alias_errors(self) -> dict[str, str]:
        """Aliases are a JSON list of strings (one comma-separated line in the admin, so no commas),
        each trimmed with inner blanks as one space, duplicates dropped."""
        if not isinstance(self.aliases, list) or not all(isinstance(a, str) for a in self.aliases):
            return {"aliases": "A list of words, e.g. [\"Gemma\", \"Google\"]."}
        cleaned: list[str] = []
        for alias in (" ".join(a.split()) for a in self.aliases):
            if len(re.sub(r"[\W_]", "", alias)) < 2:
                return {"aliases": f"'{alias}' is too short: an alias needs at least 2 letters or digits."
                        if alias else "An alias cannot be empty."}
            if len(alias) > MAX_ALIAS_LENGTH or "," in alias:
                return {"aliases": f"'{alias[:MAX_ALIAS_LENGTH]}': an alias is at most {MAX_ALIAS_LENGTH} "
                                   "characters, without commas."}
            if alias.casefold() not in {c.casefold() for c in cleaned}:
                cleaned.append(alias)
        if len(cleaned) > MAX_ALIASES:
            return {"aliases": f"At most {MAX_ALIASES} aliases."}
        self.aliases = cleaned
        return {}

    def identity_words(self) -> list[str]:
        """What names this entry in an answer: its aliases, and (the floor every entry has) the first
        word of its name and of its slug, with and without a version number ("SmolLM2", "SmolLM")."""
        first = [self.name.split()[0] if self.name.split() else "", self.slug.split("-")[0]]
        floor = [w for word in first for w in (word, word.rstrip("0123456789.")) if len(w) >= 4]
        return list(dict.fromkeys([*self.aliases, *floor]))

    def spec(self) -> ModelSpec:
        draft = self.draft if self.kind == self.Kind.SPECULATIVE else None
        return ModelSpec(
            slug=self.slug,
            engine=self.engine,
            base=self.base,
            source=self.source,
            gguf_file=self.gguf_file,
            kind=self.kind,
            precision=self.precision,
            context_length=self.context_length,
            draft_source=draft.source if draft else "",
            draft_gguf_file=draft.gguf_file if draft else "",
            draft_kind=draft.kind if draft else "full",
            # An endpoint holds no model on our machines: it costs a node no memory.
            memory_mb=0 if self.is_endpoint else self.memory_estimate_mb or 0,
            base_url=self.base_url,
            remote_model=self.remote_model,
            api_key_env=self.api_key_env,
            api_key_sealed=self.api_key_sealed if self.is_endpoint else "",
            max_concurrency=self.max_concurrency,
            server_command=self.server_command if self.engine == self.Engine.SERVER else "",
            cpus=float(self.cpus),
            gpus=0.0 if self.is_endpoint else float(self.gpus),  # an endpoint's model runs on its own server
        )

    @property
    def version(self) -> str:
        """A fingerprint of what decides this entry's answers (VERSION_FIELDS of its spec): the entry
        stores no revision or update time, so an edit that changes the served model (its file, its
        quantisation, its engine, its draft, its endpoint) changes the version, and a stored answer of
        the old one is never reused as the new one's (arena/generations/cache.py). Its system prompt
        and defaults are not in it: they reach a request's messages and parameters, which are."""
        spec = self.spec()
        served = {name: getattr(spec, name) for name in VERSION_FIELDS}
        return hashlib.sha256(json.dumps(served, sort_keys=True).encode()).hexdigest()[:16]

    def params_with_defaults(self, overrides: dict | None = None, *, shared: bool = False) -> SamplingParams:
        """The entry's defaults with `overrides`; ParamError for what its engine cannot do (a regex
        on an OpenAI-compatible endpoint), so every path refuses it before anything is queued.

        `shared`: a side of a blind comparison, whose conditions a judge could notice (the token
        limit, stop sequences, an output constraint: SHARED_CONDITIONS) come from the comparison's
        own `overrides` alone, never from this entry's defaults, so both sides stop under one rule."""
        defaults = {k: v for k, v in (self.default_params or {}).items() if not (shared and k in SHARED_CONDITIONS)}
        merged = {**defaults, **{k: v for k, v in (overrides or {}).items() if v is not None}}
        params = SamplingParams.from_dict(merged)
        if problem := engine_problem(self.engine, params.json_schema, params.regex):
            raise ParamError({"regex": f"{self.name}: {problem}"})
        return params


def _finite(value) -> bool:
    """A real number (not a boolean, not nan or an infinity): what a resource figure must be."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
