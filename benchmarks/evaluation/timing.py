"""Paper §6.2 (BLUE running time) and §6.3 (posterior methods: time and error), on dpdesk's engine.

§6.2: random histories with ``α ~ U[0, 1]`` (floored at 0.01) and integer coefficients in ``0..10``
(``max S = 10``, 30% non-zero). "paper" is the literal dense formula ``A = Q (HᵀW²H)⁻¹ HᵀW²`` (numpy
``inv``); "dpdesk build+estimate" appends the m rows to a :class:`History` (incremental factorisation)
and estimates one query; "dpdesk estimate" is one more query on the built history.

§6.3: histories with coefficients in ``0..5`` (``max S = 5``), ``γ = 0.01``. "PC (paper, unit bins)" is
paper Algorithm 2 on unit bins (``posterior_grid.direct`` with ``h = 1``), whose cost grows with
``β = (Σ|A_k| S_k/α_k)²``; "direct" and "fft" are :func:`dpdesk.engine.inference.posterior.posterior` (adaptive
grid); "MC" is paper Algorithm 1. Error (Def 4.2 style): ``Σ_i (u_i − r_i)²`` against a reference ``r``
on the same grid — the fft masses computed with ``γ = 10⁻⁹`` resampled to that grid.
"""

from __future__ import annotations

import time

import numpy as np

from dpdesk.engine.inference import grid as _g
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.inference.posterior import posterior
from dpdesk.engine.queries.query import Query


def _rows(rng, m, n, smax, density=0.3):
    H = rng.integers(0, smax + 1, size=(m, n)) * (rng.random((m, n)) < density)
    for i in np.flatnonzero(~H.any(axis=1)):
        H[i, rng.integers(n)] = 1
    H[:, :] = H
    alpha = np.maximum(rng.uniform(0, 1, m), 0.01)
    return H.astype(float), alpha


def _query(vec):
    nz = np.flatnonzero(vec)
    return Query((vec.size,), indices=nz, values=vec[nz])


def _timed(fn, repeat=1):
    best = np.inf
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def blue_case(rng, m, n):
    H, alpha = _rows(rng, m, n, 10)
    S = np.abs(H).max(axis=1)
    y = rng.normal(100, 10, m)
    q = H[: min(m, 3)].sum(axis=0)  # estimable

    def paper():
        W2 = (alpha / S) ** 2
        M = H.T @ (W2[:, None] * H)
        return q @ np.linalg.inv(M) @ (H.T * W2)

    def build():
        h = History((n,))
        for i in range(m):
            h.append(HistoryRow(_query(H[i]), float(alpha[i]), float(y[i])))
        return h, h.estimate(_query(q))

    t_paper, A_paper = _timed(paper)
    t_build, (h, est) = _timed(build)
    q2 = H[min(m, 3) : min(m, 3) + 2].sum(axis=0)
    t_est, _ = _timed(lambda: h.estimate(_query(q2)), repeat=3)
    agree = float(np.max(np.abs(A_paper - est.coefficients)))
    return {"m": m, "n": n, "paper": t_paper, "build": t_build, "estimate": t_est, "max_diff_A": agree}


def blue_sweeps(quick: bool, rng):
    ms = [100, 200] if quick else [100, 250, 500, 1000, 1500, 2000]
    ns = [50, 100] if quick else [100, 200, 300, 400, 500]
    vs_m = [blue_case(rng, m, 100) for m in ms]
    vs_n = [blue_case(rng, 2 * n, n) for n in ns]
    return vs_m, vs_n


def _history_A(rng, m, n, alpha_scale=1.0):
    H, alpha = _rows(rng, m, n, 5)
    alpha = alpha * alpha_scale
    h = History((n,))
    for i in range(m):
        h.append(HistoryRow(_query(H[i]), float(alpha[i]), 0.0))
    est = h.estimate(_query(H[:3].sum(axis=0)))
    return np.asarray(est.coefficients), np.asarray(est.noise_scales)


def _reference(A, b, grid, h):
    ref = posterior(0.0, A, b, method="fft", gamma=1e-9)
    edges = np.concatenate([grid - h / 2, [grid[-1] + h / 2]])
    cdf = np.array([ref.cdf(e) for e in edges])
    return np.diff(cdf)


def posterior_case(A, b, methods, gamma=0.01, samples=None, rng=None):
    out = {"beta": float(np.sum(np.abs(A) * b)) ** 2}
    comp = _g.make_components(A, b, np.zeros(A.size, bool))
    fft_post = None
    for meth in methods:
        if meth == "pc_unit":
            t, (mass, _) = _timed(lambda: _g.direct(comp, 1.0, gamma))
            out["pc_unit"] = t
            continue
        kw = {"samples": samples, "rng": rng} if meth == "mc" else {}
        t, post = _timed(lambda: posterior(0.0, A, b, method=meth, gamma=gamma, **kw))
        out[meth] = t
        if meth == "fft":
            fft_post = post
        out[meth + "_post"] = post
    ref_grid = fft_post or out.get("mc_post") or out.get("direct_post")
    if ref_grid is not None:
        r = _reference(A, b, ref_grid.grid, ref_grid.spacing)
        for meth in ("fft", "direct", "mc"):
            p = out.pop(meth + "_post", None)
            if p is not None and p.grid.size == r.size:
                out[meth + "_err"] = float(np.sum((p.mass - r) ** 2))
    return out


def posterior_sweeps(quick: bool, rng):
    res = {}
    ms = [100, 200] if quick else [200, 400, 600, 800, 1000]
    res["vs_m"] = [
        dict(
            m=m,
            **posterior_case(
                *_history_A(rng, m, 50 if quick else 100), ["pc_unit", "direct", "mc", "fft"], rng=rng
            ),
        )
        for m in ms
    ]
    ns = [25, 50] if quick else [50, 100, 200, 300]
    res["vs_n"] = [
        dict(
            n=n,
            **posterior_case(
                *_history_A(rng, 150 if quick else 500, n), ["pc_unit", "direct", "mc", "fft"], rng=rng
            ),
        )
        for n in ns
    ]
    A, b = _history_A(rng, 150 if quick else 1000, 50 if quick else 100)
    scales = [1.0, 0.5] if quick else [2.0, 1.0, 0.5, 0.25, 0.125]
    res["vs_beta"] = [posterior_case(A, b / s, ["pc_unit", "direct", "fft"]) for s in scales]
    A, b = _history_A(rng, 100, 50 if quick else 100)
    sizes = [10**4, 2 * 10**4] if quick else [10**5, 2 * 10**5, 4 * 10**5, 7 * 10**5, 10**6]
    res["vs_samples"] = [
        dict(samples=s, **posterior_case(A, b, ["mc", "fft"], samples=s, rng=rng)) for s in sizes
    ]
    return res
