"""An IPUMS-like table for the Chen–Zhou–Bhowmick experiments (seed §5, Fig. 1), generated here.

The seed's "Adult" extract of IPUMS (about 500 000 people, 9 integer-coded attributes) is not
available offline, so this module generates a table with the same attributes and domain sizes
(79·2·17·51·9·7·6·50·50 ≈ 1.3·10¹¹ cells) and census-like dependencies, from a fixed seed:

- age 16–94 from a mixture of three normals (young workers, middle age, retirees);
- gender uniform; birth-place (51 states) Zipf-like; race (9) depends on a region of birth-place;
- education 1–17 depends on age and race; marital status (6) on age and gender;
- work-class (7) on age and education (retirement, government, self-employment);
- occupation (50) on education and gender through 10 occupation groups;
- salary bin 0–49 from a log-normal wage depending on education, age (quadratic), gender, work-class
  and occupation group, zero for most people not in work.

Rows are integer codes (``codes[:, d]`` in ``0..size_d − 1``); the cube is never materialised. The
exact marginals the experiments need are computed from the codes by :func:`marginal`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

NAMES = ("age", "gender", "education", "birthplace", "race", "workclass", "marital", "occupation", "salary")
SIZES = (79, 2, 17, 51, 9, 7, 6, 50, 50)
ROWS = 500_000


def _categorical(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    """One draw per row from row-wise probability vectors (``rows × k``)."""
    cdf = np.cumsum(probs, axis=1)
    cdf /= cdf[:, -1:]
    return (rng.random((probs.shape[0], 1)) > cdf).sum(axis=1)


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def generate(rows: int = ROWS, seed: int = 20121) -> np.ndarray:
    """The table as an ``rows × 9`` int32 array of codes (deterministic for a seed)."""
    rng = np.random.default_rng(seed)
    comp = rng.choice(3, size=rows, p=[0.35, 0.45, 0.20])
    age = np.where(
        comp == 0,
        rng.normal(27, 6, rows),
        np.where(comp == 1, rng.normal(45, 10, rows), rng.normal(70, 9, rows)),
    )
    age = np.clip(np.rint(age), 16, 94).astype(np.int64) - 16
    gender = (rng.random(rows) < 0.49).astype(np.int64)
    birth_w = 1.0 / np.arange(1, 52) ** 0.9
    birth = rng.choice(51, size=rows, p=birth_w / birth_w.sum())
    region = birth % 4
    race_base = np.array([4.0, 1.2, 0.2, 0.6, 0.1, 0.3, 0.15, 0.1, 0.2])
    race_shift = rng.normal(0, 0.8, (4, 9))
    race = _categorical(rng, _softmax(np.log(race_base)[None, :] + race_shift[region]))
    a = age + 16
    edu_mean = (
        9.5
        + 2.0 * np.exp(-(((a - 35) / 25.0) ** 2))
        - 0.02 * np.maximum(a - 60, 0)
        + np.array([0.5, -0.8, -1.5, 1.2, -1.0, -0.5, 0.0, 0.3, -0.2])[race]
    )
    education = np.clip(np.rint(rng.normal(edu_mean, 2.6)), 1, 17).astype(np.int64) - 1
    # marital: never, married, divorced, separated, widowed, spouse absent
    young = 1.0 / (1.0 + np.exp((a - 28) / 4.0))
    old = 1.0 / (1.0 + np.exp(-(a - 72) / 6.0))
    mar_logit = np.stack(
        [
            3.0 * young,
            1.5 - young + 0.2 * gender,
            0.3 + 0.01 * a,
            -1.0 + 0.0 * a,
            -3.0 + 4.0 * old + 0.8 * (gender == 1),
            -2.0 + 0.0 * a,
        ],
        axis=1,
    )
    marital = _categorical(rng, _softmax(mar_logit))
    retired = a >= rng.normal(65, 4, rows)
    # work-class: not in work, private, self-employed, self-employed inc., federal, state, local
    wc_logit = np.stack(
        [
            -1.0 + 4.0 * retired + 1.0 * (a < 20),
            1.8 + 0.0 * a,
            -0.8 + 0.02 * a,
            -1.8 + 0.08 * education,
            -2.2 + 0.05 * education,
            -1.8 + 0.05 * education,
            -1.5 + 0.06 * education,
        ],
        axis=1,
    )
    workclass = _categorical(rng, _softmax(wc_logit))
    group_edu = np.linspace(-1.0, 1.0, 10)
    group_gender = rng.normal(0, 0.9, 10)
    grp_logit = group_edu[None, :] * (education[:, None] - 8) / 3.0 + group_gender[None, :] * (
        2 * gender[:, None] - 1
    )
    group = _categorical(rng, _softmax(grp_logit))
    occupation = group * 5 + rng.choice(5, size=rows, p=[0.35, 0.25, 0.2, 0.12, 0.08])
    log_wage = (
        9.6
        + 0.09 * education
        + 0.06 * (a - 16)
        - 0.0009 * (a - 16) ** 2
        - 0.25 * gender
        + 0.12 * group_edu[group]
        + np.array([0, 0, 0.1, 0.4, 0.2, 0.1, 0.05])[workclass]
        + rng.normal(0, 0.55, rows)
    )
    wage = np.exp(log_wage)
    salary = np.clip((wage / 2500.0).astype(np.int64), 0, 49)
    salary = np.where((workclass == 0) & (rng.random(rows) < 0.85), 0, salary)
    codes = np.stack([age, gender, education, birth, race, workclass, marital, occupation, salary], axis=1)
    assert np.all(codes >= 0) and np.all(codes < np.array(SIZES))
    return codes.astype(np.int32)


@lru_cache(maxsize=4)
def _cached(rows: int, seed: int) -> np.ndarray:
    codes = generate(rows, seed)
    codes.setflags(write=False)
    return codes


def table(rows: int = ROWS, seed: int = 20121) -> np.ndarray:
    """:func:`generate`, cached per process (read-only)."""
    return _cached(rows, seed)


def marginal(codes: np.ndarray, axes: tuple[int, ...], sizes: tuple[int, ...] = SIZES) -> np.ndarray:
    """Exact counts of the table on the given attributes (shape ``tuple(sizes[a] for a in axes)``)."""
    shape = tuple(sizes[a] for a in axes)
    flat = np.ravel_multi_index(tuple(codes[:, a].astype(np.int64) for a in axes), shape)
    return np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape).astype(np.float64)
