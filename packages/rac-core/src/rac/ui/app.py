"""``rac ui``'s web application (Starlette, server-rendered): the pages and the actions, over
any store (memory, SQLite, PostgreSQL).

Pages: ``/runs`` (filter by status, agent, tool and time; keyset paging), ``/runs/{id}`` (the
run, what may still be live, its timeline, its records), ``/queue`` (every run that needs a
person), ``/pairs`` (compensation pairs and a model's proposals). Actions (POST, only with a
session from the token and the form's CSRF field, never in read-only mode): resolve a live
effect with a note, resume a run (needs the engine: ``--app``), approve or reject a proposed
pair. Each action goes through the same core functions as the CLI (``engine.resolve``,
``engine.resume``, :func:`rac.resolver.book.decide_pair`), so the same checks apply, and it is
written to the log with who, when and why. Bad input, a stale action (another operator got
there first) or an unknown run gets a clear page, and nothing in the log changes.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from rac.errors import RACError
from rac.events import emit
from rac.models import RunStatus
from rac.stores.capabilities import RUN_QUERY, RunFilter, supports
from rac.ui import pages
from rac.ui.pages import Viewer
from rac.ui.security import NAME_COOKIE, SESSION_COOKIE, Guard

if TYPE_CHECKING:
    from rac.engine import RAC
    from rac.models import RunInfo
    from rac.stores import Store

PAGE_SIZE = 50
Handler = Callable[[Request], Awaitable[Response]]


class UI:
    """The state behind the application: the log, the engine (when given), the guard."""

    def __init__(self, store: Store, *, engine: RAC | None, guard: Guard,
                 page_size: int = PAGE_SIZE) -> None:
        self.store = store
        self.engine = engine
        self.guard = guard
        self.page_size = page_size
        self._resolver: RAC | None = None

    # -- who is looking ------------------------------------------------------------------------
    def viewer(self, request: Request) -> Viewer:
        sid = self.guard.session(request.cookies.get(SESSION_COOKIE))
        can_act = sid is not None and not self.guard.read_only
        return Viewer(can_act, self.guard.csrf(sid) if sid else "",
                      request.cookies.get(NAME_COOKIE, ""), self.guard.read_only,
                      self.engine is not None, fragment=request.headers.get("x-rac-fragment")
                      == "1")

    def html(self, text: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(text, status_code=status, headers={
            "Cache-Control": "no-store", "X-Frame-Options": "DENY",
            "Content-Security-Policy": "default-src 'self'; style-src 'unsafe-inline'; "
                                       "script-src 'unsafe-inline'; img-src 'self' data:",
            "Referrer-Policy": "no-referrer"})

    def fail(self, request: Request, status: int, title: str, message: str,
             back: str | None = None) -> HTMLResponse:
        return self.html(pages.error_page(status, title, message, self.viewer(request), back),
                         status)

    # -- the engine that resolves (resolving runs no tool: the log's own store will do) ---------
    def resolver(self) -> RAC:
        if self.engine is not None:
            return self.engine
        if self._resolver is None:
            from rac.engine import RAC

            self._resolver = RAC(store=self.store, load_entrypoints=False)
        return self._resolver


def _guarded(ui: UI, handler: Handler, *, action: bool = False) -> Handler:
    """Reads need a session only beyond loopback; actions always need a session and the form's
    CSRF field, and do not exist in read-only mode."""

    async def endpoint(request: Request) -> Response:
        host = _host_name(request.headers.get("host") or "")
        if ui.guard.loopback and host and not _loopback_host(host):
            # DNS rebinding: a page of another site reaching this loopback server by name
            return PlainTextResponse(f"rac ui answers only as localhost, not as {host!r}", 421)
        sid = ui.guard.session(request.cookies.get(SESSION_COOKIE))
        if not ui.guard.loopback and sid is None and request.url.path != "/login":
            return RedirectResponse("/login", 303)
        if action:
            if ui.guard.read_only:
                return ui.fail(request, 403, "Read-only", "This server was started with "
                                                        "--read-only: it serves no actions.")
            if sid is None:
                return ui.fail(request, 403, "Sign in first",
                               "Actions need the token rac ui printed when it started: open "
                               "/login.", "/login")
            form = await request.form()
            if not ui.guard.check_csrf(sid, str(form.get("csrf") or "")):
                return ui.fail(request, 403, "Form expired",
                               "The form's CSRF field is missing or belongs to another "
                               "session; reload the page and try again.",
                               request.headers.get("referer"))
        return await handler(request)

    return endpoint


def _host_name(header: str) -> str:
    """The host of a Host header, without its port (``[::1]:8765`` -> ``::1``)."""
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _loopback_host(host: str) -> bool:
    from rac.ui.security import is_loopback

    return is_loopback(host)


def _day(text: str, end: bool = False) -> float | None:
    if not text:
        return None
    try:
        day = dt.datetime.strptime(text, "%Y-%m-%d")
    except ValueError:
        raise ValueError(f"not a date (YYYY-MM-DD): {text!r}") from None
    return (day + dt.timedelta(days=1 if end else 0)).timestamp()


def _cursor(text: str) -> tuple[float, str] | None:
    if not text:
        return None
    at, sep, run_id = text.partition(":")
    try:
        return (float(at), run_id) if sep and run_id else None
    except ValueError:
        return None


def create_app(store: Store, *, engine: RAC | None = None, guard: Guard | None = None,
               page_size: int = PAGE_SIZE) -> Starlette:
    """The ``rac ui`` application over ``store``. ``engine`` (your ``rac.RAC``) enables the
    actions that run tools (resume); ``guard`` holds the token and the rules (default: a
    loopback server with a new token)."""
    ui = UI(store, engine=engine, guard=guard or Guard.for_server("127.0.0.1"),
            page_size=page_size)
    statuses = [s.value for s in RunStatus]

    async def home(request: Request) -> Response:
        return RedirectResponse("/runs", 303)

    async def runs(request: Request) -> Response:
        q = request.query_params
        filters = {k: q.get(k, "").strip() for k in ("status", "agent", "tool", "since",
                                                     "until")}
        try:
            if filters["status"] and filters["status"] not in statuses:
                raise ValueError(f"unknown status {filters['status']!r}: one of "
                                 f"{', '.join(statuses)}")
            where = RunFilter.of(status=filters["status"] or None, agent=filters["agent"],
                                 tool=filters["tool"], since=_day(filters["since"]),
                                 until=_day(filters["until"], end=True),
                                 after=_cursor(q.get("after", "")))
        except ValueError as e:
            return ui.fail(request, 400, "Bad filter", str(e), "/runs")
        found = find_runs(ui.store, where, ui.page_size + 1)
        more = len(found) > ui.page_size
        found = found[: ui.page_size]
        cursor = f"{found[-1].created_at!r}:{found[-1].run_id}" if more and found else None
        return ui.html(pages.runs_page(found, ui.viewer(request), filters=filters,
                                       next_cursor=cursor, statuses=statuses))

    async def run(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        info = ui.store.get_run(run_id)
        if info is None:
            return ui.fail(request, 404, "No such run", f"The log {ui.store.url} has no run "
                                                        f"{run_id!r}.", "/runs")
        records = ui.store.get_records(run_id)
        return ui.html(pages.run_page(info, records, ui.viewer(request),
                                      notice=_notice(ui, request)))

    async def queue(request: Request) -> Response:
        return ui.html(pages.queue_page(attention_queue(ui), ui.viewer(request)))

    async def pairs(request: Request) -> Response:
        return ui.html(pages.pairs_page(known_pairs(ui), ui.viewer(request)))

    async def login(request: Request) -> Response:
        viewer = ui.viewer(request)
        if request.method == "GET":
            token = request.query_params.get("token")
            if token is None:
                return ui.html(pages.login_page(viewer))
            name = request.query_params.get("by", "")
        else:
            form = await request.form()
            token, name = str(form.get("token") or ""), str(form.get("by") or "")
        if not ui.guard.check_token(token):
            emit("rac.ui", level="warning", status="sign_in_refused",
                 client=request.client.host if request.client else None)
            return ui.html(pages.login_page(viewer, failed=True), 403)
        response = RedirectResponse("/queue", 303)
        response.set_cookie(SESSION_COOKIE, ui.guard.new_session(), httponly=True,
                            samesite="strict", path="/")
        if name:
            response.set_cookie(NAME_COOKIE, name[:80], samesite="strict", path="/")
        emit("rac.ui", status="signed_in", by=name or None)
        return response

    async def resolve(request: Request) -> Response:
        asked = await _record_form(ui, request, "A resolution needs your name and a note "
                                                "saying what was done.")
        if isinstance(asked, Response):
            return asked
        failed = _act(ui, request, asked.back, "Not resolved", lambda: ui.resolver().resolve(
            asked.run_id, asked.seq, note=asked.note, by=asked.by))
        return failed or _done(ui, asked.back, f"#{asked.seq} resolved by {asked.by}",
                               asked.by)

    async def resume(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        back = f"/runs/{quote(run_id)}"
        form = await request.form()
        by, note = str(form.get("by") or "").strip(), str(form.get("note") or "").strip()
        if ui.engine is None:
            return ui.fail(request, 409, "No engine", "Resuming runs your compensators: start "
                                                      "rac ui with --app MODULE:ENGINE.", back)
        if not by or not note:
            return ui.fail(request, 400, "Say who and why",
                           "A resume needs your name and a note saying why.", back)
        if ui.store.get_run(run_id) is None:
            return ui.fail(request, 404, "No such run", f"No run {run_id!r} in the log.",
                           "/runs")
        try:
            outcome = await ui.engine.aresume(run_id)
        except KeyError as e:
            return ui.fail(request, 404, "Not found", str(e.args[0] if e.args else e), back)
        if outcome.outcome == "skipped":
            return ui.fail(request, 409, "Not resumed", outcome.reason or "skipped", back)
        stamp = dt.datetime.fromtimestamp(time.time()).isoformat(timespec="seconds")
        _remember(ui, run_id, f"resumed by {by} at {stamp}: {note} -> {outcome.outcome}")
        emit("rac.ui", run_id=run_id, status="resumed", outcome=outcome.outcome, by=by)
        return _done(ui, back, f"resumed by {by}: {outcome.outcome}", by)

    async def undo(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        back = f"/runs/{quote(run_id)}"
        form = await request.form()
        by, note = str(form.get("by") or "").strip(), str(form.get("note") or "").strip()
        preview = str(form.get("mode") or "") == "preview"
        unchecked = str(form.get("unchecked") or "") == "1"
        if ui.engine is None:
            return ui.fail(request, 409, "No engine", "Undoing runs your lookups and "
                                                      "compensators: start rac ui with --app "
                                                      "MODULE:ENGINE.", back)
        if not by or (not preview and not note):
            return ui.fail(request, 400, "Say who and why",
                           "An undo needs your name and a note saying why.", back)
        info = ui.store.get_run(run_id)
        if info is None:
            return ui.fail(request, 404, "No such run", f"No run {run_id!r} in the log.",
                           "/runs")
        try:
            done = await ui.engine.aundo(run_id, why=note, by=by, preview=preview,
                                         unchecked=unchecked)
        except KeyError as e:
            return ui.fail(request, 404, "Not found", str(e.args[0] if e.args else e), back)
        except RACError as e:
            return ui.fail(request, 409, "Not undone", str(e), back)
        if preview:
            return ui.html(pages.run_page(info, ui.store.get_records(run_id), ui.viewer(request),
                                          preview=done))
        undone = len(done.report.compensated) if done.report is not None else 0
        emit("rac.ui", run_id=run_id, status="undone", outcome=str(done.status), by=by)
        return _done(ui, back, f"undo by {by}: {undone} undone, {len(done.conflicts)} left "
                               f"alone; the run is {done.status}", by)

    async def person_decision(request: Request) -> Response:
        from rac.approvals import decide as decide_undo

        what = "approve" if request.url.path.endswith("/approve") else "hold"
        asked = await _record_form(ui, request, "A decision needs your name and a note "
                                                "saying why.")
        if isinstance(asked, Response):
            return asked
        failed = _act(ui, request, asked.back, "Not decided", lambda: decide_undo(
            ui.resolver(), asked.run_id, asked.seq, what,  # type: ignore[arg-type]
            note=asked.note, by=asked.by))
        if failed is not None:
            return failed
        said = f"#{asked.seq}: undo {'approved' if what == 'approve' else 'kept held'} by " \
               f"{asked.by}"
        if what == "approve" and ui.engine is not None:
            outcome = await ui.engine.aresume(asked.run_id)
            said += f"; resumed: {outcome.outcome}"
        return _done(ui, asked.back, said, asked.by)

    async def decide(request: Request) -> Response:
        from rac.resolver.book import decide_pair, pair_book

        key, verdict = request.path_params["key"], request.path_params["verdict"]
        form = await request.form()
        by = str(form.get("by") or request.cookies.get(NAME_COOKIE) or "").strip()
        if not by:
            return ui.fail(request, 400, "Say who", "A verdict needs your name.", "/pairs")
        try:
            decide_pair(pair_book(ui.store), key, verdict, by=by,
                        note=str(form.get("note") or ""))
        except KeyError as e:
            return ui.fail(request, 404, "Not found", str(e.args[0] if e.args else e), "/pairs")
        except ValueError as e:
            return ui.fail(request, 409, "Not changed", str(e), "/pairs")
        return _done(ui, "/pairs", f"{key}: {verdict}d by {by}", by)

    routes = [
        Route("/", _guarded(ui, home)),
        Route("/runs", _guarded(ui, runs)),
        Route("/runs/{run_id:path}", _guarded(ui, run)),
        Route("/queue", _guarded(ui, queue)),
        Route("/pairs", _guarded(ui, pairs)),
        Route("/login", _guarded(ui, login), methods=["GET", "POST"]),
    ]
    if not ui.guard.read_only:
        routes += [
            Route("/runs/{run_id:path}/resolve", _guarded(ui, resolve, action=True),
                  methods=["POST"]),
            Route("/runs/{run_id:path}/resume", _guarded(ui, resume, action=True),
                  methods=["POST"]),
            Route("/runs/{run_id:path}/undo", _guarded(ui, undo, action=True),
                  methods=["POST"]),
            Route("/runs/{run_id:path}/approve", _guarded(ui, person_decision, action=True),
                  methods=["POST"]),
            Route("/runs/{run_id:path}/hold", _guarded(ui, person_decision, action=True),
                  methods=["POST"]),
            Route("/pairs/{key}/{verdict:str}", _guarded(ui, decide, action=True),
                  methods=["POST"]),
        ]
    app = Starlette(routes=routes)
    app.state.ui = ui
    return app


@dataclass(frozen=True, slots=True)
class _RecordForm:
    """An operator's action on one record of a run, as the form asked it."""

    run_id: str
    back: str  # the run's page
    by: str
    note: str
    seq: int


