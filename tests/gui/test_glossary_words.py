"""Issue 12 item 4: the words. The Glossary (app and docs, one text) says once what dpdesk's
"posterior" and "credible interval" are under the flat prior and what they guarantee, and a Monte
Carlo result is never called exact."""

from __future__ import annotations

from pathlib import Path

from dpdesk.gui.widgets import glossary

ROOT = Path(__file__).resolve().parents[2]


def test_glossary_window_says_what_the_intervals_guarantee(qtbot):
    dlg = glossary.GlossaryDialog()
    qtbot.addWidget(dlg)
    text = " ".join(dlg.text.toPlainText().split())
    assert "What the numbers promise" in text
    assert "the posterior is the sampling distribution of the BLUE's error" in text
    assert "at every fixed table" in text and "stronger than a Bayesian credible interval" in text
    for key in ("posterior", "credible", "coverage", "blue", "error_bound", "exact", "bounds"):
        name, explanation = glossary.TERMS[key]
        assert name in text and " ".join(explanation.split()) in text
    assert "coverage" in glossary.TERMS["credible"][1] and "coverage" in glossary.TERMS["confidence"][1]


def test_docs_glossary_is_the_apps_glossary_word_for_word():
    docs = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    assert docs == glossary.glossary_markdown() + "\n", (
        "docs/glossary.md is stale: run tools/write_glossary.py"
    )
    for doc in ("README.md", "docs/gui.md"):  # where a reader finds it
        assert "glossary.md" in (ROOT / doc).read_text(encoding="utf-8"), doc


def test_monte_carlo_is_never_called_exact():
    from dpdesk.engine.mechanisms.registry import POSTERIOR_METHODS
    from dpdesk.gui.panels.assessment_text import METHOD_WORDS

    assert "exact" not in METHOD_WORDS["mc"].lower()
    assert "exact" not in POSTERIOR_METHODS["mc"].lower() and "0.999" in POSTERIOR_METHODS["mc"]
    assert "exact" not in glossary.tip("mc").lower()


def test_the_glossary_speaks_the_ecosystems_words():
    """Issue 34 item 9: ε is privacy loss, δ only approximate DP's, accuracy ±a at a confidence; the
    paper's letters appear once, in the sentence saying old files and flags keep working."""
    text = glossary.glossary_markdown()
    rest = text.replace(glossary.EARLIER_WORDS, "")
    assert glossary.EARLIER_WORDS in text and "--eps, --delta, --alpha" in glossary.EARLIER_WORDS
    assert "α" not in rest and "±ε" not in rest and "1 − δ" not in rest
    assert glossary.TERMS["epsilon"][0] == "privacy loss ε"
    assert glossary.TERMS["approx_delta"][0] == "δ (approximate DP)"
    assert "(ε, δ)-differential privacy" in glossary.TERMS["approx_delta"][1]
    assert glossary.TERMS["accuracy"][0] == "accuracy ±a"
    assert "significance" in glossary.TERMS["confidence_level"][1]
    # a view still asking for a term by its former key gets the term that now says it
    assert glossary.tip("alpha") == glossary.tip("epsilon") and glossary.tip("eps") == glossary.tip(
        "accuracy"
    )
    assert glossary.tip("delta") == glossary.tip("confidence_level")
