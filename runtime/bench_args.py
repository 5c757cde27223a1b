"""`kagent bench`: the results table for a solution set or a policy over a problem set.

    kagent bench PROBLEMS... (--solutions DIR | --reference | --reference-model | --policy-url URL
                              | --daemon URL) --out DIR [--backend cuda|cpu] [--attempts K]
                 [--model NAME] [--gpus 0,1,..] [--compile-jobs N] [--retry-faults]
                 [--config FILE] [--set KEY=VALUE ...]
    kagent bench compare A B [--resamples N]

Evaluation settings are kagentd's (`scheduler.eval.*`, `scheduler.limits.*`, `policy.*` of its
TOML file, the environment, `--set`), so a bench grades the way the daemon rewards.
"""

from __future__ import annotations

# The arguments only (registered by runtime/cli.py, run by runtime/bench_cli.py): every `kagent`
# command builds the whole parser, so nothing heavy is imported here.
import argparse
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bench", help="the results table for a solution set or a policy over problems",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("problems", nargs="+", help="problem files or folders (levelN/ or a root of levelN/); "
                   "`compare A B` compares two --out folders")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--solutions", type=Path, default=None, metavar="DIR", help="grade this solution folder (no LLM)")
    src.add_argument("--reference", action="store_true", help="grade the bundled reference solutions")
    src.add_argument("--reference-model", action="store_true",
                     help="grade each problem's own Model as its ModelNew (a check of the harness: speedup ~1)")
    src.add_argument("--policy-url", default=None, metavar="URL", help="run agent episodes against this OpenAI-compatible /v1 URL")
    p.add_argument("--daemon", default=None, metavar="URL",
                   help="run the episodes in the kagentd at URL (its policy and settings) instead of in process")
    p.add_argument("--api-key", default=None, help="--daemon's bearer key (default: $KAGENT_API_KEY, else http.api_key)")
    p.add_argument("--model", default=None, help="model name to request (default: policy.model of the config)")
    p.add_argument("--attempts", type=int, default=1, metavar="K", help="attempts per problem, K (default 1)")
    p.add_argument("--out", type=Path, default=None, metavar="DIR", help="results folder (resumed when it holds results)")
    p.add_argument("--backend", choices=["cuda", "cpu"], default=None, help="default: scheduler.eval.backend")
    p.add_argument("--gpus", default=None, help="comma list of GPUs, one slot each (default: every visible GPU)")
    p.add_argument("--compile-jobs", type=int, default=None,
                   help="load_inline solutions built ahead at once (default: half the cores)")
    p.add_argument("--retry-faults", action="store_true", help="on resume, run again the rows that were faults")
    p.add_argument("--db", type=Path, default=None, help="episode store of --policy-url (default OUT/episodes.db)")
    p.add_argument("--config", type=Path, default=None, help="kagentd's TOML config (default: as kagentd finds it)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a config setting, e.g. scheduler.eval.baselines='[\"eager\"]' (repeatable)")
    p.add_argument("--unsafe-no-sandbox", action="store_true", help="run candidate code without bubblewrap")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (one line per row still)")
    p.add_argument("--resamples", type=int, default=10_000, help="compare: bootstrap resamples (default 10000)")


class UsageError(Exception):
    """Bad input on the command line; exit status 2."""
