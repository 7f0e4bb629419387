"""The queue's queries are parsed once and read again only when what is stored for them changes."""

from __future__ import annotations

from dpdesk.store import Project


def test_a_stored_query_is_parsed_again_only_when_it_changes(store):
    path = store.new_project()
    with Project.open(path, "w") as p:
        p.add_request({"indices": [0, 3], "values": [1, 2]}, 5.0, 0.05, request_id="r1")
        p.add_request('count(age="0-30")', 5.0, 0.05, request_id="r2")
        first = p.request("r1").query
        assert first.dense().tolist() == [1, 0, 0, 2]
        assert p.requests()[0].query is first  # read again, not parsed again
        with p.sibling() as worker:  # a worker's connection reads the same parsed queries
            assert worker.request("r1").query is first
            worker.edit_request("r1", {"indices": [1, 2], "values": [1, 1]}, 5.0, 0.05)
        edited = p.request("r1").query  # changed through another connection: parsed anew
        assert edited.dense().tolist() == [0, 1, 1, 0]
        p.edit_request("r2", 'count(income=">50K")', 5.0, 0.05)
        assert p.request("r2").query.text == 'count(income=">50K")'
        assert p.request("r2").query.dense().tolist() == [0, 1, 0, 1]
    with Project.open(path, "r") as fresh:  # another process reads what is stored
        assert fresh.request("r1").query.dense().tolist() == [0, 1, 1, 0]
