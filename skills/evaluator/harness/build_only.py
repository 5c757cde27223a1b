"""The build-only worker: imports the workspace's model_new.py, so that its load_inline calls compile
into TORCH_EXTENSIONS_DIR, and does nothing else (no judge, no ModelNew, no device).

Run as `python -m skills.evaluator.harness.build_only WORKSPACE` by skills/evaluator/prebuild.py,
in the candidate's sandbox (it runs candidate code) with CUDA_VISIBLE_DEVICES="". Exit status 0:
model_new.py imported; 1: it raised (the traceback, with the compiler's errors, on stderr).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
from pathlib import Path


def main() -> int:
    if spec := os.environ.get("KAGENT_RLIMITS"):
        from skills.evaluator.sandbox import apply_rlimits

        apply_rlimits(spec)
    # Imported as the candidate worker imports it (same module name and sys.path), so the same
    # load_inline calls run with the same arguments.
    from skills.evaluator.harness.candidate import SHIM_DIR

    workspace = Path(sys.argv[1])
    sys.path[:0] = [str(workspace), SHIM_DIR]
    loader = importlib.util.spec_from_file_location("model_new", workspace / "model_new.py")
    assert loader is not None and loader.loader is not None
    module = importlib.util.module_from_spec(loader)
    try:
        loader.loader.exec_module(module)
    except Exception:
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
