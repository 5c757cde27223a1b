"""The store (DESIGN §7): one SQLite file, and the one contract every other part uses with it.

    from runtime.store import Store, TurnRow
    async with Store.open(path) as store:
        ...

The Store and its row types come from here; the SQL behind them from the package's modules:
`sql` (connections, migrations, writes, the rows' reads), `queries` (what the daemon, the HTTP
server, the CLI and the viewer read), `training` (what the trainer reads), `export` (JSONL and
Parquet). Nobody else writes SQL against the tables (README.md in this folder lists the files).
"""

from __future__ import annotations

from runtime.store.rows import (
    GRADED,
    CurriculumRow,
    EpisodeDetail,
    EpisodeRow,
    EpisodeStatus,
    EvaluationRow,
    Message,
    Origin,
    PolicyRow,
    ProblemRow,
    StoreBusy,
    StoreError,
    StoreInUse,
    StoreSchemaError,
    StoreWriteFailed,
    ToolCallRow,
    ToolCallSpec,
    TrainStage,
    TrainStepRow,
    TurnRow,
    problem_path,
)
from runtime.store.sql import AsyncConn, Conn
from runtime.store.store import Store, StoreBaselineCache, TrajectoryStore

__all__ = [
    # the store
    "Store", "StoreBaselineCache", "TrajectoryStore",
    # the connections a read `fn(conn)` / a write `async fn(db)` is given
    "AsyncConn", "Conn",
    # rows, modes, errors (rows.py)
    "GRADED", "CurriculumRow", "EpisodeDetail", "EpisodeRow", "EpisodeStatus", "EvaluationRow", "Message",
    "Origin", "PolicyRow", "ProblemRow", "ToolCallRow", "ToolCallSpec", "TrainStage",
    "TrainStepRow", "TurnRow", "problem_path",
    "StoreBusy", "StoreError", "StoreInUse", "StoreSchemaError", "StoreWriteFailed",
]
