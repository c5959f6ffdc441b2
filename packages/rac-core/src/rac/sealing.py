"""Sealing the undo data of log records: plain JSON by default, encrypted at rest with a key.

A record's ``undo`` holds what undoing it needs, exactly as the call had it, secret-named values
included (a ``cancel_token``), because recovery in a fresh process must call the compensator
with them. The SQL stores keep it in one column of the records table (``records.undo`` in
SQLite, ``rac_records.undo`` in PostgreSQL) and nowhere else; displays, events and exports never
show it.

When the environment variable ``RAC_LOG_KEY`` holds a key, that column is encrypted with
AES-256-GCM (the ``cryptography`` package: the core's ``crypto`` extra), bound to the
record's ``(run_id, seq)`` so a sealed value cannot be moved to another record.

The key is 32 random bytes written as URL-safe base64 (44 characters, padding optional).
Make one with :func:`generate_key` or ``python -m rac.sealing``. A log remembers the id of the
key it was first opened with (a hash, never the key); opening it later without a key, or with a
different one, raises :class:`SealingError` at once, naming both ids. Records written before the
key was set stay readable as plain JSON.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any

from rac.errors import StoreError

__all__ = ["KEY_ENV", "SEALED_PREFIX", "Sealer", "SealingError", "generate_key", "key_id",
           "parse_key"]

#: The environment variable holding the log key.
KEY_ENV = "RAC_LOG_KEY"
#: How sealed column text starts: ``rac-sealed:v1:<key id>:<base64 of nonce + ciphertext>``.
SEALED_PREFIX = "rac-sealed:v1:"
_NONCE_BYTES = 12
_KEY_BYTES = 32


class SealingError(StoreError):
    """Undo data cannot be sealed or unsealed: no key, a wrong key, a malformed key, altered
    data, or the ``cryptography`` package missing. The message says which and what to do."""


def generate_key() -> str:
    """A new random log key, in the form ``RAC_LOG_KEY`` expects (URL-safe base64, 32 bytes)."""
    return base64.urlsafe_b64encode(os.urandom(_KEY_BYTES)).decode("ascii")


def parse_key(text: str | bytes) -> bytes:
    """The 32 key bytes of a URL-safe base64 key; a SealingError if it is anything else."""
    raw = text.encode("ascii", "replace") if isinstance(text, str) else text
    raw = raw.strip()
    try:
        key = base64.urlsafe_b64decode(raw + b"=" * (-len(raw) % 4))
    except (binascii.Error, ValueError) as e:
        raise SealingError(f"{KEY_ENV} is not URL-safe base64 ({e}); make a key with "
                           "`python -m rac.sealing`") from e
    if len(key) != _KEY_BYTES:
        raise SealingError(f"{KEY_ENV} decodes to {len(key)} bytes, not {_KEY_BYTES}; make a key "
                           "with `python -m rac.sealing`")
    return key


def key_id(key: bytes) -> str:
    """A short public id of a key (a hash prefix), for error messages and the log's marker."""
    return hashlib.sha256(b"rac-log-key-id:" + key).hexdigest()[:16]


class Sealer:
    """Turns undo data into the text of its column and back.

    Without a key the text is compact JSON. With one it is sealed text (see
    :data:`SEALED_PREFIX`), encrypted with AES-256-GCM and bound to ``context`` (the store
    passes ``"<run_id>#<seq>"``).
    """

    def __init__(self, key: str | bytes | None = None) -> None:
        self.key_id: str | None = None
        self._aead: Any = None
        if key is None:
            return
        raw = parse_key(key)
        try:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        except ImportError as e:
            raise SealingError(
                f"{KEY_ENV} is set, so undo data must be encrypted, but the 'cryptography' "
                "package is not installed: install the core's 'crypto' extra (from a checkout: "
                "pip install './packages/rac-core[crypto]')") from e
        self._aead = AESGCM(raw)
        self.key_id = key_id(raw)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Sealer:
        """A sealer with the key in ``RAC_LOG_KEY``, or a plain one when it is unset or empty."""
        env = os.environ if environ is None else environ
        value = env.get(KEY_ENV, "").strip()
        return cls(value or None)

    @property
    def encrypts(self) -> bool:
        """True when this sealer has a key."""
        return self._aead is not None

    def seal(self, value: dict[str, Any] | None, context: str) -> str | None:
        """The column text for ``value`` (None stays None)."""
        if value is None:
            return None
        try:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError) as e:
            raise StoreError(f"the undo data of record {context} is not JSON-safe: {e}") from e
        if self._aead is None:
            return text
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, text.encode("utf-8"), context.encode("utf-8"))
        body = base64.urlsafe_b64encode(nonce + sealed).decode("ascii")
        return f"{SEALED_PREFIX}{self.key_id}:{body}"

    def unseal(self, text: str | None, context: str) -> dict[str, Any] | None:
        """The undo data a column holds; a SealingError when it is sealed and cannot be opened."""
        if text is None:
            return None
        if not text.startswith(SEALED_PREFIX):
            value: dict[str, Any] = json.loads(text)
            return value
        written_with, _, body = text[len(SEALED_PREFIX):].partition(":")
        if self._aead is None:
            raise SealingError(
                f"the undo data of record {context} is encrypted (key id {written_with}) and "
                f"{KEY_ENV} is not set: set it to the key the log was written with")
        if written_with != self.key_id:
            raise SealingError(
                f"the undo data of record {context} was encrypted with key id {written_with}, "
                f"but {KEY_ENV} is key id {self.key_id}: wrong key")
        from cryptography.exceptions import InvalidTag

        try:
            blob = base64.urlsafe_b64decode(body)
            plain = self._aead.decrypt(blob[:_NONCE_BYTES], blob[_NONCE_BYTES:],
                                       context.encode("utf-8"))
        except (InvalidTag, binascii.Error, ValueError) as e:
            raise SealingError(
                f"the undo data of record {context} cannot be decrypted with {KEY_ENV} "
                f"(key id {self.key_id}): it was altered or copied from another record") from e
        unsealed: dict[str, Any] = json.loads(plain.decode("utf-8"))
        return unsealed


def _main() -> None:  # pragma: no cover - exercised by hand
    """``python -m rac.sealing``: print a new key for ``RAC_LOG_KEY``."""
    import sys

    sys.stdout.write(generate_key() + "\n")


if __name__ == "__main__":  # pragma: no cover
    _main()
