"""The app's one vocabulary: every term the curator meets, its meaning, and the Glossary window.

The app speaks the DP ecosystem's words (OpenDP, Tumult, DP Wizard; :mod:`dpdesk.engine.vocabulary`):
**ε is privacy loss** (the budget is a total ε), **δ is only the δ of approximate (ε, δ)-DP**, and a
request asks for an **accuracy ±a at a confidence** such as 95 %. Tooltips everywhere come from
:func:`tip`, so a term is explained in one place and reads the same wherever it appears;
docs/glossary.md is written from the same text (:func:`glossary_markdown`, ``tools/write_glossary.py``;
a test keeps them equal).

"Exact" is kept for numbers exact up to their stated error bound; a Monte Carlo result is never called
exact.
"""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from dpdesk.engine.mechanisms.registry import POSTERIOR_METHODS
from dpdesk.gui.widgets.screen_fit import keep_on_screen

# the one sentence that names the words, at the top of the Glossary (app and docs)
VOCABULARY = (
    "dpdesk uses the words of the differential-privacy ecosystem (OpenDP, Tumult, DP Wizard): "
    "**ε is privacy loss** (a release is ε-DP; the budget is a total ε), **δ is only the δ of "
    "approximate (ε, δ)-DP**, and a request asks for an **accuracy ±a at a confidence** such as "
    "±20 at 95 %."
)
# said once, for whoever used dpdesk before it spoke these words (old files and flags keep working)
EARLIER_WORDS = (
    "Earlier versions followed the letters of the paper dpdesk implements — α for the privacy loss, ±ε "
    "and 1 − δ for the accuracy and its confidence. Their project files, request files and command-line "
    "flags (--eps, --delta, --alpha) still work."
)

TERMS: dict[str, tuple[str, str]] = {
    "epsilon": (
        "privacy loss ε",
        "How much privacy a release spends, the ε of ε-differential privacy: a fresh answer with Laplace "
        "noise of scale b on a query of sensitivity S costs ε = S / b. Costs add up per cell.",
    ),
    "total": (
        "total budget",
        "The most ε any one cell of the table may ever be charged in this project. Fixed when the "
        "project is created.",
    ),
    "accuracy": (
        "accuracy ±a",
        "The half-width a requester asks for: the released value should be within ±a of the true "
        "count, at the confidence they ask for.",
    ),
    "confidence_level": (
        "confidence (e.g. 95 %)",
        "The probability a requester asks for that the released ±a window holds the true count; 100 % "
        "minus it is the chance of a miss they accept (what OpenDP calls the significance level).",
    ),
    "approx_delta": (
        "δ (approximate DP)",
        "The δ of (ε, δ)-differential privacy: the small probability with which a release may lose more "
        "than its ε. Only some releases have one (a posterior of proportions priced by smooth "
        "sensitivity, Gaussian noise); δ adds up per cell like ε, and a project fixes the most any cell "
        "may accumulate (its δ cap; 0 allows pure ε-DP releases only).",
    ),
    "confidence": (
        "confidence at ±a",
        "The probability that the window estimate ± a holds the true count: the posterior's mass on "
        "it, which under the flat prior is its coverage at every fixed table. At least the requested "
        "confidence after the error bound means the request can be answered from history.",
    ),
    "posterior": (
        "posterior",
        "The paper's name for the distribution dpdesk computes for a requested count. Under the flat "
        "prior (the default) it is the sampling distribution of the BLUE's error — a fixed weighted "
        "sum of the released answers' noise — placed around the estimate. Its shape depends on public "
        "quantities only (the queries and ε of past releases), never on the table. (A “posterior of "
        "proportions” release is another thing: a Bayesian posterior of shares under a Dirichlet "
        "prior, released by its own mechanism.)",
    ),
    "credible": (
        "credible interval",
        "The narrowest interval holding at least the requested confidence of the posterior (paper "
        "Algorithm 3), widened by the error bound. Under the flat prior it is a confidence interval: it "
        "holds the true count with at least that probability whatever the table is (see coverage).",
    ),
    "coverage": (
        "coverage",
        "How often an interval holds the true count over the noise of the releases, with the table "
        "held fixed. Under the flat prior every interval and confidence dpdesk shows is a coverage "
        "probability at every fixed table. That is stronger than a Bayesian credible interval, which holds its probability "
        "only on average over tables drawn from its prior. docs/evaluation.md (Calibration end to "
        "end) checks it on real projects.",
    ),
    "blue": (
        "BLUE (estimate θ̂)",
        "The best linear unbiased estimate of the requested count from every released noisy answer: a "
        "weighted sum of them, so its error is the same weighted sum of their noise.",
    ),
    "error_bound": (
        "error bound",
        "How far the computed probabilities can be from the true ones. fft and direct (and the exact "
        "atoms or Beurling–Selberg brackets they switch to for integer noise off one lattice) state "
        "a deterministic bound; Monte Carlo's is statistical and holds with probability 0.999. "
        "Decisions subtract it: "
        "dpdesk infers only when confidence − bound ≥ the requested confidence.",
    ),
    "exact": (
        "exact",
        "dpdesk calls a number exact only when it is exact up to its stated error bound. A Monte Carlo "
        "result is never called exact.",
    ),
    "bounds": (
        "known bounds (table size)",
        "A declared public table size N: every answer then lies within bounds that follow from N (for "
        "a count, [0, N]), and released windows are trimmed to them. Decisions, costs and the coverage guarantee stay the flat prior's; "
        "trimming can only add coverage.",
    ),
    "cell_cost": (
        "per-cell cost",
        "The ε charged so far to one cell of the table: the sum over every release whose query "
        "touches the cell (the paper's Theorem 5.4).",
    ),
    "system_cost": (
        "system cost",
        "The privacy loss ε of one person from everything released: the largest per-cell cost when one "
        "row is one person; when a person may have up to k rows, the per-cell costs of the cells their "
        "rows can fall in, added up (k × the largest, or the k largest with one row per cell). "
        "Remaining budget = total − system cost, so a spend on cells other than the most-spent one "
        "leaves it unchanged.",
    ),
    "remaining": (
        "remaining budget",
        "Total budget − system cost: what the most-spent cell can still be charged.",
    ),
    "fusion": (
        "fusion",
        "A fresh answer combined with what history already says (a weighted average): the requester "
        "gets the more accurate fused value, so a smaller ε meets the request.",
    ),
    "pacing": (
        "pacing (spend policy)",
        "A rule for spending the total budget: each fresh answer spends at least a floor share of "
        "what its cells can still pay, and at most a cap per request.",
    ),
    "inferred": (
        "inferred answer",
        "An answer computed from earlier releases only: it costs no budget (post-processing).",
    ),
    "fresh": (
        "fresh answer",
        "A new noisy answer drawn from the data: it spends ε on every cell the query touches.",
    ),
    "batch": (
        "batch plan",
        "Several pending requests planned together: a few noisy measurements chosen for all of them, "
        "released first, then each request answered from history. It answers at least as many as one by "
        "one would; every request is checked with the exact posterior before anything is spent.",
    ),
    "look_ahead": (
        "look-ahead",
        "A batch plan's first measurements, on cells nobody has paid for yet: one strategy for all "
        "the queue's requests (answered and pending), spending a chosen share of those cells' budget "
        "at once so that later requests on them are answered from history for free. Built from the "
        "requests' queries and accuracies only, never from the data; off unless the curator turns it on. "
        "It is kept when it serves the queue at least as well as the batch planned alone, so it may "
        "answer a few fewer of this batch in exchange for more of the queue's requests later.",
    ),
}
# the posterior methods explain themselves in the engine's registry (the one table of methods)
TERMS.update({name: (f"posterior method {name}", what) for name, what in POSTERIOR_METHODS.items()})


