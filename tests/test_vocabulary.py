"""Issue 34 item 9: the one wording of dpdesk's numbers (``dpdesk.engine.vocabulary``)."""

from __future__ import annotations

import pytest

from dpdesk.engine import vocabulary as V


@pytest.mark.parametrize(
    ("typed", "delta"),
    [("0.95", 0.05), ("95%", 0.05), ("95 %", 0.05), (" 0.999 ", 0.001), ("99.9%", 0.001), ("0.9", 0.1)],
)
def test_a_typed_confidence_gives_the_same_delta_as_typing_the_delta(typed, delta):
    # exactly the float a user typing --delta would have stored (1 - 0.95 in floats is 0.050000000000000044)
    assert V.delta_of_confidence(typed) == delta
    assert 1 - 0.95 != 0.05


@pytest.mark.parametrize("typed", ["0", "1", "100%", "0%", "1.5", "-0.1", "nan", "inf", "high", ""])
def test_a_confidence_outside_zero_and_one_is_refused_in_one_line(typed):
    with pytest.raises(ValueError, match=r"^confidence \(") as caught:
        V.delta_of_confidence(typed)
    assert "\n" not in str(caught.value)


def test_numbers_are_worded_as_the_dp_ecosystem_words_them():
    assert V.epsilon_text(0.25) == "ε = 0.25"
    assert V.accuracy_text(3, 0.05) == "±3 at 95 % confidence"
    assert V.accuracy_text(3, 0.001, short=True) == "±3 at 99.9 %"
    assert V.terms_text("count", 50, 0.05, None) == "±50 at 95 %"
    assert V.terms_text("selection", None, None, 0.5) == "ε = 0.5"
    assert V.terms_text("selection", None, None, None) == "—"
    for text in (V.accuracy_text(3, 0.05), V.terms_text("count", 50, 0.05, None), V.epsilon_text(1)):
        assert "α" not in text and "δ" not in text
