-- kagent store, schema 1 (DESIGN.md §7). Applied by runtime/store/sql.py (migrate), which sets
-- PRAGMA user_version to the number of the last migration applied.
--
-- Conventions
--   * Times are Unix seconds (REAL); durations are seconds (REAL).
--   * NULL means "unknown / not measured", never a sentinel number.
--   * Booleans are INTEGER 0/1 with a CHECK.
--   * Token arrays are BLOBs without a header: token ids as little-endian int32, logprobs as
--     little-endian float32, 4 bytes per element (element count = length(blob) / 4). The view
--     turn_arrays decodes them to JSON arrays for sqlite3 / Datasette users.
--   * *_json / record / result / entry columns hold JSON text (json_valid is checked).

CREATE TABLE problems (
    id        TEXT PRIMARY KEY,            -- content hash of the problem source
    name      TEXT NOT NULL,               -- e.g. level1/01_relu
    level     INTEGER,                     -- KernelBench level (1-3), NULL when not known
    source    TEXT NOT NULL,               -- where it came from: kagent, kernelbench, synth, request, ...
    path      TEXT,                        -- file relative to the problems root; NULL when it arrived over HTTP
    precision TEXT,                        -- precision policy (fp32, tf32, bf16, fp16)
    tier      INTEGER,                     -- curriculum difficulty tier
    code      TEXT,                        -- the problem source itself (replay and HTTP problems need it)
    manifest  TEXT CHECK (manifest IS NULL OR json_valid(manifest)),  -- skills.problem.ManifestRow
    added     REAL NOT NULL,
    updated   REAL NOT NULL
);
CREATE INDEX problems_name ON problems (name);

CREATE TABLE policies (
    version   INTEGER PRIMARY KEY,         -- 0 = the base model, +1 per published checkpoint
    path      TEXT NOT NULL,               -- checkpoint directory (step_N/) or model name
    created   REAL NOT NULL
);

CREATE TABLE episodes (
    id             INTEGER PRIMARY KEY,
    problem_id     TEXT NOT NULL REFERENCES problems (id),
    policy_version INTEGER REFERENCES policies (version),   -- version in force when it started
    origin         TEXT NOT NULL DEFAULT 'rollout' CHECK (origin IN ('rollout', 'request', 'replay')),
    status         TEXT NOT NULL DEFAULT 'running' CHECK (status IN (
                       'running', 'submitted', 'turn_limit', 'token_limit', 'time_limit',
                       'malformed_limit', 'policy_error', 'error', 'cancelled', 'interrupted')),
    reward         REAL,                   -- NULL until graded (and for ungraded endings)
    trainable      INTEGER NOT NULL DEFAULT 1 CHECK (trainable IN (0, 1)),
    started        REAL NOT NULL,
    finished       REAL,                   -- NULL while running
    policy_seconds REAL,                   -- sum of turns.duration, set when it finishes
    tool_seconds   REAL,                   -- sum of tool_calls.duration, set when it finishes
    error          TEXT                    -- why it ended badly (NULL when it did not)
);
CREATE INDEX episodes_status ON episodes (status, trainable, policy_version);
CREATE INDEX episodes_problem ON episodes (problem_id, finished);
CREATE INDEX episodes_policy ON episodes (policy_version);