# the keys the terms had while the app spoke the paper's letters: a view that still asks for one gets
# the term that now says it
FORMER_KEYS = {"alpha": "epsilon", "eps": "accuracy", "delta": "confidence_level"}


def tip(*keys: str) -> str:
    """Tooltip text for one or more terms (rich text, so Qt wraps it)."""
    parts = [f"<b>{TERMS[k][0]}</b>: {TERMS[k][1]}" for k in (FORMER_KEYS.get(k, k) for k in keys)]
    if not parts:
        return ""
    return "<p>" + "</p><p>".join(parts) + "</p>"


# what every probability dpdesk shows promises, said once: the top of the Glossary (app and docs)
GUARANTEE_TITLE = "What the numbers promise"
GUARANTEE = (
    "Following the paper, dpdesk calls the distribution it computes for a "
    "requested count a posterior and its narrowest interval at the requested confidence a credible interval. Under the flat prior "
    "(the default) these are not beliefs about the table: the posterior is the sampling distribution of "
    "the BLUE's error, placed around the estimate. So an interval with probability p holds the true count "
    "with probability p at every fixed table — a frequentist coverage guarantee, stronger than a Bayesian "
    "credible interval, which holds p only on average over tables drawn from its prior. Known bounds keep "
    "the guarantee: they only trim released windows.",
)


def _bold_html(text: str) -> str:
    """``**x**`` (the markdown the docs page shows) as ``<b>x</b>``."""
    parts = text.split("**")
    return "".join(f"<b>{p}</b>" if i % 2 else p for i, p in enumerate(parts))


def glossary_html() -> str:
    rows = "".join(f"<dt><b>{name}</b></dt><dd>{text}</dd>" for name, text in TERMS.values())
    promise = f"<h3>{GUARANTEE_TITLE}</h3>" + "".join(f"<p>{text}</p>" for text in GUARANTEE)
    return (
        "<h2>Glossary</h2>"
        + "".join(f"<p>{_bold_html(text)}</p>" for text in (VOCABULARY, EARLIER_WORDS))
        + promise
        + "<dl>"
        + rows
        + "</dl>"
    )


def glossary_markdown() -> str:
    """docs/glossary.md: the same vocabulary as the app's Glossary, word for word."""
    lines = [
        "# Glossary",
        "",
        "<!-- written from dpdesk/gui/widgets/glossary.py by tools/write_glossary.py; edit the terms there -->",
        "",
        VOCABULARY + " The app (Help ▸ Glossary, and every tooltip) and this page say the same.",
        "",
        EARLIER_WORDS,
        "",
    ]
    lines += [f"## {GUARANTEE_TITLE}", ""]
    for text in GUARANTEE:
        lines += [text, ""]
    lines += ["## Terms", ""]
    for name, text in TERMS.values():
        lines += [f"**{name}** — {text}", ""]
    return "\n".join(lines)


class GlossaryDialog(QDialog):
    """Help ▸ Glossary: every term of :data:`TERMS`."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        keep_on_screen(self)
        self.setWindowTitle("Glossary — dpdesk")
        self.resize(560, 620)
        lay = QVBoxLayout(self)
        self.text = QTextBrowser()
        self.text.setHtml(glossary_html())
        lay.addWidget(self.text, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        lay.addWidget(buttons)
