"""The growable Cholesky factor behind the history's incremental updates."""

import numpy as np
import pytest

from dpdesk.engine.inference import linalg
from dpdesk.engine.inference.linalg import GrowingCholesky


@pytest.mark.parametrize("block_rows", [0, 3, 64])
def test_growing_cholesky_tracks_extensions_and_rank_one_updates(block_rows, monkeypatch):
    # rows appended after the contiguous copy are solved as a block beside it (up to block_rows of them)
    monkeypatch.setattr(linalg, "_BLOCK_ROWS", block_rows)
    rng = np.random.default_rng(0)
    chol = GrowingCholesky(capacity=2)  # forces several reallocations
    M = np.zeros((0, 0))
    for step in range(40):
        if step % 3 == 2 and M.shape[0]:
            x = rng.normal(size=M.shape[0])
            chol.rank_one_update(x)
            M = M + np.outer(x, x)
        else:
            r = M.shape[0]
            new = rng.normal(size=r + 1)
            # keep M positive definite: the new row of L is (l, d) with d > 0
            l, d = new[:r], abs(new[r]) + 0.5
            chol.extend(l, d)
            L = np.linalg.cholesky(M) if r else np.zeros((0, 0))
            row = L @ l if r else np.zeros(0)
            M2 = np.zeros((r + 1, r + 1))
            M2[:r, :r] = M
            M2[r, :r] = M2[:r, r] = row
            M2[r, r] = l @ l + d * d
            M = M2
        np.testing.assert_allclose(chol.L @ chol.L.T, M, rtol=1e-10, atol=1e-10)
        b = rng.normal(size=M.shape[0])
        np.testing.assert_allclose(M @ chol.solve_upper(chol.solve_lower(b)), b, rtol=1e-8, atol=1e-8)


def test_identity_factor_skips_work_until_it_changes():
    chol = GrowingCholesky()
    for _ in range(5):
        chol.extend_identity()
    assert chol.identity
    np.testing.assert_array_equal(chol.solve(np.arange(5.0)), np.arange(5.0))
    chol.rank_one_update(np.ones(5))
    assert not chol.identity
    np.testing.assert_allclose((np.eye(5) + 1) @ chol.solve(np.arange(5.0)), np.arange(5.0), atol=1e-12)


@pytest.mark.parametrize("change", ["rank_one", "extend", "extend_coupled"])
def test_a_long_identity_factor_is_not_materialised_until_it_changes(change):
    # 5 000 unit rows (a history of independent releases): n² stores would be 2 × 200 MB
    chol = GrowingCholesky()
    for _ in range(5_000):
        chol.extend_coupled(np.zeros(chol.size), 1.0)
    assert chol.identity and chol.size == 5_000 and chol._L.shape[0] < 100
    b = np.arange(5_000.0)
    np.testing.assert_array_equal(chol.solve(b), b)
    # then a change on a smaller one: the factor is the exact identity plus that change
    small = GrowingCholesky.identity_of(6)
    assert small.size == 6 and small.identity
    M = np.eye(6)
    if change == "rank_one":
        x = np.arange(1.0, 7.0)
        small.rank_one_update(x)
        M = M + np.outer(x, x)
    elif change == "extend":
        small.extend(np.full(6, 0.5), 2.0)
        M = np.block([[M, np.full((6, 1), 0.5)], [np.full((1, 6), 0.5), np.array([[6 * 0.25 + 4.0]])]])
    else:
        c = np.arange(6.0)
        small.extend_coupled(c, 3.0)
        x = np.append(c, 3.0)
        M = np.pad(M, ((0, 1), (0, 1))) + np.outer(x, x)
    assert not small.identity
    np.testing.assert_allclose(small.L @ small.L.T, M, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("queued", [1, 2, 40])
def test_queued_changes_replayed_or_refactored_give_the_same_factor(queued, monkeypatch):
    # at r = 600 one or two queued changes are replayed sweep by sweep, forty are refactored at once
    refactors = []
    real = np.linalg.cholesky
    monkeypatch.setattr(np.linalg, "cholesky", lambda a: refactors.append(a.shape) or real(a))
    rng = np.random.default_rng(queued)
    r = 600
    B = rng.normal(size=(r, r)) / np.sqrt(r)
    M = B @ B.T + np.eye(r)
    chol = GrowingCholesky()
    L0 = real(M)
    for i in range(r):
        chol.extend(L0[i, :i], L0[i, i])
    for k in range(queued):
        if k % 2:
            c, e = rng.normal(size=chol.size), float(rng.uniform(0.5, 2))
            chol.extend_coupled(c, e)
            n = M.shape[0]
            M2 = np.zeros((n + 1, n + 1))
            M2[:n, :n] = M + np.outer(c, c)
            M2[n, :n] = M2[:n, n] = e * c
            M2[n, n] = e * e
            M = M2
        else:
            x = rng.normal(size=chol.size)
            chol.rank_one_update(x)
            M = M + np.outer(x, x)
    np.testing.assert_allclose(chol.L @ chol.L.T, M, rtol=1e-9, atol=1e-9)
    assert len(refactors) == (1 if queued > 8 else 0)
    np.testing.assert_allclose(chol.L, real(M), rtol=1e-7, atol=1e-9)


def test_rows_appended_after_the_copy_are_solved_as_a_block(monkeypatch):
    # a Gram factor only grows (assess, release, assess, …): solves between appends use the copy of the
    # leading rows plus the appended block, recopied once the block outgrows max(_BLOCK_ROWS, r/8)
    monkeypatch.setattr(linalg, "_BLOCK_ROWS", 8)
    rng = np.random.default_rng(3)
    A = rng.normal(size=(120, 130))
    M = A @ A.T
    L = np.linalg.cholesky(M)
    chol = GrowingCholesky(capacity=4, queued=False)
    copies = []
    for r in range(120):
        chol.extend(L[r, :r], L[r, r])
        b = rng.normal(size=(r + 1, 2))  # two right-hand sides at once
        x = chol.solve(b)
        np.testing.assert_allclose(M[: r + 1, : r + 1] @ x, b, rtol=1e-7, atol=1e-7)
        np.testing.assert_allclose(
            L[: r + 1, : r + 1] @ chol.solve_lower(b[:, 0]), b[:, 0], rtol=1e-9, atol=1e-9
        )
        copies.append(chol._solver.shape[0])
    assert len(set(copies)) < 40  # not a copy per appended row
    assert sum(c < r + 1 for r, c in enumerate(copies)) > 80  # most solves met a block of appended rows
