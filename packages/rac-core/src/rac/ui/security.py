"""Who may act in ``rac ui``: the operator's token, the session it opens, the CSRF field every
form carries, and which addresses the server may bind.

The token is printed once when the server starts (or read from ``RAC_UI_TOKEN``). Opening
``/login?token=...`` (or posting the token to ``/login``) sets a session cookie (HttpOnly,
SameSite=Strict) signed with a secret that lives only in the server's memory; every form then
carries a CSRF field derived from that session, and every action checks both. Nothing here is
stored: restarting the server ends every session.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
from dataclasses import dataclass, field

TOKEN_ENV = "RAC_UI_TOKEN"
SESSION_COOKIE = "rac_ui_session"
NAME_COOKIE = "rac_ui_name"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


class UIConfigError(ValueError):
    """The server cannot start as asked (a non-loopback address without a token)."""


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (IPv4 and IPv6)."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class Guard:
    """The token, the session secret and the rules that follow from where the server listens.

    ``token`` None means the operator gave none: one is made and :attr:`generated` is True (the
    server prints it). Reading pages needs a session only when the server listens beyond
    loopback; acting always does.
    """

    host: str = "127.0.0.1"
    token: str | None = None
    read_only: bool = False
    generated: bool = False
    _secret: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)

    @classmethod
    def for_server(cls, host: str, *, token: str | None = None,
                   read_only: bool = False) -> Guard:
        """The guard of a server bound to ``host``: the token given, ``$RAC_UI_TOKEN``, or a new
        one. Raises :class:`UIConfigError` for a non-loopback ``host`` unless a token was given
        (an invented one would grant anyone who reads the terminal scrollback over the network
        what the operator has)."""
        given = token or os.environ.get(TOKEN_ENV) or None
        if not is_loopback(host) and not given:
            raise UIConfigError(
                f"rac ui listens on {host}, beyond this machine: set a token first "
                f"(--token or ${TOKEN_ENV}), or listen on 127.0.0.1")
        if given is not None and len(given) < 16:
            raise UIConfigError("the token must be at least 16 characters long")
        return cls(host, given or secrets.token_urlsafe(24), read_only, given is None)

    @property
    def loopback(self) -> bool:
        """True when only this machine can reach the server."""
        return is_loopback(self.host)

    def check_token(self, offered: str | None) -> bool:
        """True when ``offered`` is the token (constant-time)."""
        return offered is not None and self.token is not None and hmac.compare_digest(
            offered.encode(), self.token.encode())

    def new_session(self) -> str:
        """A signed session cookie value."""
        sid = secrets.token_urlsafe(18)
        return f"{sid}.{self._sign('session', sid)}"

    def session(self, cookie: str | None) -> str | None:
        """The session id a cookie value carries, if its signature is this server's."""
        if not cookie or "." not in cookie:
            return None
        sid, sig = cookie.rsplit(".", 1)
        return sid if hmac.compare_digest(sig, self._sign("session", sid)) else None

    def csrf(self, sid: str) -> str:
        """The CSRF field of a session's forms."""
        return self._sign("csrf", sid)

    def check_csrf(self, sid: str | None, offered: str | None) -> bool:
        """True when ``offered`` is the CSRF field of session ``sid``."""
        return bool(sid and offered) and hmac.compare_digest(str(offered), self.csrf(str(sid)))

    def sign_notice(self, text: str) -> str:
        """The signature of a notice this server shows after an action."""
        return self._sign("notice", text)

    def check_notice(self, text: str, sig: str) -> bool:
        """True when ``sig`` is this server's signature of ``text``."""
        return hmac.compare_digest(sig, self.sign_notice(text))

    def _sign(self, purpose: str, value: str) -> str:
        return hmac.new(self._secret, f"{purpose}:{value}".encode(), hashlib.sha256).hexdigest()


__all__ = ["Guard", "LOOPBACK_NAMES", "NAME_COOKIE", "SESSION_COOKIE", "TOKEN_ENV",
           "UIConfigError", "is_loopback"]