async def _record_form(ui: UI, request: Request, needs: str) -> _RecordForm | Response:
    """Who asks, why, and for which record (resolve, approve, hold); a failure page, saying
    what is missing (``needs``: who and why), when the form lacks one."""
    run_id = request.path_params["run_id"]
    back = f"/runs/{quote(run_id)}"
    form = await request.form()
    by, note = str(form.get("by") or "").strip(), str(form.get("note") or "").strip()
    try:
        seq = int(str(form.get("seq") or ""))
    except ValueError:
        return ui.fail(request, 400, "Bad request", "Which record? The form has no seq.", back)
    if not by or not note:
        return ui.fail(request, 400, "Say who and why", needs, back)
    return _RecordForm(run_id, back, by, note, seq)


def _act(ui: UI, request: Request, back: str, refused: str,
         action: Callable[[], object]) -> Response | None:
    """Carry an operator's action out through the core: None when it was, else the page that
    says why not (an unknown run or record: 404; one the core refuses: 409, titled
    ``refused``)."""
    try:
        action()
    except KeyError as e:
        return ui.fail(request, 404, "Not found", str(e.args[0] if e.args else e), back)
    except (RACError, ValueError) as e:
        return ui.fail(request, 409, refused, str(e), back)
    return None


def _done(ui: UI, back: str, what: str, by: str) -> Response:
    """Back to the page the action came from, with a notice of what was done, signed so that a
    link cannot make the page announce something that did not happen."""
    sep = "&" if "?" in back else "?"
    query = urlencode({"done": what, "sig": ui.guard.sign_notice(what)})
    response = RedirectResponse(f"{back}{sep}{query}", 303)
    response.set_cookie(NAME_COOKIE, by[:80], samesite="strict", path="/")
    return response


