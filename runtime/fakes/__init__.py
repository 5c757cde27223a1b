"""Fakes for tests and demos: the LLM alone (a scripted policy server), as no weights are available."""
