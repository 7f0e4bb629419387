"""Reply letters: one per requester, ready to send, in plain text and HTML.

A letter lists what the requester received — each query, the released value, the interval and the
confidence it was promised at — and the refusals with their notes, each with the ledger entry and
the witness hash the requester can keep to check later that the ledger still holds the release. It
holds released values and public parameters only; a count is shown rounded to an integer, as everywhere
(:mod:`dpdesk.engine.answering.rounding`).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from dpdesk.engine.answering.rounding import accuracy_text
from dpdesk.engine.budget.mode import ZcdpAccounting
from dpdesk.store.atomic import check_target, write_atomically
from dpdesk.store.requesters import Received, RequesterAccount

__all__ = ["guarantee_sentence", "letter_html", "letter_stems", "letter_text", "write_letters"]


def _item_text(r: Received) -> str:
    if r.kind == "rejected":
        note = (r.reason or "No reason was given").strip()
        note = note if note.endswith((".", "!", "?", "…")) else note + "."
        return f"- {r.request_id}: {r.query}\n  Not answered. {note}\n  (ledger entry #{r.seq})"
    if r.text:
        return (
            f"- {r.request_id}: {r.query}\n  Released: {r.text}.\n  Ledger entry #{r.seq}, witness {r.hash}"
        )
    if r.released is None:
        return f"- {r.request_id}: {r.query}\n  Released as several values (ledger entry #{r.seq})."
    promise = (
        f"the true {'value' if 'sum(' in r.query else 'count'} lies in this interval at that confidence"
        if r.interval
        else f"within {accuracy_text(r.eps, r.delta)}"
        if r.eps is not None and r.delta is not None
        else "released"
    )
    return (
        f"- {r.request_id}: {r.query}\n  Answer: {r.stated()} — {promise}.\n"
        f"  Ledger entry #{r.seq}, witness {r.hash}"
    )


def _opening(account: RequesterAccount, project: str) -> str:
    """What the letter is about: answers, refusals, or both — never "here are the answers" to a requester
    who received none."""
    answered = sum(r.kind != "rejected" for r in account.received)
    refused = account.rejected
    if answered and not refused:
        return (
            f"Here are the answers to your requests on “{project}”, released under differential privacy "
            "(noise was added; every figure below is safe to share)."
        )
    if refused and not answered:
        return (
            f"We could not answer your request{'s' if refused > 1 else ''} on “{project}”. "
            f"{'Each refusal' if refused > 1 else 'The refusal'} and the reason for it are below."
        )
    return (
        f"Here are the decisions on your requests on “{project}”: {answered} answered under differential "
        f"privacy (noise was added; every figure below is safe to share) and {refused} not answered, with "
        "the reasons."
    )


def guarantee_sentence(accounting: ZcdpAccounting | None) -> str:
    """What a letter says of a zCDP project's guarantee ("" for pure ε: the letters say what they did)."""
    if accounting is None:
        return ""
    return (
        f"The project's guarantee is zero-concentrated differential privacy (zCDP), stated as a privacy "
        f"loss of ε = {accounting.epsilon:g} at δ = {accounting.delta:g} for everything it releases."
    )


def letter_text(account: RequesterAccount, project: str, guarantee: str = "") -> str:
    """The plain-text letter to ``account``'s requester about project ``project`` (``guarantee``: a
    sentence on the project's accounting, :func:`guarantee_sentence`)."""
    name = account.requester or "requester"
    items = "\n".join(_item_text(r) for r in account.received) or "- Nothing has been decided yet."
    pending = f"\n\n{account.pending} further request(s) are still pending." if account.pending else ""
    return (
        f"Dear {name},\n\n{_opening(account, project)}{' ' + guarantee if guarantee else ''}\n\n{items}{pending}\n\n"
        "Each witness is the hash of the ledger entry that recorded the decision: keep it to check later "
        "that the ledger still contains it.\n\nKind regards,\nthe data curator\n"
    )