-- One row per LLM call. The context of call k is (context of call k-1 + its completion)
-- truncated to prompt_prefix tokens, followed by prompt_ids: with token-in generation the
-- prefix is the whole previous context and prompt_ids holds only the rendered tool results.
CREATE TABLE turns (
    id                INTEGER PRIMARY KEY,
    episode_id        INTEGER NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
    idx               INTEGER NOT NULL CHECK (idx >= 0),
    policy_version    INTEGER REFERENCES policies (version),
    messages          TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(messages)),  -- messages added before this call
    prompt_prefix     INTEGER NOT NULL DEFAULT 0 CHECK (prompt_prefix >= 0),
    prompt_ids        BLOB CHECK (prompt_ids IS NULL OR length(prompt_ids) % 4 = 0),
    completion_ids    BLOB CHECK (completion_ids IS NULL OR length(completion_ids) % 4 = 0),
    logprobs          BLOB CHECK (logprobs IS NULL OR completion_ids IS NULL
                                  OR length(logprobs) = length(completion_ids)),
    sampling          TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(sampling)),
    finish_reason     TEXT,                -- stop, length, tool_calls, ... as the server said
    text              TEXT NOT NULL,       -- the generated text
    tool_calls        TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(tool_calls)),  -- [{id, name, arguments}]
    prompt_tokens     INTEGER,             -- usage as the server reported it
    completion_tokens INTEGER,
    duration          REAL,                -- seconds of the call
    created           REAL NOT NULL,
    n_prompt_ids      INTEGER GENERATED ALWAYS AS (length(prompt_ids) / 4) VIRTUAL,
    n_completion_ids  INTEGER GENERATED ALWAYS AS (length(completion_ids) / 4) VIRTUAL,
    UNIQUE (episode_id, idx)
);

CREATE TABLE tool_calls (
    id         INTEGER PRIMARY KEY,
    turn_id    INTEGER NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
    episode_id INTEGER NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
    idx        INTEGER NOT NULL CHECK (idx >= 0),   -- position among the turn's calls
    call_id    TEXT,                    -- the id the model gave the call (tool_call_id)
    skill      TEXT NOT NULL,           -- name as the model wrote it (may name no skill)
    args       TEXT NOT NULL,           -- arguments as the model wrote them (usually JSON; may be malformed)
    ok         INTEGER NOT NULL CHECK (ok IN (0, 1)),
    result     TEXT NOT NULL,           -- text returned to the model
    record     TEXT CHECK (record IS NULL OR json_valid(record)),  -- the skill's structured record
    duration   REAL,
    created    REAL NOT NULL,
    UNIQUE (turn_id, idx)
);
CREATE INDEX tool_calls_episode ON tool_calls (episode_id);
CREATE INDEX tool_calls_skill ON tool_calls (skill);

CREATE TABLE evaluations (
    id              INTEGER PRIMARY KEY,
    episode_id      INTEGER REFERENCES episodes (id) ON DELETE CASCADE,  -- NULL: graded outside an episode
    tool_call_id    INTEGER REFERENCES tool_calls (id) ON DELETE CASCADE, -- the call that asked for it
    problem_id      TEXT NOT NULL REFERENCES problems (id),
    mode            TEXT NOT NULL CHECK (mode IN ('test', 'profile', 'final')),
    backend         TEXT NOT NULL CHECK (backend IN ('cuda', 'cpu')),
    compiled        INTEGER NOT NULL CHECK (compiled IN (0, 1)),
    correct         INTEGER NOT NULL CHECK (correct IN (0, 1)),
    stage           TEXT NOT NULL,      -- last stage reached (done when it finished)
    flags           TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(flags)),  -- names of the checks that fired
    reward          REAL,
    reward_fn       TEXT,
    candidate_us    REAL,               -- median time per call of the candidate
    speedup_eager   REAL,               -- eager median / candidate median
    speedup_compile REAL,               -- torch.compile median / candidate median
    device          TEXT,               -- GPU name (NULL on cpu)
    torch_version   TEXT NOT NULL,
    precision       TEXT NOT NULL,
    seconds         REAL,               -- wall time of the whole evaluation
    result          TEXT NOT NULL CHECK (json_valid(result)),  -- skills.results.EvalResult
    created         REAL NOT NULL
);
CREATE INDEX evaluations_episode ON evaluations (episode_id, mode);
CREATE INDEX evaluations_problem ON evaluations (problem_id, mode, created);

-- Baseline timings of the environment (skills.baselines). Not tied to problems rows:
-- `kagent eval` measures baselines of problems the daemon never saw.
CREATE TABLE baselines (
    problem_id    TEXT NOT NULL,
    device        TEXT NOT NULL,         -- GPU name, or cpu:<model>
    torch_version TEXT NOT NULL,
    precision     TEXT NOT NULL,
    sizes         TEXT NOT NULL,         -- default or small
    entry         TEXT NOT NULL CHECK (json_valid(entry)),  -- skills.baselines.BaselineEntry
    measured_at   REAL NOT NULL,
    eager_us      REAL GENERATED ALWAYS AS (json_extract(entry, '$.eager.per_call_us.median')) VIRTUAL,
    compile_us    REAL GENERATED ALWAYS AS (json_extract(entry, '$.compile.per_call_us.median')) VIRTUAL,
    PRIMARY KEY (problem_id, device, torch_version, precision, sizes)
) WITHOUT ROWID;

