"""The kernel audit's profiled time against the judged time, per reference solution, from the JUnit
file of a GPU run (tests/skills/evaluator/test_gpu_eval.py records both as test properties).

    python3 benchmarks/audit_ratios.py benchmarks/results/gpu-junit-audit-h100.xml --out audit-ratios-h100

Prints a table (solution, owners, profiled us, judged us, ratio) and writes benchmarks/results/OUT.json:
the evidence for kernel_audit.AUDIT_FACTOR (a fair kernel's ratio must stay far below it).
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import environment, table, write_result  # noqa: E402
from skills.evaluator.kernel_audit import AUDIT_FACTOR, AUDIT_SLACK_US  # noqa: E402


def read(junit: Path) -> list[dict[str, Any]]:
    """One row per test case that recorded audit properties."""
    rows = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        if "audit_profiled_us" not in props:
            continue
        name = case.get("name", "?")
        profiled = float(props["audit_profiled_us"] or 0.0)
        raw = props.get("audit_judged_us")
        judged = float(raw) if raw is not None and raw != "None" else None
        rows.append({"test": name[name.find("[") + 1:].rstrip("]") if "[" in name else name,
                     "owners": props.get("audit_owners", ""), "profiled_us": profiled, "judged_us": judged,
                     "ratio": profiled / judged if judged else None,
                     "reward": props.get("reward"), "speedup_eager": props.get("speedup_eager"),
                     "passed": case.find("failure") is None and case.find("error") is None})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("junit", type=Path)
    ap.add_argument("--out", default="audit-ratios")
    args = ap.parse_args()
    rows = read(args.junit)
    print(table(["solution", "owners", "profiled us", "judged us", "ratio", "reward", "vs eager", "passed"],
                [[r["test"], r["owners"], r["profiled_us"], r["judged_us"], r["ratio"], r["reward"], r["speedup_eager"],
                  r["passed"]] for r in rows]))
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    summary = {"solutions": len(rows), "max_ratio": max(ratios) if ratios else None,
               "audit_factor": AUDIT_FACTOR, "audit_slack_us": AUDIT_SLACK_US}
    print(f"max profiled/judged {summary['max_ratio']} (flag above {AUDIT_FACTOR}x + {AUDIT_SLACK_US} us)")
    path = write_result(args.out, {"environment": environment(), "junit": str(args.junit), "summary": summary,
                                   "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
