# The tiny random-weight model of the inference tests serves the orchestrator's too.
from tests.inference.conftest import smollm2_tokenizer_dir, tiny_model, tiny_model_dir, tokenizer  # noqa: F401