def letter_html(account: RequesterAccount, project: str, guarantee: str = "") -> str:
    """The same letter as a small HTML page."""
    esc = html.escape
    rows = []
    for r in account.received:
        if r.kind == "rejected":
            value, promise = "not answered", esc(r.reason or "no reason given")
        elif r.text:
            value, promise = esc(r.text), ""
        elif r.released is None:
            value, promise = "several values", ""
        else:
            value = esc(r.stated())
            promise = "the true count lies in this interval at that confidence" if r.interval else ""
        rows.append(
            f"<tr><td>{esc(r.request_id)}</td><td>{esc(r.query)}</td><td>{value}</td><td>{promise}</td>"
            f"<td>#{r.seq} <code>{esc(r.hash)}</code></td></tr>"
        )
    pending = f"<p>{account.pending} further request(s) are still pending.</p>" if account.pending else ""
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Answers for "
        f"{esc(account.requester or 'requester')}</title></head><body style='font-family: sans-serif'>"
        f"<p>Dear {esc(account.requester or 'requester')},</p><p>{esc(_opening(account, project))}{esc(' ' + guarantee if guarantee else '')}</p>"
        "<table border='1' cellpadding='4' "
        "style='border-collapse: collapse'><tr><th>request</th><th>query</th><th>answer</th><th>promise</th>"
        f"<th>ledger entry, witness</th></tr>{''.join(rows)}</table>{pending}<p>Keep each witness to check "
        "later that the ledger still contains the decision.</p><p>Kind regards,<br>the data curator</p>"
        "</body></html>\n"
    )


# Names Windows reserves for devices, with any extension (``con.txt`` is the console too).
_RESERVED = {
    "CON",
    "PRN",
    "AUX",
    "NUL",
    *(f"COM{i}" for i in range(1, 10)),
    *(f"LPT{i}" for i in range(1, 10)),
}


def _file_stem(name: str) -> str:
    """A name made safe for a file on any system: letters and digits of any script kept, the rest one
    ``_``; a name Windows keeps for a device (``CON``, ``nul.txt``) gets a ``_`` in front."""
    stem = re.sub(r"[^\w.-]+", "_", name).strip("_.") or "anonymous"
    return f"_{stem}" if stem.split(".")[0].upper() in _RESERVED else stem


def letter_stems(requesters: list[str]) -> dict[str, str]:
    """One file name stem per requester, never shared: of two requesters whose names give the same stem
    (or stems differing only in case, which Windows and macOS do not tell apart) the first keeps it and
    the next gets ``-2``, ``-3``, …"""
    stems: dict[str, str] = {}
    taken: set[str] = set()  # lower-case: "Alice" and "alice" are one file on Windows and macOS
    for r in requesters:
        stem = base = _file_stem(r)[:80]
        k = 1
        while stem.lower() in taken:
            k += 1
            stem = f"{base}-{k}"
        taken.add(stem.lower())
        stems[r] = stem
    return stems


def write_letters(
    folder: str | Path, accounts: list[RequesterAccount], project: str, guarantee: str = ""
) -> list[Path]:
    """Write ``NAME.txt`` and ``NAME.html`` for every requester who received something; the paths.

    Each requester has files of their own (:func:`letter_stems`), each written whole
    (:func:`~dpdesk.store.atomic.write_atomically`); a name already used by a folder, a link or a device in
    ``folder`` is refused in one line before any letter is written.
    """
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    receiving = [a for a in accounts if a.received]
    stems = letter_stems([a.requester for a in receiving])
    jobs = [
        (out / f"{stems[a.requester]}{suffix}", body(a, project, guarantee))
        for a in receiving
        for suffix, body in ((".txt", letter_text), (".html", letter_html))
    ]
    for path, _ in jobs:
        check_target(path)
    for path, text in jobs:

        def write(tmp: Path, text: str = text) -> None:
            tmp.write_text(text, encoding="utf-8", newline="\n")

        write_atomically(path, write)
    return [path for path, _ in jobs]
