"""`dpdesk --demo` reopens a demo copy nobody has used instead of piling up ``demo-*`` folders."""

from __future__ import annotations

from pathlib import Path

from dpdesk.appdata.demo import DEMO_TABLE, demo_project, is_untouched
from dpdesk.engine.inference.prior import BoundedPrior
from dpdesk.store.project import Project


def copies(base: Path) -> list[Path]:
    return sorted(base.glob("demo-*"))


def test_an_untouched_copy_is_reopened_and_a_used_one_never(tmp_path):
    base = tmp_path / "data"
    first, reused = demo_project(base)
    assert not reused and copies(base) == [first.parent]
    assert demo_project(base) == (first, True)  # a second start: no new folder
    assert copies(base) == [first.parent]

    # Reversible changes: not reused while they stand, reused once undone.
    table = first.parent / DEMO_TABLE
    original = table.read_bytes()
    table.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    assert not is_untouched(first)
    table.write_bytes(original)
    with Project.open(first, "w") as writer:  # another dpdesk holds it open for writing
        assert not is_untouched(first)
        writer.set_prior(BoundedPrior(60000))
    assert not is_untouched(first)
    with Project.open(first, "w") as writer:
        writer.set_prior(None)
    assert is_untouched(first)

    # A decision is never undone: that copy is kept as it is and a new one is made beside it.
    with Project.open(first, "w") as writer:
        writer.reject("q01", "testing")
    second, reused = demo_project(base)
    assert not reused and second != first and copies(base) == sorted([first.parent, second.parent])
    with Project.open(first) as kept:
        assert [e.kind for e in kept.ledger()] == ["rejected"]

    # An added request counts as use too; a damaged copy is left alone.
    with Project.open(second, "w") as writer:
        writer.add_request('count(sex="Male")', 1, 0.05, "someone")
    assert not is_untouched(second)
    (base / "demo-00000000-000000-000000").mkdir()
    (base / "demo-00000000-000000-000000" / "demo.dpdesk").write_bytes(b"not a project")
    third, reused = demo_project(base)
    assert not reused and len(copies(base)) == 4
    assert demo_project(base) == (third, True)
