"""kagent's evaluator: builds, runs and grades a workspace against a problem (README.md here)."""
