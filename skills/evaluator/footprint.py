"""ModelNew's memory footprint, measured by the parent from outside the candidate's process (whose
own numbers are not trusted): its tree's peak during its calls less what it held just before
model_new.py was imported, so its weights, buffers, scratch, outputs and intermediates count,
wherever in its process they were made (docs/reward.md).

- cuda: NVML's per-process figure of the tree (skills/evaluator/nvml.py: sampled every 10 ms, and once more
  as each stretch of calls begins and ends), less a CUDA context's: the candidate's comes up only
  once it has its job, just before it imports model_new.py (no reading can fall between), so the
  warm judge's, read before its job (the same interpreter, torch and GPU: 520 MiB each on the H200,
  benchmarks/results/nvml-ipc-probe-h200.json), stands in for it. The judge's arena, which the
  candidate maps, is not in the candidate's figure (the same probe);
- cpu: the kernel's peak resident set of each process of the tree (skills/evaluator/rss.py: reset as each
  stretch begins, read as it ends: nothing is missed between samples), less each one's resident
  set before the import, less the judge's arena the tree maps (the call's inputs and outputs).

    mem = CandidateFootprint.open(...);  mem.base();  [mem.begin();  calls;  mem.end()] ...;  mem.bytes
"""

from __future__ import annotations

from skills.evaluator.nvml import Nvml, TreePeaks
from skills.evaluator.results import CandidateMemoryMethod
from skills.evaluator.rss import TreeRss


class CandidateFootprint:
    """One candidate's footprint over the stretches of calls between begin() and end()."""

    def __init__(self, rss: TreeRss | None = None, nvml: Nvml | None = None, tree: TreePeaks | None = None) -> None:
        self.rss = rss
        self.nvml = nvml
        self.tree = tree
        self._base: int | None = None
        self._peak: int | None = None

    @classmethod
    def cpu(cls, root: int, judge_pid: int) -> CandidateFootprint:
        """The cpu backend's: the tree below the sandbox's outermost process `root`."""
        return cls(rss=TreeRss(root, judge_pid))

    @classmethod
    def cuda(cls, nvml: Nvml, tree: TreePeaks) -> CandidateFootprint:
        """The cuda backend's: the sampler's tree named `candidate`."""
        return cls(nvml=nvml, tree=tree)

    def _now(self, name: str = "candidate") -> int | None:
        assert self.nvml is not None and self.tree is not None
        samples = self.nvml.processes()
        self.tree.add(samples)
        return self.tree.sums(samples).get(name)

    def base(self) -> None:
        """cpu: just before model_new.py is imported (the candidate's worker warm: torch imported);
        cuda: before the judge's job (the judge warm: its CUDA context alone)."""
        if self.rss is not None:
            self.rss.base()
        else:
            self._base = self._now("judge")  # None when NVML does not list it: then nothing is measured

    def begin(self) -> None:
        """Just before a stretch of the candidate's calls."""
        if self.rss is not None:
            self.rss.begin()
        elif self.tree is not None:
            self.tree.open_window()
            self._now()

    def end(self) -> None:
        """Just after it (the candidate idle again)."""
        if self.rss is not None:
            self.rss.end()
            return
        if self.tree is None:
            return
        self._now()
        peak = self.tree.close_window().get("candidate")
        if peak is not None:
            self._peak = peak if self._peak is None else max(self._peak, peak)

    @property
    def bytes(self) -> int | None:
        """The footprint (None: nothing measured yet, or no reading before the import)."""
        if self.rss is not None:
            return self.rss.peak
        if self._base is None or self._peak is None:
            return None
        return max(0, self._peak - self._base)

    @property
    def method(self) -> CandidateMemoryMethod | None:
        if self.bytes is None:
            return None
        if self.rss is not None:
            return "peak_rss" if self.rss.reset_ok else "lifetime_rss"
        return "nvml"
