"""Where proposed pairs are remembered: the log's store, keyed by the tools and their schemas.

A pair is identified by the tool, its compensator and a hash of both tools' schemas
(:func:`schema_hash`): a tool whose schema changes is a new pair, asked about again. The pairs
live in the log's store when it keeps pairs (the ``pairs`` capability,
:class:`rac.stores.PairStore`: ``put_pair``/``get_pair``/``list_pairs``), so that the model
is asked once per pair, not once per process, and a recovery in a fresh process finds the
mapping without a model. A store without the capability gets an in-process book
(:class:`MemoryPairBook`) and a warning: the pairs are then forgotten when the process ends.
"""

from __future__ import annotations

import hashlib
import json
import threading
import weakref
from typing import Any

from rac.events import emit
from rac.models import PairRecord
from rac.stores import PairStore, supports
from rac.tools import Tool

#: Status of a pair: waiting for an operator, in use, refused, or kept without being used.
PROPOSED, APPROVED, REJECTED, RECORDED = "proposed", "approved", "rejected", "recorded"
#: Status of a pair in use by ``policy="auto"`` that no person reviewed: used at once, named
#: in a warning each time it undoes a call, and open to an operator's verdict.
AUTO = "auto"
#: Status of a pair declared in code or by an MCP server (listed, never changed by RAC).
DECLARED = "declared"
#: Source of a pair a model proposed.
LLM = "llm"


class MemoryPairBook:
    """Pairs kept in this process only: the fallback for a store without the ``pairs``
    capability."""

    def __init__(self) -> None:
        self._pairs: dict[str, PairRecord] = {}
        self._lock = threading.Lock()

    def put_pair(self, pair: PairRecord) -> None:
        with self._lock:
            self._pairs[pair.key] = pair.copy()

    def get_pair(self, key: str) -> PairRecord | None:
        with self._lock:
            pair = self._pairs.get(key)
            return pair.copy() if pair is not None else None

    def list_pairs(self) -> list[PairRecord]:
        with self._lock:
            return [p.copy() for p in self._pairs.values()]


_FALLBACKS: weakref.WeakKeyDictionary[Any, MemoryPairBook] = weakref.WeakKeyDictionary()
_FALLBACK_LOCK = threading.Lock()


def pairs_known(store: Any) -> list[PairRecord]:
    """The pairs known for ``store`` (its own, or its in-process book), without making a book
    where there is none."""
    if supports(store, "pairs"):
        return list(store.list_pairs())
    with _FALLBACK_LOCK:
        try:
            book = _FALLBACKS.get(store)
        except TypeError:
            book = None
    return list(book.list_pairs()) if book is not None else []


def pair_book(store: Any) -> PairStore:
    """The pairs of ``store``: the store itself when it keeps pairs, else an in-process book
    shared by everything using that store object (with a warning, once per store)."""
    if supports(store, "pairs"):
        return store  # type: ignore[no-any-return]
    with _FALLBACK_LOCK:
        try:
            book = _FALLBACKS.get(store)
        except TypeError:  # not weak-referenceable: a book per call would forget at once
            book = None
        if book is None:
            book = MemoryPairBook()
            try:
                _FALLBACKS[store] = book
            except TypeError:
                pass
            emit("rac.pairs_not_durable", level="warning", status="memory",
                 store=getattr(store, "url", type(store).__name__),
                 error="this store does not keep compensation pairs: proposed pairs are "
                       "remembered in this process only")
        return book


