"""The layout of a streamed `POST /v1/chat/completions` answer, shared by the HTTP server that
writes it and `kagent solve` that reads it: progress lines, then `SEPARATOR`, then the answer."""

from __future__ import annotations

SEPARATOR = "\n---\n\n"
"""Starts the content delta that holds the answer (the markdown of the best verified ModelNew)."""
