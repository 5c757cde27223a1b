"""What `kagent bench` grades: the problems named on the command line and, for each, its solution.

Problems: files, `levelN` folders of files, or roots holding `levelN` folders (the bundled
`problems/`, a KernelBench checkout's `KernelBench/`), in level then problem-number order.

Solutions of a problem `levelN/STEM` in `--solutions DIR`, the first that exists:

    DIR/levelN/STEM/           a workspace (model_new.py + kernels/)
    DIR/levelN/STEM.py         a single KernelBench-style file (may build its kernels with load_inline)
    DIR/STEM/, DIR/STEM.py     the same without the level folder
    DIR/level_N_problem_P_sample_S_kernel.py   KernelBench's generation names (P: STEM's leading
                               number; S: the attempt), as its eval_from_generations reads them
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

PROJECT_ROOT = Path(__file__).resolve().parent.parent
REFERENCE_ROOT = PROJECT_ROOT / "problems" / "solutions"
_INLINE = re.compile(r"\bload_inline\b|\bcpp_extension\b")


class BenchProblem(msgspec.Struct, frozen=True, kw_only=True):
    """A problem file to grade."""

    path: str
    """The file."""
    name: str
    """`levelN/STEM` inside a levelN folder, else STEM."""
    level: int | None
    """N of the levelN folder (None outside one)."""
    id: str
    """Content hash of the source (skills.evaluator.problem.source_id)."""

    @property
    def stem(self) -> str:
        return Path(self.path).stem

    @property
    def number(self) -> int | None:
        """The leading number of the stem (KernelBench's problem id), if any."""
        m = re.match(r"(\d+)", self.stem)
        return int(m[1]) if m else None


def level_of(dirname: str) -> int | None:
    from skills.evaluator.problem import (
        level_of as of,  # skills.evaluator.problem imports torch: not at `kagent` start
    )

    return of(dirname)


def _problem(path: Path) -> BenchProblem:
    from skills.evaluator.problem import source_id

    level = level_of(path.parent.name)
    name = f"{path.parent.name}/{path.stem}" if level is not None else path.stem
    return BenchProblem(path=str(path), name=name, level=level, id=source_id(path.read_text(encoding="utf-8")))


def _files(folder: Path) -> list[Path]:
    return [f for f in folder.glob("*.py") if f.is_file() and not f.name.startswith("_")]


def collect_problems(paths: list[Path]) -> list[BenchProblem]:
    """Every problem file under `paths` (ValueError naming a path that holds none)."""
    found: dict[Path, None] = {}
    for p in paths:
        if p.is_file():
            files = [p]
        elif p.is_dir():
            levels = [d for d in p.iterdir() if d.is_dir() and level_of(d.name) is not None]
            files = [f for d in levels for f in _files(d)] if levels else _files(p)
        else:
            raise ValueError(f"{p} does not exist")
        if not files:
            raise ValueError(f"{p} holds no problem files (*.py, or levelN/*.py)")
        for f in files:
            found[f.resolve()] = None
    problems = [_problem(f) for f in found]
    return sorted(problems, key=lambda q: (q.level is None, q.level or 0, q.number is None, q.number or 0, q.name))


def _candidates(solutions: Path, problem: BenchProblem) -> list[Path]:
    level_dir = solutions / Path(problem.path).parent.name
    return [level_dir / problem.stem, level_dir / f"{problem.stem}.py", solutions / problem.stem,
            solutions / f"{problem.stem}.py"]


def usable(path: Path) -> bool:
    return (path.is_dir() and (path / "model_new.py").is_file()) or (path.is_file() and path.suffix == ".py")


def find_solutions(solutions: Path, problem: BenchProblem, attempts: int) -> list[Path | None]:
    """The solution of each attempt 0 .. attempts-1 (None where there is none). Only KernelBench's
    sample names give attempts past the first."""
    out: list[Path | None] = [None] * attempts
    for path in _candidates(solutions, problem):
        if usable(path):
            out[0] = path
            break
    if problem.level is not None and problem.number is not None:
        for s in range(attempts):
            kb = solutions / f"level_{problem.level}_problem_{problem.number}_sample_{s}_kernel.py"
            if out[s] is None and kb.is_file():
                out[s] = kb
    return out


def reference_solution(problem: BenchProblem, backend: str, root: Path = REFERENCE_ROOT) -> Path | None:
    """The bundled reference solution (problems/solutions/BACKEND/levelN/STEM/) of a problem, if any."""
    if problem.level is None:
        return None
    path = root / backend / f"level{problem.level}" / problem.stem
    return path if usable(path) else None


def reference_model_source(problem_source: str) -> str:
    """model_new.py that is the problem's own Model (a harness check: correct, speedup about 1;
    graded with the static checks off, since it runs torch compute in forward by design)."""
    return problem_source.rstrip() + "\n\n\nclass ModelNew(Model):\n    \"\"\"The reference itself.\"\"\"\n"


def builds_inline(solution: Path) -> bool:
    """A KernelBench-style solution: model_new.py builds its own kernels (load_inline) and there is
    no kernels/ folder for kagent's build step."""
    model_new = solution / "model_new.py" if solution.is_dir() else solution
    if solution.is_dir() and (solution / "kernels").is_dir() and any((solution / "kernels").iterdir()):
        return False
    try:
        return bool(_INLINE.search(model_new.read_text(encoding="utf-8", errors="replace")))
    except OSError:
        return False
