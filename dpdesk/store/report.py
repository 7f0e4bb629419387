"""The self-contained HTML audit report and the ledger CSV.

The report embeds its plots as base64 PNG images (no external files), lists every ledger entry
with its hash, the per-cell costs recomputed from the ledger by the engine, and the integrity check's
verdict. It holds only public quantities: released answers, budgets, hashes — never true counts.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from dpdesk.engine.budget.mode import ZcdpAccounting
from dpdesk.engine.errors import Cancelled
from dpdesk.engine.registry import decision_kinds
from dpdesk.store.ledger import LedgerEntry, thaw
from dpdesk.store.release import flat_values

if TYPE_CHECKING:
    from dpdesk.store.requesters import RequesterAccount
    from dpdesk.store.verify import VerifyReport

# "released": what the requester received, as shown to people everywhere — a count rounded to an integer
# (engine/answering/rounding.py; the ledger keeps the exact value) — and a release of several values lists
# them, ";"-separated; "answer": a fresh entry's raw noisy ỹ exactly as recorded (its history row), which
# differs from "released" when the fresh answer was fused with history's estimate (blank for other kinds). "eps"/"delta": a count request's promise (±ε with probability ≥ 1−δ);
# "privacy_delta": the δ a release charged each cell it charged ((α, δ) mechanisms; 0 when pure).
# "requester" is joined from the request queue by request id (store/requesters.py). A text cell a spreadsheet
# would run as a formula (starting with =, +, -, @, a tab or a carriage return, and not a number) starts with
# an apostrophe (_inert).
CSV_COLUMNS = (
    "seq",
    "time",
    "kind",
    "request_id",
    "released",
    "answer",
    "alpha",
    "eps",
    "delta",
    "query",
    "hash",
    "prev_hash",
    "mechanism",
    "privacy_delta",
    "requester",
)
_LISTED = 50  # a release of more values is summarised by its count (the ledger holds them all)
CELLS_LISTED = 50  # a report with more costed cells lists the most-charged and attaches the whole table


def cells_csv_parts(cell_rows: Sequence[tuple[str, float]]) -> list[str]:
    """The per-cell costs as the CSV a report attaches: ``cell,cost``, one row per costed cell."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["cell", "cost"])
    for label, cost in cell_rows:
        w.writerow([label, repr(float(cost))])
    return [buf.getvalue()]


def _answer(e: LedgerEntry) -> str:
    """What the requester received, as shown everywhere (a count rounded: engine/answering/rounding.py)."""
    if e.released is not None:
        return e.shown()
    values = e.payload.get("values")
    if values is None:
        return ""
    flat = flat_values(values)
    return ";".join(f"{v:.6g}" for v in flat) if len(flat) <= _LISTED else f"{len(flat)} values"


def _what(p: Mapping[str, Any]) -> str:
    """The entry's request in words: a count's text, a posterior's text form, the query, or a refusal's reason."""
    if p.get("query_text") or p.get("text"):
        return str(p.get("query_text") or p.get("text"))
    return json.dumps(thaw(p["query"])) if "query" in p else str(p.get("reason") or "")


def _privacy_delta(p: Mapping[str, Any]) -> float | str:
    charge = p.get("charge")
    return float(charge.get("delta", 0.0)) if charge is not None else ""


def _alpha(e: LedgerEntry, charges: Mapping[int, float] | None) -> float | str:
    """The entry's α: the most one cell paid for it (from the ledger view's ``largest_charges()``; without
    it, the recorded α); blank for a refusal or a rebind."""
    if e.kind in decision_kinds():
        return ""
    if charges is not None:
        return charges.get(e.seq, 0.0)
    return float(e.payload.get("alpha", 0.0))  # a fresh entry's α; a posterior's α on each box cell


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _inert(value: object) -> object:
    """A text cell a spreadsheet would evaluate as a formula (``=HYPERLINK(…)``, ``+cmd|…``, ``@SUM(…)``)
    with an apostrophe in front, which spreadsheets show as text; numbers (``-19720``) are left as they are."""
    if not isinstance(value, str) or not value.startswith(_FORMULA_START):
        return value
    try:
        float(value)
    except ValueError:
        return "'" + value
    return value


