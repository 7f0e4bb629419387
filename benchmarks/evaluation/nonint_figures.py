"""Figures (PNG, matplotlib Agg) of the non-interactive release evaluation."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

# the seed's Table 2 (average and max error, ×10⁻⁶ of n = 10⁶) for comparison
PAPER_TABLE2 = {
    1: (0.69, 34.92),
    0.5: (1.3, 88.7),
    0.1: (5.8, 453.7),
    0.05: (12, 623.9),
    0.02: (31, 1724),
    0.01: (63.5, 4284),
    0.005: (120, 9107),
}


def figure_1d(path: Path, r: dict, alpha: float, eps_counts: float) -> None:
    row = r["rows"][alpha]
    fig, ax = plt.subplots(1, 2, figsize=(11, 3.8))
    x = np.arange(1, r["beta"] + 1)
    ax[0].bar(x, r["counts"], width=1.0, color="#cccccc", label="original (private)")
    ax[0].step(x, row["released"], where="mid", color="#d62728", lw=1, label=f"released, α = {alpha}")
    ax[0].set(xlabel="income bracket", ylabel="records", title="1-D cell release (one version)")
    ax[0].legend(fontsize=8)
    e = row["errors"]
    ax[1].hist(e, bins=80, color="#1f77b4", density=True)
    for v, lab, c in ((row["worst_halfwidth"], "per query, widest interval (95%)", "#2ca02c"),):
        ax[1].axvline(v, color=c, ls="--", label=lab)
        ax[1].axvline(-v, color=c, ls="--")
    ax[1].set(
        xlabel="error of a random interval query (records)",
        ylabel="density",
        title=f"errors (simultaneous bound ±{row['simultaneous']:.0f}: off scale)",
    )
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def figure_table2(path: Path, r: dict) -> None:
    alphas = sorted(r["rows"])
    n = r["n"]
    fig, ax = plt.subplots(figsize=(6.5, 4))
    ours = [r["rows"][a]["mean_abs"] / n * 1e6 for a in alphas]
    ours_max = [r["rows"][a]["max_abs"] / n * 1e6 for a in alphas]
    ax.loglog(alphas, ours, "o-", color="#1f77b4", label="dpdesk: mean |error|")
    ax.loglog(alphas, ours_max, "s-", color="#1f77b4", alpha=0.5, label="dpdesk: max |error|")
    pa = [a for a in alphas if a in PAPER_TABLE2]
    ax.loglog(
        pa, [PAPER_TABLE2[a][0] for a in pa], "o--", color="#d62728", label="seed Table 2: average error"
    )
    ax.loglog(
        pa,
        [PAPER_TABLE2[a][1] for a in pa],
        "s--",
        color="#d62728",
        alpha=0.5,
        label="seed Table 2: max error",
    )
    ax.set(xlabel="α", ylabel="error (×10⁻⁶ of n = 10⁶)", title="1-D intervals: error against α")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def figure_2d(path: Path, r: dict) -> None:
    fig, ax = plt.subplots(1, 4, figsize=(15, 3.6))
    vmax = float(r["counts"].max())
    for a, img, title in (
        (ax[0], r["counts"], "original (private)"),
        (ax[1], r["cells"]["released"], "released cells"),
        (ax[2], r["tree"]["released"], "tree over income × age (BLUE)"),
    ):
        im = a.imshow(img, aspect="auto", origin="lower", vmin=-vmax * 0.1, vmax=vmax, cmap="viridis")
        a.set(xlabel="income", ylabel="age", title=title)
    fig.colorbar(im, ax=ax[2])
    for name, c in (("cells", "#1f77b4"), ("tree", "#ff7f0e")):
        ax[3].hist(r[name]["errors"], bins=100, histtype="step", density=True, color=c, label=name)
    ax[3].set(xlabel="error of a random rectangle (records)", title="rectangle errors")
    ax[3].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def figure_parity(path: Path, r: dict) -> None:
    fig, ax = plt.subplots(1, 2, figsize=(11, 3.6))
    j = np.arange(1, r["d"])
    ax[0].bar(j, r["learned"], color="#1f77b4", label="fraction of runs answering 1")
    ax[0].scatter(j, r["hidden"], color="#d62728", zorder=3, label="hidden vector")
    ax[0].axhline(0.5, color="k", lw=0.5)
    ax[0].set(xlabel="bit", ylim=(0, 1), title=f"seed §6.3 learning (η = {r['eta']:.4f})")
    ax[0].legend(fontsize=8)
    y = r["released"]
    ax[1].bar(np.arange(y.size), r["counts"], width=1.0, color="#cccccc", label="original (private)")
    ax[1].step(np.arange(y.size), y, where="mid", color="#d62728", lw=0.6, label="released")
    ax[1].set(xlabel="cell (8 bits, C order)", ylabel="records", title="cell release of the parity table")
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def figure_max(path: Path, r: dict, alpha: float, eps: int) -> None:
    sizes = sorted(r)
    fig, ax = plt.subplots(len(sizes), 2, figsize=(11, 3.2 * len(sizes)), squeeze=False)
    for i, n in enumerate(sizes):
        row = r[n]
        x = np.arange(1, row["counts"].size + 1)
        for k, (name, title) in enumerate(
            (("seed", "seed §4.1.2 (not private)"), ("rnm", "report-noisy-max (dpdesk)"))
        ):
            p = row[(name, alpha)]["p"]
            a = ax[i][k]
            a.bar(x, p, width=1.0, color="#1f77b4")
            a2 = a.twinx()
            a2.step(x, row["counts"], where="mid", color="#999999", lw=0.8)
            a2.set_yticks([])
            a.axvspan(row["max"] - eps + 0.5, row["max"] + 0.5, color="#2ca02c", alpha=0.25)
            a.set(
                title=f"{title}, n = {n}: Pr(window) = {row[(name, alpha)]['window']:.3f}",
                xlabel="output value",
                ylabel="output probability",
            )
    fig.suptitle(
        f"max over 1..100 at α = {alpha}; grey: the private data; green: [max − {eps - 1}, max]", fontsize=10
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
