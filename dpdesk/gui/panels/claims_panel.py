"""The *Watched claims* panel: each claim with Pr(claim) now, its threshold, the risk it has left and, for
the selected claim, a small plot of Pr(claim) over the ledger marking the releases that moved it.

Add… opens :class:`~dpdesk.gui.dialogs.claim_dialog.ClaimDialog` (also reached from Edit ▸ Watch a claim… and
the budget heatmap's "Watch this cell…"); Remove records an ``unwatch`` entry after a confirmation.
Everything shown is recomputed from the ledger (store/watch.py), off the GUI thread; nothing here reads
the table.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from dpdesk.gui import dialogs
from dpdesk.gui.dialogs import claim_dialog
from dpdesk.gui.runtime.redraw import subscribe
from dpdesk.gui.runtime.session import ProjectSession
from dpdesk.gui.runtime.tasks import TaskRunner
from dpdesk.gui.widgets.models import RowsModel
from dpdesk.gui.widgets.plots import pg, show_axes, show_empty
from dpdesk.gui.widgets.screen_fit import scrolling

CLAIM_HEADERS = ("id", "claim", "Pr(claim) now", "τ", "risk left", "spent by (risk)", "one person: odds ×≤")
CLAIM_COLUMN = 1  # stretches; the others keep their contents' width (Pr(claim) now is never cut)


def claim_rows(statuses) -> list[tuple]:
    out = []
    for s in statuses:
        w, r = s.watched, s.reading
        now = "not estimable yet" if not r.estimable else f"{r.probability:.4f}"
        out.append(
            (
                w.id,
                f"{w.claim.name}: {w.claim.describe()}",
                now,
                w.claim.threshold,
                f"{w.remaining:.4g} of {w.claim.risk:g}",
                ", ".join(f"#{seq} ({risk:.3g})" for seq, risk in w.touched) or "none",
                f"{s.odds_factor:.3g}",
            )
        )
    return out


def claim_notes(statuses, offer=None) -> tuple[list[str], bool, str]:
    """What watched claims say of one request, for the answer panel: its lines, whether a claim blocks
    the release, and the colour to show them in. ``offer`` (a count's counter-offer within the claims)
    gives the one α the note and the counter-offer button both state."""
    checked = [s for s in statuses if s.check is not None]
    lines = []
    for s in checked:
        w, c = s.watched, s.check
        if s.verdict == "declined":
            if offer is not None and offer.eps is not None:
                best = (
                    f"; up to α = {offer.alpha:.4g} passes the claims and fits the cells' budget "
                    f"(±{offer.eps:g}: counter-offer it)"
                )
            elif s.largest_alpha is not None and offer is None:
                best = f"; up to α = {s.largest_alpha:.4g} passes this claim"
            else:
                best = "; no fresh release of it passes"
            lines.append(
                f"Blocked by watched claim {w.id} ({w.claim.name}): this release would make Pr(claim) "
                f"reach τ = {w.claim.threshold:g} with probability {c.risk:.3g}, over the risk left "
                f"({c.remaining:.3g}){best}. Answer from history only (inference), counter-offer, or reject."
            )
        elif s.verdict == "allowed":
            lines.append(
                f"Touches watched claim {w.id} ({w.claim.name}): spends risk {c.risk:.3g} "
                f"of the {c.remaining:.3g} left."
            )
    if checked and not lines:
        lines.append(f"Watched claims: this request touches none of the {len(checked)}.")
    blocked = any(s.verdict == "declined" for s in checked)
    colour = "#a8321f" if blocked else "#8a5a00" if any(s.verdict == "allowed" for s in checked) else "#555"
    return lines, blocked, colour


def offer_options(offer, request) -> list[tuple[str, float, float, str]]:
    """The answer panel's counter-offer for a request watched claims block (``offer`` from
    ``store.watching.offer_within_claims``): ``(words, ε, δ, decision expected)`` per option — a fresh
    answer at the largest α that passes (its wider ±ε stated), and history's free answer at its
    confidence where history estimates the query."""
    out = []
    if offer is not None and offer.eps is not None:
        out.append(
            (
                f"a fresh answer at α = {offer.alpha:.4g}, the largest that passes the claims: within "
                f"±{offer.eps:g} at δ = {offer.delta:g} (not the ±{request.eps:g} asked)",
                offer.eps,
                offer.delta,
                "spend",
            )
        )
    if offer is not None and offer.free_delta is not None:
        out.append(
            (
                f"free from history (inference only): ±{request.eps:g} at {offer.free_confidence:.2%} "
                f"confidence (δ = {offer.free_delta:g}, spends nothing)",
                request.eps,
                offer.free_delta,
                "infer",
            )
        )
    return out


class ClaimsPanel(QWidget):
    """Watched claims of one :class:`ProjectSession` (see the module docstring)."""

    def __init__(self, session: ProjectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.statuses: list = []
        self._trace: list = []  # Pr(claim) over the ledger of the claim the last job read
        self.runner = TaskRunner(self)
        # the tab scrolls when short (as the budget's does): the answer panel above keeps its room at 1024×700
        inner = QWidget()
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        area = scrolling(inner)
        area.setMinimumHeight(60)
        outer.addWidget(area)
        lay = QVBoxLayout(inner)
        bar = QHBoxLayout()
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self.add_btn = QPushButton("Watch a claim…")
        self.add_btn.setToolTip(
            "Watch a claim releases must not make too certain (from public knowledge or "
            "policy, never from the true counts)"
        )
        self.add_btn.clicked.connect(lambda: self.add_claim())
        self.remove_btn = QPushButton("Remove")
        self.remove_btn.setToolTip(
            "Stop watching the selected claim (recorded in the ledger; its history stays)"
        )
        self.remove_btn.clicked.connect(self.remove_claim)
        bar.addWidget(self.summary, 1)
        bar.addWidget(self.add_btn)
        bar.addWidget(self.remove_btn)
        lay.addLayout(bar)
        self.model = RowsModel(CLAIM_HEADERS, self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.setWordWrap(False)
        body = (
            QHBoxLayout()
        )  # the list and the selected claim's plot side by side: the panel is wide, not tall
        body.addWidget(self.table, 5)
        self.plot = pg.PlotWidget(background="w")
        self.plot.setMinimumSize(220, 120)
        self.plot.setMenuEnabled(False)
        self.plot.setLabel("left", "Pr(claim)")
        self.plot.setLabel("bottom", "ledger entry")
        self.plot.setYRange(0, 1, padding=0.05)
        self.curve = self.plot.plot(
            [], [], pen=pg.mkPen("#1f5fa8", width=2), symbol="o", symbolSize=5, symbolBrush="#1f5fa8"
        )
        self.moved = pg.ScatterPlotItem(size=10, brush=pg.mkBrush("#d9822b"), pen=pg.mkPen("#7a3f00"))
        self.plot.addItem(self.moved)
        self.tau_line = pg.InfiniteLine(
            angle=0,
            pen=pg.mkPen("#a8321f", style=Qt.PenStyle.DashLine),
            label="τ",
            labelOpts={"position": 0.05, "color": "#a8321f"},
        )
        self.plot.addItem(self.tau_line)
        body.addWidget(self.plot, 2)
        lay.addLayout(body, 1)
        self.table.selectionModel().currentRowChanged.connect(lambda cur, _prev: self._draw(cur.row()))
        ev = session.state.events
        subscribe(self, (ev.claims_changed, ev.loaded), lambda *_: self.reload())
        self.reload()

    # -- showing -------------------------------------------------------------------------------
    def reload(self) -> None:
        """Recompute the claims off the GUI thread (nothing to do, and nothing started, without claims)."""
        if not self.session.loaded or not self.session.view().claims:
            self.runner.cancel()
            self._show(([], []))
            return
        self.runner.start(
            self.session.claims_job(self.selected_id()), self._show, label="reading watched claims"
        )

    def _show(self, result) -> None:
        keep = self.selected_id()
        self.statuses, self._trace = result
        self.model.set_rows(claim_rows(self.statuses), [s.watched.id for s in self.statuses])
        header = self.table.horizontalHeader()
        for c in range(len(CLAIM_HEADERS)):
            header.setSectionResizeMode(
                c,
                QHeaderView.ResizeMode.Stretch
                if c == CLAIM_COLUMN
                else QHeaderView.ResizeMode.ResizeToContents,
            )
        n = len(self.statuses)
        over = sum(s.reading.estimable and s.reading.over_threshold for s in self.statuses)
        unknown = sum(not s.reading.estimable for s in self.statuses)
        self.summary.setText(
            "No claims are watched."
            if not n
            else f"{n} claim{'s' if n != 1 else ''} watched: {over} at or over τ"
            + (
                f"; {unknown} not estimable yet (no release determines it: read as the worst case)"
                if unknown
                else ""
            )
            + "."
        )
        ids = [s.watched.id for s in self.statuses]
        row = ids.index(keep) if keep in ids else (0 if ids else -1)
        if row >= 0:
            self.table.selectRow(row)
        self._draw(row)
        self.remove_btn.setEnabled(bool(ids))

    def selected_id(self) -> str | None:
        row = self.table.currentIndex().row() if self.table.currentIndex().isValid() else -1
        return self.model.payload(row) if 0 <= row < self.model.rowCount() else None

    def _draw(self, row: int) -> None:
        """Pr(claim) after the claim was added and after every later release; orange: releases that spent risk."""
        if not 0 <= row < len(self.statuses):
            # no claim selected (or none left after a removal): no stale title, no empty axes
            self.plot.setTitle(None)
            show_empty(
                self.plot,
                "Select a claim to see\nPr(claim) over the ledger" if self.statuses else "No claims watched",
            )
            return
        if self.curve not in self.plot.plotItem.items:  # drawn again after show_empty cleared the plot
            self.plot.plotItem.clear()
            for item in (self.curve, self.moved, self.tau_line):
                self.plot.addItem(item)
            show_axes(self.plot)
            self.plot.setYRange(0, 1, padding=0.05)
        w = self.statuses[row].watched
        trace = (
            self._trace if self._trace and self._trace[0][0] == w.added else self.session.claim_trace(w.id)
        )
        xs = [seq for seq, p in trace if p is not None]
        ys = [p for _, p in trace if p is not None]
        self.curve.setData(xs, ys)
        touched = {seq for seq, _ in w.touched}
        self.moved.setData([x for x in xs if x in touched], [y for x, y in zip(xs, ys) if x in touched])
        last = trace[-1][0] if trace else w.added
        self.plot.setXRange(w.added - 0.5, max(last, w.added + 1) + 0.5, padding=0)
        self.tau_line.setValue(w.claim.threshold)
        self.tau_line.setVisible(True)
        self.plot.setTitle(f"{w.id} (orange: spent risk)", size="8pt")

    # -- actions -------------------------------------------------------------------------------
    def add_claim(self, query: str = "") -> bool:
        """Ask for a claim (``query`` prefilled, e.g. a heatmap cell) and watch it; True if one was added."""
        dialog = claim_dialog.ClaimDialog(self.session.schema, query, self)
        if not claim_dialog.run_dialog(dialog) or dialog.claim is None:
            return False
        try:
            self.session.watch(*dialog.claim)
        except Exception as exc:
            dialogs.report_exception(exc, parent=self)
            return False
        return True

    def remove_claim(self) -> None:
        cid = self.selected_id()
        if cid is None:
            return
        if not dialogs.confirm(
            self,
            "Stop watching a claim",
            f"Stop watching claim {cid}? Later releases are no longer checked against it. "
            "The removal is recorded in the ledger and the claim's history stays there.",
        ):
            return
        try:
            self.session.unwatch(cid)
        except Exception as exc:
            dialogs.report_exception(exc, parent=self)
