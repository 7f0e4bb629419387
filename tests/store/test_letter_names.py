"""Reply letters get file names every file system takes: no two requesters share a file on a
case-insensitive disk (Windows, macOS), and no letter is named after a Windows device."""

from __future__ import annotations

from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.store import Project
from dpdesk.store.letters import write_letters
from dpdesk.store.requesters import accounts


def test_letters_of_requesters_differing_in_case_or_named_like_devices_are_all_written(store, tmp_path):
    path = store.new_project(budget=10, test_project=True)
    names = ["Alice", "alice", "CON", "nul.txt", "a/b", "a:b", "..."]
    with Project.open(path, "w") as p:
        for i, name in enumerate(names):
            r = p.add_request("[1,0,0,0]" if i % 2 else "[0,1,0,0]", 5 + i, 0.1, requester=name)
            p.release(p.assess(r.id), SeededSampler(i))
        accounts_ = accounts(p.ledger(), p.requests())
        written = write_letters(tmp_path / "letters", accounts_, "people")
    stems = [w.stem for w in written if w.suffix == ".txt"]
    by_requester = dict(zip([a.requester for a in accounts_], stems))
    # the first of two clashing names keeps it (accounts come in the order of the list)
    first, second = sorted(["Alice", "alice"], key=[a.requester for a in accounts_].index)
    assert by_requester[first] == first and by_requester[second] == second + "-2"
    first, second = sorted(["a/b", "a:b"], key=[a.requester for a in accounts_].index)
    assert by_requester[first] == "a_b" and by_requester[second] == "a_b-2"
    assert by_requester["CON"] == "_CON" and by_requester["nul.txt"] == "_nul.txt"
    assert by_requester["..."] == "anonymous"
    assert len({s.lower() for s in stems}) == len(names)  # distinct even where case does not count
    for w in written:
        assert b"\r\n" not in w.read_bytes()  # the same bytes on every platform
    texts = {w.stem: w.read_text(encoding="utf-8") for w in written if w.suffix == ".txt"}
    assert "CON" in texts["_CON"] and "a:b" in texts[by_requester["a:b"]]
