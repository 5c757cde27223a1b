-- kagent store, schema 5: each evaluation names the executor that ran it (EvalResult.executor):
-- 'local' (a slot of the daemon's machine, or `kagent eval`) or 'ray:<node>:<actor>' (an
-- evaluation actor, docs/ray.md). Rows of schema 4 ran locally: there was no other executor.

ALTER TABLE evaluations ADD COLUMN executor TEXT NOT NULL DEFAULT 'local';
CREATE INDEX evaluations_executor ON evaluations (executor, created);