def _csv_row(
    e: LedgerEntry, charges: Mapping[int, float] | None, requesters: Mapping[str, str]
) -> list[object]:
    return [_inert(v) for v in _csv_cells(e, charges, requesters)]


def _csv_cells(
    e: LedgerEntry, charges: Mapping[int, float] | None, requesters: Mapping[str, str]
) -> list[object]:
    p = e.payload
    promise = "eps" in p  # a count request's ±ε, 1−δ
    return [
        e.seq,
        e.time,
        e.kind,
        e.request_id or "",
        _answer(e),
        p.get("answer", "") if e.kind == "fresh" else "",
        _alpha(e, charges),
        p.get("eps", ""),
        p.get("delta", "") if promise else "",
        _what(p),
        e.hash,
        e.prev_hash,
        p.get("mechanism", ""),
        _privacy_delta(p),
        requesters.get(e.request_id or "", ""),
    ]


def ledger_csv(
    entries: Sequence[LedgerEntry],
    charges: Mapping[int, float] | None = None,
    requesters: Mapping[str, str] | None = None,
) -> str:
    """The ledger as CSV (``charges``: seq → α, see :func:`_alpha`; ``requesters``: request id → requester,
    from the queue)."""
    out = io.StringIO()
    write_csv(out, entries, charges, requesters)
    return out.getvalue()


_CSV_CHUNK = 64  # entries written between progress reports and cancel checks (a long ledger's rows are large)


