"""The API key from a browser. A browser cannot send `Authorization: Bearer`, but it asks for a
user name and password when a page answers 401 with a Basic challenge. So, for /ui paths only:
Basic credentials whose password is the key are handed on as the Bearer header runtime.server's
Guard checks (the user name is ignored), and Guard's 401 becomes an HTML page with that
challenge. Guard alone decides who gets in; this wrapper only translates.
"""

from __future__ import annotations

import base64
import binascii

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from runtime.ui.app import error_page

PREFIX = "/ui"
REALM = 'Basic realm="kagent", charset="UTF-8"'


def under_ui(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def bearer_from_basic(value: bytes) -> bytes | None:
    """`Basic base64(user:key)` -> `Bearer key` (None: not Basic credentials)."""
    scheme, _, encoded = value.partition(b" ")
    if scheme.lower() != b"basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError):
        return b"Bearer "  # unreadable credentials: Guard refuses them as a wrong key
    return b"Bearer " + decoded.partition(b":")[2]


class BrowserAuth:
    """Wraps the Guarded app (pure ASGI)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not under_ui(scope["path"]):
            await self.app(scope, receive, send)
            return
        headers = []
        for key, value in scope["headers"]:
            if key.lower() == b"authorization":
                value = bearer_from_basic(value) or value
            headers.append((key, value))
        refused = False

        async def send_or_challenge(message: Message) -> None:
            nonlocal refused
            if message["type"] == "http.response.start" and message["status"] == 401:
                refused = True
                return
            if not refused:
                await send(message)
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                page = error_page(401, "API key needed",
                                  "kagentd has an API key (http.api_key): log in with any user name and the key as"
                                  " the password, or send `Authorization: Bearer <key>`.")
                page.headers["WWW-Authenticate"] = REALM
                await page(scope, receive, send)

        await self.app({**scope, "headers": headers}, receive, send_or_challenge)
