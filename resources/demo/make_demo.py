"""Regenerate dpdesk's bundled demo: an adult-census-like table, its schema and a request queue.

Run ``python resources/demo/make_demo.py`` from the repository root. The seed is fixed, so the files
come out byte-for-byte the same on the same numpy/pyarrow versions. The table is synthetic: its
columns follow the shape of the UCI "adult" census extract (age, sex, education, hours per week,
income over 50K) with plausible dependencies between them, but no row describes a real person.

Outputs (next to this script):
- ``adult.parquet`` — 60,000 rows, 5 columns, a few deliberately out-of-domain values
  (missing ages, 0 hours, an undeclared education level) so the Data page has something to report;
- ``adult.schema.json`` — the declared domains (DESIGN §6), written by hand below, not read off the data;
- ``requests.json`` — 39 incoming requests with varied ε, δ, requesters and query forms (counts, a mean
  and a sum of hours).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
SEED = 20240517
ROWS = 60_000

EDUCATION = ["Dropout", "HS-grad", "Some-college", "Bachelors", "Masters", "Doctorate"]
AGE_EDGES = [17, 25, 35, 45, 55, 65, 91]
AGE_LABELS = ["17-24", "25-34", "35-44", "45-54", "55-64", "65-90"]
HOURS_EDGES = [1, 20, 35, 41, 50, 99]
HOURS_LABELS = ["1-19", "20-34", "35-40", "41-49", "50-99"]

SCHEMA = {
    "attributes": [
        {"name": "age", "column": "age", "kind": "numeric", "edges": AGE_EDGES, "labels": AGE_LABELS},
        {"name": "sex", "column": "sex", "kind": "categorical", "values": ["Female", "Male"]},
        {"name": "education", "column": "education", "kind": "categorical", "values": EDUCATION},
        {
            "name": "hours",
            "column": "hours_per_week",
            "kind": "numeric",
            "edges": HOURS_EDGES,
            "labels": HOURS_LABELS,
        },
        {"name": "income", "column": "income", "kind": "categorical", "values": ["<=50K", ">50K"]},
    ],
    # hours per week summed per cell too (sums and means, docs/sums.md): bounds declared, not read off the data
    "measures": [{"name": "hours", "column": "hours_per_week", "bounds": [0, 99], "nulls": "skip"}],
}


def make_table(rng: np.random.Generator) -> pd.DataFrame:
    n = ROWS
    age = np.clip(np.round(rng.gamma(shape=3.2, scale=6.8, size=n) + 16), 17, 90)
    sex = np.where(rng.random(n) < 0.67, "Male", "Female")
    # education depends a little on age (older cohorts: fewer degrees)
    base = np.array([0.13, 0.32, 0.23, 0.20, 0.08, 0.04])
    old = age > 55
    p_old = np.array([0.22, 0.36, 0.20, 0.14, 0.06, 0.02])
    u = rng.random(n)
    edu_idx = np.where(old, np.searchsorted(np.cumsum(p_old), u), np.searchsorted(np.cumsum(base), u))
    edu_idx = np.minimum(edu_idx, len(EDUCATION) - 1)
    education = np.array(EDUCATION, dtype=object)[edu_idx]
    hours = np.round(rng.normal(40 + 4 * (sex == "Male") - 10 * (age > 64) - 8 * (age < 22), 10.5))
    hours = np.clip(hours, 1, 99)
    # income: logistic in education, age (peaking mid-career), hours and sex
    logit = (
        -4.8
        + 0.62 * edu_idx
        + 0.09 * np.minimum(age - 17, 35)
        - 0.0018 * np.maximum(age - 52, 0) ** 2
        + 0.035 * (hours - 40)
        + 0.55 * (sex == "Male")
    )
    income = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), ">50K", "<=50K")
    df = pd.DataFrame(
        {
            "age": age.astype("float64"),
            "sex": sex.astype(object),
            "education": education,
            "hours_per_week": hours.astype("float64"),
            "income": income.astype(object),
        }
    )
    # a handful of values outside the declared domains, as real extracts have
    bad = rng.choice(n, size=60, replace=False)
    df.loc[bad[:25], "age"] = np.nan
    df.loc[bad[25:40], "hours_per_week"] = 0.0
    df.loc[bad[40:], "education"] = "Preschool"
    return df


def make_requests() -> list[dict]:
    """The incoming queue: some fresh, some answerable from earlier ones, one that would overspend."""
    q = []

    def add(requester: str, query, eps: float, delta: float) -> None:
        q.append(
            {"id": f"q{len(q) + 1:02d}", "requester": requester, "query": query, "eps": eps, "delta": delta}
        )

    add("ministry-labour", 'count(sex="Female")', 60, 0.05)
    add("ministry-labour", 'count(sex="Male")', 60, 0.05)
    add("ministry-labour", 'count(sex=["Female","Male"])', 120, 0.05)  # from q01+q02
    add("univ-econ", 'count(income=">50K")', 50, 0.05)
    add("univ-econ", 'count(income=">50K")', 150, 0.01)  # repeat, wider: infer
    add("city-planning", 'count(age="17-24")', 40, 0.05)
    add("city-planning", 'count(age="25-34")', 40, 0.05)
    add("city-planning", 'count(age=["17-24","25-34"])', 100, 0.05)  # from q06+q07
    add("press-office", 'count(education="Doctorate", income=">50K")', 30, 0.1)
    add("univ-econ", 'count(education=["Masters","Doctorate"])', 60, 0.05)
    add("health-dept", 'count(hours="50-99")', 50, 0.05)
    add("health-dept", 'count(hours="50-99", sex="Female")', 40, 0.05)
    add("health-dept", 'count(hours="50-99", sex="Male")', 40, 0.05)
    add("health-dept", 'count(hours="50-99")', 80, 0.05)  # again: infer
    add("tax-office", '2*count(income=">50K")', 100, 0.05)  # weighted (paper's tax example)
    add("tax-office", '2*count(income=">50K") - count(age="17-24")', 200, 0.05)  # difference of earlier
    add("journalist-a", 'count(age="65-90", income=">50K")', 25, 0.05)
    add("journalist-a", 'count(age="65-90")', 45, 0.1)
    add("univ-soc", 'count(education="Dropout", sex="Female")', 35, 0.05)
    add("univ-soc", 'count(education="Dropout", sex="Male")', 35, 0.05)
    add("univ-soc", 'count(education="Dropout")', 90, 0.05)  # from q19+q20
    add("ministry-labour", 'count(hours=["1-19","20-34"], sex="Female")', 50, 0.05)
    add("ngo-equality", 'count(sex="Female", income=">50K")', 30, 0.05)
    add("ngo-equality", 'count(sex="Male", income=">50K")', 30, 0.05)
    add("ngo-equality", 'count(income=">50K")', 80, 0.05)  # sum of q23+q24 (and q04)
    # a sparse coefficient form (cells 0..4 of the cube: the youngest female dropouts by hours, low income)
    add("analyst-json", {"indices": [0, 2, 4, 6, 8], "values": [1, 1, 1, 1, 1]}, 20, 0.1)
    add("city-planning", 'count(age=["35-44","45-54"], hours="35-40")', 45, 0.05)
    add("press-office", 'count(education="Bachelors")', 55, 0.05)
    add("press-office", 'count(education="Bachelors", income=">50K")', 40, 0.05)
    add("univ-econ", 'count(age="45-54", education="Masters", income=">50K")', 20, 0.1)
    add("journalist-b", 'count(age="55-64", sex="Female", hours="50-99")', 15, 0.1)
    add(
        "journalist-b",
        'count(age="25-34", sex="Male", education="HS-grad", hours="35-40", income="<=50K")',
        10,
        0.05,
    )
    add("ministry-labour", 'count(sex="Female") - count(sex="Male")', 150, 0.05)  # difference: infer
    add("insurance-co", 'count(income="<=50K")', 2, 0.01)  # would overspend: reject
    add("univ-soc", 'count(education="HS-grad")', 50, 0.05)
    add("univ-soc", 'count(education=["HS-grad","Some-college"])', 60, 0.2)
    add("univ-econ", 'count(income=">50K")', 30, 0.05)  # tighter than q04: history helps, fresh α is cheaper
    # a mean (±a at 95 %, assuming at least N values): fresh, its sum and count of values join history …
    add("ministry-labour", 'mean(hours | sex="Female") assuming at least 10000 values', 0.5, 0.05)
    add("ministry-labour", 'sum(hours | sex="Female")', 4000, 0.05)  # … so the related sum is free
    return q


def main() -> None:
    rng = np.random.default_rng(SEED)
    df = make_table(rng)
    df.to_parquet(HERE / "adult.parquet", index=False, compression="zstd")
    (HERE / "adult.schema.json").write_text(json.dumps(SCHEMA, indent=2) + "\n", encoding="utf-8")
    (HERE / "requests.json").write_text(json.dumps(make_requests(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(df)} rows, {len(make_requests())} requests to {HERE}")


if __name__ == "__main__":
    main()
