#!/usr/bin/env bash
# Install kagent into .venv from pyproject.toml (CPU torch wheel first) and bubblewrap for the sandbox.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && apt-get install -y -qq bubblewrap) >/dev/null 2>&1 || echo "setup: could not install bubblewrap" >&2
  else
    echo "setup: install bubblewrap (sudo apt-get install bubblewrap): the evaluator refuses to run candidate code without it" >&2
  fi
fi
# chromium: the viewer's browser test (tests/runtime/ui/test_viewer.py) opens the pages in it, and skips without it.
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null 2>&1 || echo "setup: could not install chromium" >&2
  else
    echo "setup: install chromium (sudo apt-get install chromium) to run the viewer's browser test" >&2
  fi
fi
[ -d .venv ] || python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
# torch's CPU wheel by exact version; any torch >= 2.11 already installed is kept.
python -c "import torch" 2>/dev/null || python -m pip install -q torch==2.13.0
# ray: the tests of the Ray executor (tests/runtime/test_ray_executor.py) run in CI too.
python -m pip install -q -e '.[dev,runtime,train,ray]'
echo "setup: ready (. .venv/bin/activate)"