CREATE TABLE curriculum (
    problem_id     TEXT PRIMARY KEY REFERENCES problems (id) ON DELETE CASCADE,
    tier           INTEGER NOT NULL,
    attempts       INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    successes      INTEGER NOT NULL DEFAULT 0 CHECK (successes >= 0 AND successes <= attempts),
    mean_reward    REAL,                 -- NULL before the first attempt
    recent_success REAL,                 -- success rate over the trainer's recent window
    weight         REAL NOT NULL DEFAULT 1.0 CHECK (weight >= 0),
    updated        REAL NOT NULL
);
CREATE INDEX curriculum_tier ON curriculum (tier);

CREATE TABLE train_steps (
    id             INTEGER PRIMARY KEY,
    run            TEXT NOT NULL,        -- trainer run name (its output directory)
    stage          TEXT NOT NULL CHECK (stage IN ('rft', 'value', 'ppo')),
    step           INTEGER NOT NULL CHECK (step >= 0),
    policy_version INTEGER REFERENCES policies (version),  -- produced by this step (NULL: none published)
    episodes       TEXT NOT NULL CHECK (json_valid(episodes)),  -- ids of the episodes consumed
    metrics        TEXT NOT NULL CHECK (json_valid(metrics)),   -- {name: number}
    created        REAL NOT NULL,
    UNIQUE (run, stage, step)
);