def _notice(ui: UI, request: Request) -> str | None:
    """The notice of a just-done action, if this server signed it."""
    text, sig = request.query_params.get("done"), request.query_params.get("sig")
    return text if text and sig and ui.guard.check_notice(text, sig) else None


def _remember(ui: UI, run_id: str, line: str) -> None:
    """Keep an operator's action on the run's row (its summary), newest first."""
    from rac.serialize import redact_text

    info = ui.store.get_run(run_id)
    before = (info.summary or "") if info is not None else ""
    text = redact_text(line if not before else f"{line}; {before}")[:2000]
    ui.store.update_run(run_id, summary=text, updated_at=time.time())


# -- what the pages show -----------------------------------------------------------------------
def find_runs(store: Store, where: RunFilter, limit: int) -> list[RunInfo]:
    """A page of runs: the store's own query when it has one (``run_query``), else filtered
    here from its listing (fine for small logs; slow on a big one)."""
    if supports(store, RUN_QUERY):
        found: list[RunInfo] = store.query_runs(where, limit)  # type: ignore[attr-defined]
        return found
    out: list[RunInfo] = []
    candidates = sorted(store.list_runs(status=where.status),
                        key=lambda r: (r.created_at, r.run_id), reverse=True)
    for info in candidates:
        tools = {r.tool for r in store.get_records(info.run_id)} if where.tool else set()
        if where.matches(info, tools):
            out.append(info)
            if len(out) >= limit:
                break
    return out


