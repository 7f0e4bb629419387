"""Write tests/data/clinic.csv: a small public-style table the project has never seen (issue 34's walk).

3 000 visits to a made-up clinic network, drawn deterministically (numpy's PCG64, seed 2034): region
(4 categories), smoker (a boolean written ``true``/``false``), age (18–90) and visits in the year
(0–40). Nothing in it is real; it exists so the scripted curator walk runs on a table with a boolean
and a numeric column whose names and domains are not the demo's.

    python tests/data/make_clinic.py      # rewrites clinic.csv byte for byte
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

ROWS = 3000


def rows(n: int = ROWS) -> list[tuple[str, str, int, int]]:
    rng = np.random.default_rng(2034)
    region = rng.choice(["north", "south", "east", "west"], size=n, p=[0.4, 0.3, 0.2, 0.1])
    age = rng.integers(18, 91, size=n)
    smoker = rng.random(n) < np.where(age < 40, 0.35, 0.2)
    visits = np.minimum(rng.poisson(np.where(smoker, 6.0, 3.5) + (age - 18) / 30), 40)
    return [
        (str(r), "true" if s else "false", int(a), int(v)) for r, s, a, v in zip(region, smoker, age, visits)
    ]


def main() -> None:
    out = Path(__file__).with_name("clinic.csv")
    text = "region,smoker,age,visits\n" + "".join(f"{r},{s},{a},{v}\n" for r, s, a, v in rows())
    out.write_text(text, encoding="utf-8")
    print(f"wrote {ROWS} rows to {out}")


if __name__ == "__main__":
    main()
