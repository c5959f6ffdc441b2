"""The HTML of ``rac ui``'s pages, rendered on the server (no build step, no external file):
every value is escaped, and only what the log holds for display is shown (arguments and
results as the store keeps them, redacted; never the sealed undo data)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any
from urllib.parse import urlencode

from rac.approvals import is_held
from rac.cli.render import happened
from rac.cli.render import next_step as plain_next_step
from rac.lifecycle import may_be_live
from rac.models import PairRecord, Record, RecordKind, RunInfo, RunStatus
from rac.ui.timeline import timeline_svg

CSS = """
body{font-family:system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#263238;color:#fff;padding:10px 20px;display:flex;gap:24px;align-items:center}
header a{color:#fff;text-decoration:none;font-weight:600}header .mode{margin-left:auto;opacity:.8}
main{padding:16px 20px}table{border-collapse:collapse;width:100%;background:#fff}
th,td{border-bottom:1px solid #e0e0e0;padding:6px 8px;text-align:left;vertical-align:top;
font-size:13px}th{background:#eceff1}code,.mono{font-family:ui-monospace,monospace;font-size:12px}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;color:#fff;font-size:12px}
.s-completed{background:#2e7d32}.s-compensated{background:#607d8b}.s-running{background:#1565c0}
.s-compensating{background:#f9a825}.s-needs_attention{background:#c62828}
.s-resolved{background:#5e35b1}.live{background:#fff3e0;border:1px solid #ffb74d;padding:10px;
margin:10px 0;border-radius:6px}.notice{background:#e8f5e9;border:1px solid #81c784;padding:8px;
border-radius:6px;margin:8px 0}.error{background:#ffebee;border:1px solid #e57373;padding:10px;
border-radius:6px}form.inline{display:inline}input,select,button{font-size:13px;padding:3px 6px}
.filters{display:flex;gap:8px;flex-wrap:wrap;margin-bottom:10px}.muted{color:#666}
.next{margin-top:10px}.told{white-space:pre-wrap;background:#fff;border:1px solid #ddd;padding:8px}
"""

LIVE_SCRIPT = """
<script>
(function(){
  function busy(){var a=document.activeElement;
    if(a&&(a.tagName==='INPUT'||a.tagName==='TEXTAREA'||a.tagName==='SELECT'))return true;
    return Array.prototype.some.call(document.querySelectorAll('main input[type=text],main textarea'),
      function(e){return e.value!=='';});}
  setInterval(function(){
    if(busy())return;
    fetch(location.href,{headers:{'X-RAC-Fragment':'1'},credentials:'same-origin'})
      .then(function(r){return r.ok?r.text():null;})
      .then(function(t){var m=document.querySelector('main');
        if(t!==null&&m&&m.innerHTML!==t){m.innerHTML=t;}});
  },%d);
})();
</script>
"""


@dataclass(frozen=True)
class Viewer:
    """What the page may offer the person looking at it."""

    can_act: bool
    csrf: str = ""
    name: str = ""
    read_only: bool = False
    has_engine: bool = False
    refresh_ms: int = 3000
    #: only the ``<main>`` content, for a live page refreshing itself
    fragment: bool = False
    #: a file to attach to a ticket (``rac show --html``): no links to the server, no refresh
    static: bool = False


def when(ts: float) -> str:
    """A timestamp as local time (``-`` for none)."""
    if not ts:
        return "-"
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def _json(value: Any, width: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str,
                                                           ensure_ascii=False)
    text = "" if text in ("null", "None") else text
    return escape(text if len(text) <= width else text[: width - 1] + "…")


def badge(status: RunStatus | str) -> str:
    """A run status as a coloured badge."""
    s = str(status)
    return f'<span class="badge s-{escape(s)}">{escape(s.replace("_", " "))}</span>'


def layout(title: str, body: str, viewer: Viewer, *, live: bool = False) -> str:
    """A whole page around ``body`` (the ``<main>`` content); only ``body`` for a fragment."""
    if viewer.fragment:
        return body
    nav = ("<b>RAC</b>" if viewer.static else "<a href='/runs'>RAC</a><a href='/runs'>Runs</a>"
           "<a href='/queue'>Needs attention</a><a href='/pairs'>Pairs</a>")
    if viewer.static:
        mode = "exported " + dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    elif viewer.read_only:
        mode = "read-only"
    else:
        mode = ("signed in as " + escape(viewer.name or "?") if viewer.can_act
                else '<a href="/login">sign in to act</a>')
    script = LIVE_SCRIPT % viewer.refresh_ms if live and not viewer.static else ""
    csrf = f'<meta name=rac-csrf content="{escape(viewer.csrf)}">' if viewer.can_act else ""
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{escape(title)} · "
            f"RAC</title><meta name=viewport content='width=device-width'>{csrf}"
            f"<style>{CSS}</style>"
            f"</head><body><header>{nav}<span class=mode>{mode}</span></header>"
            f"<main>{body}</main>{script}</body></html>")


def _csrf(viewer: Viewer) -> str:
    return f'<input type=hidden name=csrf value="{escape(viewer.csrf)}">'


def _who(viewer: Viewer) -> str:
    return (f'<input type=text name=by placeholder="your name" required size=12 '
            f'value="{escape(viewer.name)}">')


def error_page(status: int, title: str, message: str, viewer: Viewer,
               back: str | None = None) -> str:
    """A clear page for bad input: what was wrong, and that nothing changed."""
    link = f'<p><a href="{escape(back)}">back</a></p>' if back else ""
    return layout(title, f"<h1>{escape(title)}</h1><div class=error><p>{escape(message)}</p>"
                         f"<p class=muted>HTTP {status}. Nothing in the log was changed.</p>"
                         f"</div>{link}", viewer)


# -- runs ----------------------------------------------------------------------------------------
def runs_page(runs: Sequence[RunInfo], viewer: Viewer, *, filters: dict[str, str],
              next_cursor: str | None, statuses: Iterable[str]) -> str:
    """The runs, newest first, with their filters and a link to the next page."""
    opts = "".join(f'<option value="{escape(s)}"{" selected" if filters.get("status") == s else ""}'
                   f">{escape(s)}</option>" for s in ["", *statuses])
    form = ("<form class=filters method=get action=/runs>"
            f"<label>status <select name=status>{opts}</select></label>"
            f'<label>agent <input type=text name=agent value="{escape(filters.get("agent", ""))}" '
            "size=12></label>"
            f'<label>tool <input type=text name=tool value="{escape(filters.get("tool", ""))}" '
            "size=12></label>"
            f'<label>since <input type=date name=since value="{escape(filters.get("since", ""))}">'
            "</label>"
            f'<label>until <input type=date name=until value="{escape(filters.get("until", ""))}">'
            "</label><button>filter</button></form>")
    rows = "".join(
        f"<tr><td class=mono><a href='/runs/{escape(r.run_id)}'>{escape(r.run_id)}</a></td>"
        f"<td>{badge(r.status)}</td><td>{escape(r.agent_id)}</td><td>{when(r.created_at)}</td>"
        f"<td>{when(r.updated_at)}</td><td>{escape(r.summary or '')}</td></tr>" for r in runs)
    table = ("<table><tr><th>run</th><th>status</th><th>agent</th><th>started</th>"
             f"<th>last change</th><th>summary</th></tr>{rows}</table>") if runs else \
        "<p class=muted>No runs match.</p>"
    more = ""
    if next_cursor:
        query = urlencode({**{k: v for k, v in filters.items() if v}, "after": next_cursor})
        more = f"<p class=next><a id=next href='/runs?{escape(query)}'>next page →</a></p>"
    return layout("Runs", f"<h1>Runs</h1>{form}{table}{more}", viewer, live=True)


# -- one run -------------------------------------------------------------------------------------
def live_records(records: Sequence[Record]) -> list[Record]:
    """The actions of a run whose effect may still be in the world."""
    return [r for r in records if r.kind is RecordKind.ACTION and may_be_live(r)]


def next_step(info: RunInfo, records: Sequence[Record], viewer: Viewer) -> str:
    """What an operator can do next with this run, in words."""
    how = "resume it here, or `rac resume RUN --app ...`" if viewer.has_engine else \
        "start rac ui with --app to resume here, or `rac resume RUN --app ...`"
    return plain_next_step(info, records, resume=how,
                           resolve="resolve it with a note (here, or `rac resolve RUN SEQ`)")


def _live_box(info: RunInfo, live: Sequence[Record], viewer: Viewer) -> str:
    if not live:
        return ""
    items = []
    for r in live:
        did, why = happened(r)
        form = ""
        if viewer.can_act and info.status is RunStatus.NEEDS_ATTENTION:
            form = (f"<form class=inline method=post action='/runs/{escape(info.run_id)}/resolve'>"
                    f"{_csrf(viewer)}<input type=hidden name=seq value={r.seq}>{_who(viewer)} "
                    "<input type=text name=note placeholder='what you did (kept in the log)' "
                    f"required size=36> <button id='resolve-{r.seq}'>resolve</button></form>")
            if is_held(r):
                form += "".join(
                    f"<form class=inline method=post action='/runs/{escape(info.run_id)}/{verb}'>"
                    f"{_csrf(viewer)}<input type=hidden name=seq value={r.seq}>{_who(viewer)} "
                    f"<input type=text name=note placeholder='why' required size=20> "
                    f"<button id='{verb}-{r.seq}'>{label}</button></form>"
                    for verb, label in (("approve", "approve the undo"
                                         + (" and run it" if viewer.has_engine else "")),
                                        ("hold", "keep it held")))
        items.append(f"<li><b>#{r.seq} {escape(r.tool)}</b> ({escape(str(r.status))}, happened: "
                     f"{escape(did)}) — {escape(why or r.error or '')} {form}</li>")
    resume = ""
    if viewer.can_act and viewer.has_engine and info.status is RunStatus.NEEDS_ATTENTION:
        resume = (f"<form method=post action='/runs/{escape(info.run_id)}/resume'>{_csrf(viewer)}"
                  f"{_who(viewer)} <input type=text name=note placeholder='why (kept in the log)'"
                  " required size=30> <button id=resume>retry the undo (resume)</button></form>")
    return (f"<div class=live><h2>Still live</h2><ul>{''.join(items)}</ul>{resume}</div>")


_VERDICT_WORDS = {"undo": "would be undone", "conflict": "CONFLICT: left alone",
                  "unchecked": "cannot be checked: left alone", "not_undoable": "cannot be undone"}


def _undo_box(info: RunInfo, viewer: Viewer, preview: Any) -> str:
    """For a completed run: undo it later, on request (``rac undo``), a preview first."""
    if info.status is not RunStatus.COMPLETED or not (viewer.can_act and viewer.has_engine):
        return ""
    seen = ""
    if preview is not None:
        lines = "".join(f"<li>#{i.seq} <b>{escape(i.tool)}</b>: "
                        f"{escape(_VERDICT_WORDS.get(i.verdict, i.verdict))} "
                        f"({escape(i.reason)})</li>" for i in preview.items)
        seen = (f"<div class=notice id=undo-preview><b>Preview</b> (nothing was changed):"
                f"<ul>{lines or '<li>nothing of it had an effect</li>'}</ul></div>")
    return (f"<div><h2>Undo this run</h2>{seen}<form method=post "
            f"action='/runs/{escape(info.run_id)}/undo'>{_csrf(viewer)}{_who(viewer)} "
            "<input type=text name=note placeholder='why (kept in the log)' size=30> "
            "<label><input type=checkbox name=unchecked value=1> also what cannot be checked"
            "</label> <button id=undo-preview-button name=mode value=preview>preview</button> "
            "<button id=undo-button name=mode value=undo>undo</button></form>"
            "<p class=muted>Each effect is checked against the live world first (its lookup "
            "or before-image); what changed or is gone since the run is named and left "
            "alone.</p></div>")


def run_page(info: RunInfo, records: Sequence[Record], viewer: Viewer, *,
             notice: str | None = None, told: str | None = None,
             preview: Any = None) -> str:
    """One run: its state, what may still be live (with the actions that settle it), the
    timeline, every record, and what the agent was told."""
    head = (f"<h1 class=mono>{escape(info.run_id)} {badge(info.status)}</h1>"
            f"<p>agent <b>{escape(info.agent_id)}</b> · started {when(info.created_at)} · last "
            f"change {when(info.updated_at)}"
            + (f" · owner <span class=mono>{escape(info.owner)}</span>" if info.owner else "")
            + (f" · {escape(info.summary)}" if info.summary else "") + "</p>")
    flash = f"<div class=notice>{escape(notice)}</div>" if notice else ""
    step = f"<p><b>Next step:</b> {escape(next_step(info, records, viewer))}</p>"
    rows = []
    for r in sorted(records, key=lambda r: r.seq):
        did, why = happened(r)
        rel = []
        if r.compensates is not None:
            rel.append(f"undoes #{r.compensates}")
        if r.alternative_of is not None:
            rel.append(f"alternative of #{r.alternative_of}")
        if r.depends_on:
            rel.append("depends on " + ", ".join(f"#{d}" for d in r.depends_on))
        rows.append(
            f"<tr id='rec-{r.seq}'><td>{r.seq}</td><td>{escape(str(r.kind))}</td>"
            f"<td>{escape(r.tool)}</td><td>{escape(str(r.status))}</td><td>{escape(did)}</td>"
            f"<td>{r.attempts}</td><td>{when(r.created_at)}</td><td>{when(r.updated_at)}</td>"
            f"<td>{escape('; '.join(rel))}</td><td class=mono>{_json(r.args)}</td>"
            f"<td class=mono>{_json(why or r.error or r.result)}</td></tr>")
    table = ("<table><tr><th>seq</th><th>kind</th><th>tool</th><th>status</th><th>happened</th>"
             "<th>tries</th><th>written</th><th>changed</th><th>links</th><th>args</th>"
             f"<th>result / why</th></tr>{''.join(rows)}</table>")
    told = told if told is not None else info.report
    told_box = f"<h2>What the agent was told</h2><div class=told>{escape(told)}</div>" \
        if told else ""
    body = (head + flash + step + _live_box(info, live_records(records), viewer)
            + _undo_box(info, viewer, preview) + f"<h2>Timeline</h2>{timeline_svg(records)}" + told_box
            + f"<h2>Records</h2>{table}")
    return layout(info.run_id, body, viewer, live=True)


# -- the queue -----------------------------------------------------------------------------------
def queue_page(items: Sequence[tuple[RunInfo, list[Record], str]], viewer: Viewer) -> str:
    """Every run that needs a person, with each effect that may still be live and why."""
    if not items:
        body = "<h1>Needs attention</h1><p id=empty class=muted>Nothing needs a person.</p>"
        return layout("Needs attention", body, viewer, live=True)
    blocks = []
    for info, live, why in items:
        lines = "".join(
            f"<li>#{r.seq} <b>{escape(r.tool)}</b> ({escape(str(r.status))}, happened "
            f"{escape(happened(r)[0])}): {escape(happened(r)[1] or r.error or '')}</li>"
            for r in live)
        blocks.append(f"<div class=live id='q-{escape(info.run_id)}'><a class=mono "
                      f"href='/runs/{escape(info.run_id)}'>{escape(info.run_id)}</a> · "
                      f"{escape(info.agent_id)} · {badge(info.status)} · "
                      f"{when(info.updated_at)} · {escape(why)}<ul>{lines}</ul></div>")
    return layout("Needs attention", f"<h1>Needs attention ({len(items)})</h1>"
                                     + "".join(blocks), viewer, live=True)


# -- pairs ---------------------------------------------------------------------------------------
def pairs_page(pairs: Sequence[PairRecord], viewer: Viewer) -> str:
    """The compensation pairs, with their source (code, MCP, a model) and status; a model's
    proposals wait for an operator's verdict."""
    rows = []
    for p in pairs:
        act = ""
        # a model's proposal waits for a verdict; an auto pair is in use and still open to one
        if viewer.can_act and p.source == "llm" and p.status in ("proposed", "auto"):
            act = "".join(
                f"<form class=inline method=post action='/pairs/{escape(p.key)}/{verdict}'>"
                f"{_csrf(viewer)}{_who(viewer) if verdict == 'approve' else ''}"
                f"<button name=verdict value={verdict}>{verdict}</button></form> "
                for verdict in ("approve", "reject"))
        args = ", ".join(f"{k}={v}" for k, v in sorted(p.args.items())) or "-"
        rows.append(f"<tr><td class=mono>{escape(p.key)}</td><td>{escape(p.source)}</td>"
                    f"<td>{escape(p.status)}</td><td>{escape(p.tool)}</td>"
                    f"<td>{escape(p.compensator)}</td><td class=mono>{escape(args)}</td>"
                    f"<td>{escape(p.note or '')}</td><td>{act}</td></tr>")
    table = ("<table><tr><th>key</th><th>source</th><th>status</th><th>tool</th>"
             "<th>undone by</th><th>args</th><th>note</th><th></th></tr>"
             f"{''.join(rows)}</table>") if rows else "<p class=muted>No compensation pairs.</p>"
    return layout("Pairs", f"<h1>Compensation pairs</h1>{table}", viewer)


def login_page(viewer: Viewer, *, failed: bool = False) -> str:
    """Where the operator gives the token the server printed when it started."""
    msg = "<div class=error>That is not the token.</div>" if failed else ""
    return layout("Sign in", "<h1>Sign in</h1><p>Give the token <code>rac ui</code> printed "
                             "when it started (or <code>$RAC_UI_TOKEN</code>).</p>" + msg +
                  "<form method=post action=/login><input type=password name=token required "
                  "size=40> <input type=text name=by placeholder='your name' required size=14>"
                  " <button id=signin>sign in</button></form>", viewer)


__all__ = ["Viewer", "badge", "error_page", "layout", "live_records", "login_page",
           "next_step", "pairs_page", "queue_page", "run_page", "runs_page", "when"]
