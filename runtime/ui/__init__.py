"""kagent's viewer: a read-only web UI of the store, served by kagentd at /ui (runtime/ui/app.py
lists the pages; docs/viewer.md shows them)."""

from runtime.ui.app import make_ui
from runtime.ui.auth import BrowserAuth

__all__ = ["BrowserAuth", "make_ui"]
