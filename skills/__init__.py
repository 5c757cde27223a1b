"""kagent skills: the agent's tools, the evaluator behind them, and the harness."""


def load_skills() -> None:
    """Import every skill module so that each registers itself (skills.base.SKILLS)."""
    import skills.eval_skills  # noqa: F401
    import skills.files  # noqa: F401