def schema_hash(tool: str, schema: dict[str, Any] | None, compensator: str,
                compensator_schema: dict[str, Any] | None) -> str:
    """A hash of both tools' names and schemas (sha256 of their canonical JSON)."""
    text = json.dumps([tool, schema, compensator, compensator_schema], sort_keys=True,
                      default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def tools_hash(tool: str, tool_obj: Tool | None, compensator: str,
               compensator_obj: Tool | None) -> str:
    """:func:`schema_hash` of two tools as RAC knows them (a schema is None when unknown)."""
    return schema_hash(tool, tool_obj.schema if tool_obj is not None else None, compensator,
                       compensator_obj.schema if compensator_obj is not None else None)


def compensator_fingerprint(compensator: str, compensator_obj: Tool | None) -> str:
    """A short hash of the compensator alone (name and schema): what an approval was given
    for, so that it lapses when the compensator changes, even in a process that does not
    offer the original tool (and so cannot compute :func:`tools_hash`)."""
    schema = compensator_obj.schema if compensator_obj is not None else None
    text = json.dumps([compensator, schema], sort_keys=True, default=str,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def pair_digest(tool: str, tool_obj: Tool | None, compensator: str,
                compensator_obj: Tool | None) -> str:
    """What a pair record keeps as ``schema_hash``: :func:`tools_hash` of both tools, then
    ``/`` and the :func:`compensator_fingerprint`."""
    return (f"{tools_hash(tool, tool_obj, compensator, compensator_obj)}/"
            f"{compensator_fingerprint(compensator, compensator_obj)}")


def digest_matches(stored: str, tool: str, tool_obj: Tool | None, compensator: str,
                   compensator_obj: Tool | None) -> bool:
    """True if a pair stored with ``stored`` (its ``schema_hash``) was made for these tools as
    they are now. A process that does not offer ``tool`` itself checks the compensator alone;
    a pair stored without a compensator fingerprint (an older log) then does not match."""
    full, _, fingerprint = stored.partition("/")
    if tool_obj is None:
        return compensator_obj is not None and bool(fingerprint) and \
            fingerprint == compensator_fingerprint(compensator, compensator_obj)
    return full == tools_hash(tool, tool_obj, compensator, compensator_obj)


def pair_key(tool: str, compensator: str, digest: str) -> str:
    """The key of a pair: ``tool->compensator@`` and the first 12 hex digits of its hash."""
    return f"{tool}->{compensator}@{digest[:12]}"


def find_pair(book: PairStore, key: str) -> PairRecord | None:
    """``book.get_pair(key)``, or None when the book cannot be read (logged)."""
    try:
        return book.get_pair(key)
    except Exception as e:  # noqa: BLE001 - a store error must not break a call
        emit("rac.pair_lookup_failed", level="warning", key=key, status="error",
             error=f"{type(e).__name__}: {e}")
        return None


def pairs_of(book: PairStore, tool: str) -> list[PairRecord]:
    """The pairs the book keeps for ``tool`` (empty when it cannot be read, logged)."""
    try:
        return [p for p in book.list_pairs() if p.tool == tool]
    except Exception as e:  # noqa: BLE001 - a store error must not break a call
        emit("rac.pair_lookup_failed", level="warning", tool=tool, status="error",
             error=f"{type(e).__name__}: {e}")
        return []


def save_pair(book: PairStore, pair: PairRecord) -> bool:
    """``book.put_pair(pair)``; False when the write failed (logged)."""
    try:
        book.put_pair(pair)
        return True
    except Exception as e:  # noqa: BLE001 - a store error must not break a call
        emit("rac.pair_write_failed", level="warning", key=pair.key, status="error",
             error=f"{type(e).__name__}: {e}")
        return False


def decide_pair(book: PairStore, key: str, verdict: str, *, by: str | None = None,
                note: str | None = None, now: float | None = None) -> tuple[PairRecord, str]:
    """Record an operator's verdict (``"approve"`` or ``"reject"``) on a pair a model proposed;
    returns the pair as written and the status it had. The same decision for ``rac pairs
    approve|reject`` and ``rac ui``.

    Raises KeyError for an unknown key and ValueError for a pair that no model proposed (it is
    changed where it is declared), one that already has a verdict, or a verdict that is
    neither."""
    import time

    from rac.serialize import redact_text

    if verdict not in ("approve", "reject"):
        raise ValueError(f"a verdict is 'approve' or 'reject', not {verdict!r}")
    pair = book.get_pair(key)
    if pair is None:
        raise KeyError(f"no pair {key!r} in the log; `rac pairs` lists the keys")
    if pair.source != LLM:
        raise ValueError(f"pair {key!r} comes from {pair.source}, not a model: change it where "
                         "it is declared")
    previous = pair.status
    if previous not in (PROPOSED, AUTO):
        # a verdict is for a pair waiting for one: a stale page never flips another's verdict
        raise ValueError(f"pair {key!r} is {previous} already ({pair.note or 'no note'}); "
                         "only a proposed (or auto) pair takes a verdict")
    pair.status = APPROVED if verdict == "approve" else REJECTED
    pair.updated_at = time.time() if now is None else now
    why = f": {note.strip()}" if note and note.strip() else ""
    pair.note = redact_text(f"{pair.status} by {by or 'an operator'}{why}")[:2000]
    book.put_pair(pair)
    emit(f"rac.pair_{pair.status}", key=pair.key, tool=pair.tool, compensator=pair.compensator,
         status=pair.status, previous=previous, by=by)
    return pair, previous