def attention_queue(ui: UI) -> list[tuple[RunInfo, list[Any], str]]:
    """Every run that needs a person, newest change first, with what may still be live and
    why: runs that ended ``needs_attention``, and unfinished runs nobody works on any more
    (their process is gone or their lease ran out: ``rac recover`` finishes them)."""
    from rac.recovery import UNFINISHED, ownership

    store = ui.store
    items = []
    for info in store.list_runs(status=RunStatus.NEEDS_ATTENTION):
        items.append((info, pages.live_records(store.get_records(info.run_id)),
                      "a rollback left these live"))
    engine = ui.resolver()
    now = engine.clock.now()
    for info in store.list_runs(status=UNFINISHED):
        who = ownership(engine, info, now)
        if who.state == "free":
            items.append((info, pages.live_records(store.get_records(info.run_id)),
                          f"unfinished and {who.reason}: `rac recover --app ...` finishes it"))
    items.sort(key=lambda item: item[0].updated_at, reverse=True)
    return items


def known_pairs(ui: UI) -> list[Any]:
    """The pairs the log keeps, and those the engine declares (code, MCP) when there is one;
    a model's proposals first."""
    from rac.resolver.book import pair_book

    pairs = list(pair_book(ui.store).list_pairs())
    if ui.engine is not None:
        from rac.resolver import declared_pairs

        known = {p.key for p in pairs}
        pairs += [p for p in declared_pairs(ui.engine) if p.key not in known]
    order = {"proposed": 0, "approved": 1, "recorded": 2, "rejected": 3}
    pairs.sort(key=lambda p: (order.get(p.status, 4), p.tool, p.compensator))
    return pairs


__all__ = ["PAGE_SIZE", "UI", "attention_queue", "create_app", "find_runs", "known_pairs"]
