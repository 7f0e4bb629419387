"""Write ``visits.csv``: a made-up table of hospital visits where one patient has many rows.

Run from the repository root: ``.venv/bin/python resources/examples/make_visits.py``. Deterministic (seed
33): 600 patients with 1 to 40 visits each (geometric, mean about 5), a ward, the patient's age, the
month, the visit's cost and its length of stay in days (missing for about 5 % of visits). Invented
numbers only; ``visits.schema.json`` declares its cube, its privacy unit and its measures.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def visits(patients: int = 600, seed: int = 33) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    per = np.minimum(rng.geometric(0.2, patients), 40)
    ids = np.repeat(np.arange(patients) + 1001, per)
    n = ids.size
    age = np.repeat(rng.integers(0, 96, patients), per)
    stay = rng.geometric(0.35, n).astype(float)
    stay[rng.random(n) < 0.05] = np.nan
    df = pd.DataFrame(
        {
            "patient_id": ids,
            "ward": rng.choice(
                ["cardiology", "maternity", "oncology", "surgery", "other"], n, p=[0.3, 0.15, 0.2, 0.3, 0.05]
            ),
            "age": age,
            "month": rng.integers(1, 13, n),
            "cost": np.round(rng.lognormal(6.5, 1.0, n), 2),
            "stay_days": pd.array(stay, dtype="Float64"),
        }
    )
    return df.iloc[rng.permutation(n)].reset_index(drop=True)


if __name__ == "__main__":
    out = Path(__file__).with_name("visits.csv")
    visits().to_csv(out, index=False)
    print(f"wrote {out}")