-- Decoding helpers for the inspection view (pure SQL, so the sqlite3 shell and Datasette work
-- without extension functions).
CREATE TABLE _hex_byte (hex TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO _hex_byte
WITH RECURSIVE b(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM b WHERE v < 255)
SELECT substr('0123456789ABCDEF', v / 16 + 1, 1) || substr('0123456789ABCDEF', v % 16 + 1, 1), v FROM b;

-- float32 = sign * significand * scale[exponent]; scale = 2^(e - 150), subnormals use 2^-149.
CREATE TABLE _f32_scale (e INTEGER PRIMARY KEY, scale REAL NOT NULL);
INSERT INTO _f32_scale
WITH RECURSIVE up(e, s) AS (SELECT 150, 1.0 UNION ALL SELECT e + 1, s * 2 FROM up WHERE e < 254),
     down(e, s) AS (SELECT 149, 0.5 UNION ALL SELECT e - 1, s / 2 FROM down WHERE e > 1)
SELECT e, s FROM up UNION ALL SELECT e, s FROM down UNION ALL SELECT 0, 1.401298464324817e-45;

-- Token arrays as JSON (computed per row on demand: filter on turn_id or episode_id).
-- Non-finite logprobs (inf, NaN) come out as null: JSON has no spelling for them.
CREATE VIEW turn_arrays AS
SELECT
    t.id AS turn_id, t.episode_id, t.idx, t.prompt_prefix,
    CASE WHEN t.prompt_ids IS NULL THEN NULL ELSE (
        WITH RECURSIVE i(n) AS (SELECT 0 WHERE length(t.prompt_ids) >= 4
                                UNION ALL SELECT n + 1 FROM i WHERE n + 1 < length(t.prompt_ids) / 4),
             u(n, v) AS (SELECT n, (SELECT value FROM _hex_byte WHERE hex = substr(hex(substr(t.prompt_ids, 4 * n + 1, 4)), 1, 2))
                                 + (SELECT value FROM _hex_byte WHERE hex = substr(hex(substr(t.prompt_ids, 4 * n + 1, 4)), 3, 2)) * 256
                                 + (SELECT value FROM _hex_byte WHERE hex = substr(hex(substr(t.prompt_ids, 4 * n + 1, 4)), 5, 2)) * 65536
                                 + (SELECT value FROM _hex_byte WHERE hex = substr(hex(substr(t.prompt_ids, 4 * n + 1, 4)), 7, 2)) * 16777216
                         FROM i)
        SELECT json_group_array(CASE WHEN v >= 2147483648 THEN v - 4294967296 ELSE v END)
        FROM (SELECT v FROM u ORDER BY n)) END AS prompt_ids,
    CASE WHEN t.completion_ids IS NULL THEN NULL ELSE (
        WITH RECURSIVE i(n) AS (SELECT 0 WHERE length(t.completion_ids) >= 4
                                UNION ALL SELECT n + 1 FROM i WHERE n + 1 < length(t.completion_ids) / 4),
             u(n, v) AS (SELECT n, (SELECT value FROM _hex_byte WHERE hex = substr(hex(substr(t.completion_ids, 4 * n + 1, 4)), 1, 2))
                                 + (SELECT value FROM _hex_byte WHERE hex = substr(hex(substr(t.completion_ids, 4 * n + 1, 4)), 3, 2)) * 256
                                 + (SELECT value FROM _hex_byte WHERE hex = substr(hex(substr(t.completion_ids, 4 * n + 1, 4)), 5, 2)) * 65536
                                 + (SELECT value FROM _hex_byte WHERE hex = substr(hex(substr(t.completion_ids, 4 * n + 1, 4)), 7, 2)) * 16777216
                         FROM i)
        SELECT json_group_array(CASE WHEN v >= 2147483648 THEN v - 4294967296 ELSE v END)
        FROM (SELECT v FROM u ORDER BY n)) END AS completion_ids,
    CASE WHEN t.logprobs IS NULL THEN NULL ELSE (
        WITH RECURSIVE i(n) AS (SELECT 0 WHERE length(t.logprobs) >= 4
                                UNION ALL SELECT n + 1 FROM i WHERE n + 1 < length(t.logprobs) / 4),
             u(n, v) AS (SELECT n, (SELECT value FROM _hex_byte WHERE hex = substr(hex(substr(t.logprobs, 4 * n + 1, 4)), 1, 2))
                                 + (SELECT value FROM _hex_byte WHERE hex = substr(hex(substr(t.logprobs, 4 * n + 1, 4)), 3, 2)) * 256
                                 + (SELECT value FROM _hex_byte WHERE hex = substr(hex(substr(t.logprobs, 4 * n + 1, 4)), 5, 2)) * 65536
                                 + (SELECT value FROM _hex_byte WHERE hex = substr(hex(substr(t.logprobs, 4 * n + 1, 4)), 7, 2)) * 16777216
                         FROM i)
        SELECT json_group_array(CASE
                   WHEN (v >> 23) & 255 = 255 THEN NULL
                   ELSE (1 - 2 * (v >> 31))
                        * (CASE WHEN (v >> 23) & 255 = 0 THEN v & 8388607 ELSE 8388608 + (v & 8388607) END)
                        * (SELECT scale FROM _f32_scale WHERE e = (v >> 23) & 255) END)
        FROM (SELECT v FROM u ORDER BY n)) END AS logprobs
FROM turns AS t;

-- One line per episode for people: what ran, how it ended, how long it took.
CREATE VIEW episode_summary AS
SELECT
    e.id, e.problem_id, p.name AS problem, e.policy_version, e.origin, e.status, e.reward,
    e.trainable, e.started, e.finished, e.finished - e.started AS seconds,
    (SELECT count(*) FROM turns WHERE episode_id = e.id) AS turns,
    (SELECT count(*) FROM tool_calls WHERE episode_id = e.id) AS tool_calls,
    (SELECT sum(n_completion_ids) FROM turns WHERE episode_id = e.id) AS completion_tokens,
    (SELECT speedup_eager FROM evaluations WHERE episode_id = e.id AND mode = 'final'
     ORDER BY id DESC LIMIT 1) AS speedup_eager,
    (SELECT speedup_compile FROM evaluations WHERE episode_id = e.id AND mode = 'final'
     ORDER BY id DESC LIMIT 1) AS speedup_compile,
    e.error
FROM episodes AS e JOIN problems AS p ON p.id = e.problem_id;
