"""The app's one vocabulary: every term the curator meets, its meaning, and the Glossary window.

The app follows the paper: the **privacy budget is α** (a release is α-DP), a request's accuracy is
**±ε at confidence 1 − δ**. ε never names a budget. Tooltips everywhere come from :func:`tip`, so a
term is explained in one place and reads the same wherever it appears.
"""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from dpdesk.engine.mechanisms.registry import POSTERIOR_METHODS

# term -> (short name shown in tooltips, explanation); the order is the Glossary's order
TERMS: dict[str, tuple[str, str]] = {
    "alpha": ("privacy budget α",
              "How much privacy a release spends: a fresh answer with Laplace noise of scale b on a query of "
              "sensitivity S costs α = S / b (α-differential privacy). Costs add up per cell."),
    "total": ("total budget",
              "The most α any one cell of the table may ever be charged in this project. Fixed when the "
              "project is created."),
    "eps": ("accuracy ±ε",
            "The half-width a requester asks for: the released value should be within ±ε of the true count."),
    "delta": ("δ (1 − confidence)",
              "The chance the requester accepts that the true count lies outside ±ε; confidence is 1 − δ."),
    "confidence": ("confidence at ±ε",
                   "The posterior probability that the true count lies within ±ε of the estimate, given "
                   "everything released so far. At least 1 − δ means the request can be answered from history."),
    "cell_cost": ("per-cell cost",
                  "The α charged so far to one cell of the table: the sum over every release whose query "
                  "touches the cell (the paper's Theorem 5.4)."),
    "system_cost": ("system cost",
                    "The largest per-cell cost: the privacy the project has spent. Remaining budget = total − "
                    "system cost, so a spend on cells other than the most-spent one leaves it unchanged."),
    "remaining": ("remaining budget",
                  "Total budget − system cost: what the most-spent cell can still be charged."),
    "fusion": ("fusion",
               "A fresh answer combined with what history already says (a weighted average): the requester "
               "gets the more accurate fused value, so a cheaper α meets the request."),
    "pacing": ("pacing (spend policy)",
               "A rule for spending the total budget: each fresh answer spends at least a floor share of "
               "what its cells can still pay, and at most a cap per request."),
    "inferred": ("inferred answer",
                 "An answer computed from earlier releases only: it costs no budget (post-processing)."),
    "fresh": ("fresh answer",
              "A new noisy answer drawn from the data: it spends α on every cell the query touches."),
}
# the posterior methods explain themselves in the engine's registry (the one table of methods)
TERMS.update({name: (f"posterior method {name}", what) for name, what in POSTERIOR_METHODS.items()})


def tip(*keys: str) -> str:
    """Tooltip text for one or more terms (rich text, so Qt wraps it)."""
    parts = [f"<b>{TERMS[k][0]}</b>: {TERMS[k][1]}" for k in keys]
    if not parts:
        return ""
    return "<p>" + "</p><p>".join(parts) + "</p>"


def glossary_html() -> str:
    rows = "".join(f"<dt><b>{name}</b></dt><dd>{text}</dd>" for name, text in TERMS.values())
    return ("<h2>Glossary</h2><p>dpdesk uses one vocabulary: the privacy <b>budget is α</b>; a request asks for "
            "<b>accuracy ±ε</b> at <b>confidence 1 − δ</b>.</p><dl>" + rows + "</dl>")


class GlossaryDialog(QDialog):
    """Help ▸ Glossary: every term of :data:`TERMS`."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Glossary — dpdesk")
        self.resize(560, 620)
        lay = QVBoxLayout(self)
        self.text = QTextBrowser()
        self.text.setHtml(glossary_html())
        lay.addWidget(self.text, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        lay.addWidget(buttons)
