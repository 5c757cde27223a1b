-- kagent store, schema 3: a baseline's key names how it was timed (skills.baselines.BaselineKey.timing,
-- from TimingConfig.method()), so a change of timing method re-times the baselines instead of
-- comparing candidates timed one way with baselines timed another. Rows of schema 2 keep
-- timing = '' (timed before the method was recorded): kept for history, never matched again.

CREATE TABLE baselines_v3 (
    problem_id    TEXT NOT NULL,
    device        TEXT NOT NULL,         -- GPU name, or cpu:<model>
    torch_version TEXT NOT NULL,
    precision     TEXT NOT NULL,
    sizes         TEXT NOT NULL,         -- default or small
    timing        TEXT NOT NULL DEFAULT '',  -- TimingConfig.method(): how the calls were timed
    entry         TEXT NOT NULL CHECK (json_valid(entry)),  -- skills.baselines.BaselineEntry
    measured_at   REAL NOT NULL,
    eager_us      REAL GENERATED ALWAYS AS (json_extract(entry, '$.eager.per_call_us.median')) VIRTUAL,
    compile_us    REAL GENERATED ALWAYS AS (json_extract(entry, '$.compile.per_call_us.median')) VIRTUAL,
    PRIMARY KEY (problem_id, device, torch_version, precision, sizes, timing)
) WITHOUT ROWID;

INSERT INTO baselines_v3 (problem_id, device, torch_version, precision, sizes, timing, entry, measured_at)
    SELECT problem_id, device, torch_version, precision, sizes, '', entry, measured_at FROM baselines;
DROP TABLE baselines;
ALTER TABLE baselines_v3 RENAME TO baselines;
