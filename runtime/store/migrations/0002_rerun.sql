-- kagent store, schema 2: an episode waiting for its re-run says so durably, so a re-run that
-- has not started when the daemon stops (a drain, a crash) is re-queued at the next start.
--
--   rerun_pending  1 while the daemon owes this episode a re-run: set when a start marks it
--                  `interrupted` (not for replays), or when a re-queued request ends in
--                  policy_error with attempts left; cleared in the same transaction that
--                  inserts the episode re-running it, so a re-run is never lost and never doubled.
--   rerun_of       on that new episode: the episode it re-runs (NULL for a fresh one).
--
-- Episodes `interrupted` under schema 1 keep rerun_pending = 0: the old code re-queued them in
-- memory only, so whether they were re-run is unknown, and none is re-run twice.

ALTER TABLE episodes ADD COLUMN rerun_pending INTEGER NOT NULL DEFAULT 0 CHECK (rerun_pending IN (0, 1));
ALTER TABLE episodes ADD COLUMN rerun_of INTEGER REFERENCES episodes (id) ON DELETE SET NULL;
CREATE INDEX episodes_rerun_pending ON episodes (id) WHERE rerun_pending = 1;
CREATE INDEX episodes_rerun_of ON episodes (rerun_of) WHERE rerun_of IS NOT NULL;
