-- kagent store, schema 4: one convention for an episode's token counts, shared by episode_summary
-- and `kagent episodes show` (runtime/transcript.py): per turn, the count the server reported
-- (OpenAI `usage`), else the length of the stored token ids (exact), else NULL ("not reported");
-- an episode's count sums its turns' counts and is NULL when no turn has one. queries.usage
-- counts the same way but answers 0 for NULL (OpenAI's usage has no "not reported"). Under
-- schema 3 completion_tokens counted stored token ids only, so a chat server without token ids
-- read NULL here while the transcript printed 0 prompt tokens. New column: prompt_tokens.

DROP VIEW episode_summary;

CREATE VIEW episode_summary AS
SELECT
    e.id, e.problem_id, p.name AS problem, e.policy_version, e.origin, e.status, e.reward,
    e.trainable, e.started, e.finished, e.finished - e.started AS seconds,
    (SELECT count(*) FROM turns WHERE episode_id = e.id) AS turns,
    (SELECT count(*) FROM tool_calls WHERE episode_id = e.id) AS tool_calls,
    (SELECT sum(coalesce(prompt_tokens, prompt_prefix + n_prompt_ids)) FROM turns
     WHERE episode_id = e.id) AS prompt_tokens,
    (SELECT sum(coalesce(completion_tokens, n_completion_ids)) FROM turns
     WHERE episode_id = e.id) AS completion_tokens,
    (SELECT speedup_eager FROM evaluations WHERE episode_id = e.id AND mode = 'final'
     ORDER BY id DESC LIMIT 1) AS speedup_eager,
    (SELECT speedup_compile FROM evaluations WHERE episode_id = e.id AND mode = 'final'
     ORDER BY id DESC LIMIT 1) AS speedup_compile,
    e.error
FROM episodes AS e JOIN problems AS p ON p.id = e.problem_id;
