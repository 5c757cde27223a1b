-- kagent store, schema 6: each tool call records whether the episode loop judged it malformed
-- (runtime/episode.py, Episode.call): a call that could not be parsed, names a tool the episode
-- was not offered, or has arguments its skill cannot decode is answered with a message the model
-- can read and counted, and nothing runs.
--
--   malformed  1: judged malformed; 0: run; NULL: not recorded.
--
-- Rows of schema 5 keep NULL: the verdict was not stored then. The trainer's RFT filter
-- (trainer/data.py, malformed_call) reads the column and, where it is NULL, decides as it did
-- before schema 6, with the daemon's skills; so an old store still trains, with the old decision.

ALTER TABLE tool_calls ADD COLUMN malformed INTEGER CHECK (malformed IN (0, 1));