def write_csv(
    out: TextIO,
    entries: Sequence[LedgerEntry],
    charges: Mapping[int, float] | None = None,
    requesters: Mapping[str, str] | None = None,
    *,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> None:
    """Write :func:`ledger_csv`'s text to ``out`` (opened with ``newline=""``) row by row, reporting the
    fraction of entries written to ``progress`` and raising :class:`~dpdesk.engine.errors.Cancelled` when
    ``cancelled()`` says so."""
    requesters = requesters or {}
    w = csv.writer(out)
    w.writerow(CSV_COLUMNS)
    for i in range(0, len(entries), _CSV_CHUNK):
        if cancelled is not None and cancelled():
            raise Cancelled("export cancelled")
        w.writerows(_csv_row(e, charges, requesters) for e in entries[i : i + _CSV_CHUNK])
        if progress is not None:
            progress(min(len(entries), i + _CSV_CHUNK) / len(entries))


def _img(png: bytes, alt: str) -> str:
    return (
        f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'
    )


def build_html(
    *,
    name: str,
    path: str,
    total_budget: float,
    remaining: float,
    system_cost: float,
    entries: Sequence[LedgerEntry],
    cell_rows: Sequence[tuple[str, float]],
    verify: VerifyReport,
    images: dict[str, bytes],
    charges: Mapping[int, float] | None = None,
    delta_cap: float = 0.0,
    delta_spent: float = 0.0,
    requesters: Mapping[str, str] | None = None,
    accounts: Sequence[RequesterAccount] = (),
    claims: Sequence[Mapping[str, Any]] = (),
    accounting: ZcdpAccounting | None = None,
    cells_file: str | None = None,
    n_cells: int | None = None,
    cost_words: str = "most-spent cell",
) -> str:
    """The report as one HTML string (``images``: title → PNG bytes; ``charges``: seq → α, see :func:`_alpha`;
    ``accounts``: per-requester summaries; ``claims``: the watched claims now, ``ClaimStatus.to_json()``
    merged with ``WatchedClaim.to_json()``)."""
    return "".join(
        html_parts(
            name=name,
            path=path,
            total_budget=total_budget,
            remaining=remaining,
            system_cost=system_cost,
            entries=entries,
            cell_rows=cell_rows,
            verify=verify,
            images=images,
            charges=charges,
            delta_cap=delta_cap,
            delta_spent=delta_spent,
            requesters=requesters,
            accounts=accounts,
            accounting=accounting,
            cost_words=cost_words,
            claims=claims,
            cells_file=cells_file,
            n_cells=n_cells,
        )
    )


def _entry_row(e: LedgerEntry, charges: Mapping[int, float] | None, requesters: Mapping[str, str]) -> str:
    """One ledger entry as a row of the report's ledger table."""
    esc = html.escape
    p = e.payload
    detail = _what(p)
    alpha = _alpha(e, charges) or 0.0
    if _privacy_delta(p):
        detail = f"{detail} (δ = {_privacy_delta(p):.3g})"
    return (
        f"<tr class='{esc(e.kind)}'><td>{e.seq}</td><td>{esc(e.time)}</td><td>{esc(e.kind)}</td>"
        f"<td>{esc(e.request_id or '')}</td><td>{esc(requesters.get(e.request_id or '', ''))}</td>"
        f"<td>{esc(str(e.stated() if e.released is not None else _answer(e)))}</td><td>{alpha:.6g}</td>"
        f"<td>{esc(str(detail))}</td><td class='hash'>{esc(e.hash)}</td></tr>"
    )


def _verdict_html(verify: VerifyReport) -> str:
    if getattr(verify, "ok", None):
        return "<p class='ok'>Integrity verified: hash chain, sequence, settings and budget recomputation all hold.</p>"
    problems = "".join(f"<li>{html.escape(str(pr))}</li>" for pr in getattr(verify, "problems", ()))
    return f"<p class='bad'>Integrity check FAILED:</p><ul>{problems}</ul>"


def _head_html(entries: Sequence[LedgerEntry], path: str) -> str:
    """The ledger head and how a release's holder checks the ledger still contains it."""
    if not entries:
        return "<p>Ledger head: the ledger is empty.</p>"
    esc = html.escape
    return (
        f"<p>Ledger head: entry #{entries[-1].seq}, <code class='hash'>{esc(entries[-1].hash)}</code>. Every release "
        "carries the head it made (the hash of its entry); whoever holds one can check that this ledger still "
        f"contains it: <code>dpdesk verify {esc(path)} --extends HASH</code>.</p>"
    )


def _cells_html(
    cell_rows: Sequence[tuple[str, float]], cells_file: str | None, n_cells: int | None
) -> tuple[list[str], str]:
    """The per-cell table's rows and the words above it (a summary past :data:`CELLS_LISTED` cells)."""
    esc = html.escape
    listed = cell_rows
    cells_intro = "Cells with a non-zero cost, recomputed from the ledger; every other cell has cost 0."
    if len(cell_rows) > CELLS_LISTED:
        costs = np.array([c for _, c in cell_rows], dtype=float)
        order = np.argsort(-costs, kind="stable")[:CELLS_LISTED]
        listed = [cell_rows[int(i)] for i in order]
        where = (
            f"the whole table, one row per cell, is in <a href='{esc(cells_file)}'>{esc(cells_file)}</a> "
            "(CSV: cell, cost), beside this report"
            if cells_file
            else "the whole table comes as a CSV beside the report when it is exported to a file"
        )
        of = f" of the {n_cells:,}" if n_cells else ""
        cells_intro = (
            f"{len(cell_rows):,} cells{of} carry a cost, recomputed from the ledger (every other cell has "
            f"cost 0): from {costs.min():.4g} to {costs.max():.4g}, median {float(np.median(costs)):.4g}. "
            f"Below, the {CELLS_LISTED} most-charged; {where}."
        )
    cells = [f"<tr><td>{esc(label)}</td><td>{cost:.6g}</td></tr>" for label, cost in listed]
    return cells, cells_intro


def _people_html(accounts: Sequence[RequesterAccount]) -> str:
    """The by-requester table's rows."""
    esc = html.escape
    return "".join(
        f"<tr><td>{esc(a.requester or '(anonymous)')}</td><td>{a.answered}</td><td>{a.rejected}</td>"
        f"<td>{a.pending}</td><td>{a.alpha:.6g}</td></tr>"
        for a in accounts
    )


def _figs_html(images: dict[str, bytes]) -> str:
    """The plots, each a figure with its title."""
    esc = html.escape
    return "".join(
        f"<figure>{_img(png, title)}<figcaption>{esc(title)}</figcaption></figure>"
        for title, png in images.items()
    )


def _delta_words(delta_cap: float, delta_spent: float) -> str:
    """The δ line of the page."""
    return (
        f"δ cap <b>{delta_cap:g}</b> · largest per-cell δ spent <b>{delta_spent:.3g}</b>"
        if delta_cap
        else "δ cap 0: every release is pure ε-DP"
    )


def html_parts(
    *,
    name: str,
    path: str,
    total_budget: float,
    remaining: float,
    system_cost: float,
    entries: Sequence[LedgerEntry],
    cell_rows: Sequence[tuple[str, float]],
    verify: VerifyReport,
    images: dict[str, bytes],
    charges: Mapping[int, float] | None = None,
    delta_cap: float = 0.0,
    delta_spent: float = 0.0,
    requesters: Mapping[str, str] | None = None,
    accounts: Sequence[RequesterAccount] = (),
    claims: Sequence[Mapping[str, Any]] = (),
    accounting: ZcdpAccounting | None = None,
    cells_file: str | None = None,
    n_cells: int | None = None,
    cost_words: str = "most-spent cell",
) -> list[str]:
    """:func:`build_html`'s text as a list of pieces (one per ledger entry and per cell row): a long
    ledger's report is hundreds of MB, and writing it piece by piece never builds (nor encodes) it whole.

    Past :data:`CELLS_LISTED` costed cells the page shows a summary a person can read — how many cells
    carry a cost, their range and the most-charged ones — and names ``cells_file``, the full table as a
    CSV beside the report (:func:`cells_csv_parts`)."""
    requesters = requesters or {}
    esc = html.escape
    token = secrets.token_hex(8)  # marks where the long tables go in the page (no text given can hold it)
    _ROWS, _CELLS = f"\x00rows-{token}\x00", f"\x00cells-{token}\x00"
    rows = [_entry_row(e, charges, requesters) for e in entries]
    cells, cells_intro = _cells_html(cell_rows, cells_file, n_cells)
    people = _people_html(accounts)
    watched = _claims_html(entries, claims)
    verdict = _verdict_html(verify)
    figs = _figs_html(images)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    head = _head_html(entries, path)
    unit = "ε" if accounting is None else "ρ"
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>dpdesk audit report — {esc(name)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 13px; }}
td, th {{ border: 1px solid #ccc; padding: 3px 7px; text-align: left; }}
th {{ background: #eee; }} tr.fresh td:nth-child(3) {{ color: #a8321f; }} tr.inferred td:nth-child(3) {{ color: #237a36; }}
.hash {{ font-family: monospace; }} .ok {{ color: #237a36; font-weight: bold; }} .bad {{ color: #a8321f; font-weight: bold; }}
figure {{ display: inline-block; margin: 1em; }} img {{ max-width: 100%; border: 1px solid #ddd; }}
</style></head><body>
<h1>Audit report: {esc(name)}</h1>
<p>Project file <code>{esc(path)}</code> · generated {esc(now)} by dpdesk.</p>
{_budget_html(accounting, total_budget, system_cost, remaining, len(entries), cost_words)}
<p>{_delta_words(delta_cap, delta_spent)}.</p>
{head}
{verdict}
<h2>Plots</h2>{figs}
<h2>Ledger</h2>
<table><tr><th>seq</th><th>time</th><th>kind</th><th>request</th><th>requester</th><th>released</th><th>{
        unit
    } spent</th>
<th>query / reason</th><th>hash</th></tr>{_ROWS}</table>
<h2>Watched claims</h2>
{watched}
<h2>By requester</h2>
<p>What each requester received and the privacy loss ({
        unit
    }) their fresh answers spent (each charged the cells its query touches).</p>
<table><tr><th>requester</th><th>answered</th><th>rejected</th><th>pending</th><th>{unit} spent</th></tr>{
        people
    }</table>
<h2>Per-cell privacy costs</h2>
<p>{cells_intro}</p>
<table><tr><th>cell</th><th>cost ({unit})</th></tr>{_CELLS}</table>
</body></html>
"""
    head, rest = page.split(_ROWS, 1)
    middle, tail = rest.split(_CELLS, 1)
    return [head, *rows, middle, *cells, tail]


def _claims_html(entries: Sequence[LedgerEntry], claims: Sequence[Mapping[str, Any]]) -> str:
    """Every claim the ledger ever watched: the active ones with Pr(C) now, risk spent and the releases
    that spent it; removed ones with the entries that added and removed them."""
    esc = html.escape
    active = {c["id"]: c for c in claims}
    removed = {str(e.payload.get("id")): e.seq for e in entries if e.kind == "unwatch"}
    rows = []
    for e in entries:
        if e.kind != "watch":
            continue
        cid, p = str(e.payload.get("id")), e.payload
        low, high = p.get("low"), p.get("high")
        claim = (
            f"{'' if low is None else f'{low:g} ≤ '}θ{'' if high is None else f' ≤ {high:g}'}"
            f" (τ = {float(p['threshold']):g})"
        )
        c = active.get(cid)
        if c is not None:
            now = "not estimable (worst case)" if c.get("probability") is None else f"{c['probability']:.4f}"
            spent = f"{c['risk_spent']:.4g} of {c['risk']:g}"
            moved = ", ".join(f"#{t['entry']} ({t['risk']:.3g})" for t in c.get("touched", ())) or "none"
            state = f"watched since #{e.seq}"
        else:
            now, spent, moved = "", "", ""
            state = f"#{e.seq} – removed at #{removed.get(cid, '?')}"
        rows.append(
            f"<tr><td>{esc(cid)}</td><td>{esc(str(p.get('name') or ''))}</td>"
            f"<td>{esc(str(p.get('query_text') or ''))}</td><td>{esc(claim)}</td><td>{esc(now)}</td>"
            f"<td>{esc(spent)}</td><td>{esc(moved)}</td><td>{esc(state)}</td></tr>"
        )
    if not rows:
        return "<p>No claims were watched.</p>"
    return (
        "<p>Claims releases must not make too certain (chosen from public knowledge or policy). A release "
        "that touches a claim spends the probability, at the worst true value inside it, that Pr(claim) "
        "reaches τ because of it; none may spend more than the claim's risk budget.</p>"
        "<table><tr><th>id</th><th>name</th><th>query</th><th>claim</th><th>Pr(claim) now</th>"
        "<th>risk spent</th><th>releases that spent it (risk)</th><th>ledger</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def entry_summary(e: LedgerEntry) -> str:
    """What a ledger entry answered or released, in words: the query text, a release plan's
    description, a selection's text form, else the query's JSON or the reason of a refusal."""
    p = e.payload
    if e.kind == "batch":  # a batch plan, recorded before its first measurement
        ids = [r["id"] for r in p.get("requests", ())]
        return f"batch plan: {p.get('strategy', '')} — {len(p.get('measurements', ()))} measurement(s) for {', '.join(ids)}"
    if e.kind == "requests":  # format 10's migration: the decided requests' digests
        return f"the {len(p.get('requests', {}))} request(s) decided before format 10, as they stood"
    query = p.get("query")
    for text in (
        p.get("query_text"),
        p.get("description"),
        p.get("text"),
        query if isinstance(query, str) else None,
    ):
        if text:
            return str(text)
    return json.dumps(thaw(query)) if query is not None else str(p.get("reason", ""))


def _budget_html(
    accounting: ZcdpAccounting | None,
    total: float,
    cost: float,
    remaining: float,
    n: int,
    cost_words: str = "most-spent cell",
) -> str:
    """The budget paragraph: total, system cost (``cost_words``: how it is made from the cells) and
    remaining (under zCDP as ε at the project's δ, with the largest cell's ρ and the conversion named)."""
    if accounting is None:
        return (
            f"<p>Total budget <b>{total:g}</b> · system cost ({html.escape(cost_words)}) <b>{cost:.6g}</b> ·\n"
            f"remaining <b>{remaining:.6g}</b> · {n} ledger entries.</p>"
        )
    eps = accounting.epsilon_of(cost)
    return (
        f"<p>Accounting: {html.escape(accounting.describe())}.</p>\n"
        f"<p>Total privacy loss <b>ε = {accounting.epsilon:g}</b> at <b>δ = {accounting.delta:g}</b> · system "
        f"cost ({html.escape(cost_words)}) <b>ε = {eps:.6g}</b> (its ρ = {cost:.6g} of {total:.6g}) · remaining "
        f"<b>ε = {accounting.epsilon - eps:.6g}</b> · {n} ledger entries. Per-cell costs below are in ρ.</p>"
    )
