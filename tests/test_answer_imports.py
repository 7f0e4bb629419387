"""What a fresh ``dpdesk answer`` imports (issue 35: a fresh count against one OpenDP count).

SciPy's linear algebra is imported when a history is first solved, not by a command that solves
nothing; OpenDP's functions come from the modules that define them, not through its prelude (which
imports OpenDP's scikit-learn, NumPy and Polars front ends).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dpdesk.engine.mechanisms.secure_noise import OpenDPSampler, opendp_namespace

# every name dpdesk's noise families and samplers take from the OpenDP namespace
USED = [
    "atom_domain",
    "vector_domain",
    "absolute_distance",
    "linf_distance",
    "l1_distance",
    "l2_distance",
    "max_divergence",
    "zero_concentrated_divergence",
    "enable_features",
]


def test_opendp_namespace_holds_the_preludes_own_functions():
    prelude = pytest.importorskip("opendp.prelude")
    dp = opendp_namespace()
    for name in USED:
        assert getattr(dp, name) is getattr(prelude, name), name
    assert dp.m is prelude.m
    assert dp.m.make_laplace is prelude.m.make_laplace and dp.m.make_gaussian is prelude.m.make_gaussian


def test_the_sampler_releases_through_that_namespace():
    sampler = OpenDPSampler()
    released = sampler.release("discrete_laplace", 7, 3.0, 1)  # the true value 7 in, its release out
    assert released == int(released) and sampler.name.startswith("opendp-")
    assert sampler._dp.m.make_laplace.__module__ == "opendp.measurements"


SCHEMA = {
    "attributes": [
        {"name": "age", "column": "age", "kind": "numeric", "edges": [0, 30, 60, 90]},
        {"name": "sex", "column": "sex", "kind": "categorical", "values": ["F", "M"]},
    ]
}
ANSWER = (
    "import sys\n"
    "from dpdesk.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print(code, sorted(m for m in ('scipy.linalg', 'opendp.prelude', 'opendp.extras') if m in sys.modules))\n"
)


def test_a_fresh_answer_imports_neither_scipy_linalg_nor_opendps_prelude(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text(
        "age,sex\n" + "".join(f"{20 + i % 60},{'FM'[i % 2]}\n" for i in range(200)), encoding="utf-8"
    )
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps(SCHEMA), encoding="utf-8")
    project = tmp_path / "p.dpdesk"
    env = {**os.environ, "DPDESK_DATA_DIR": str(tmp_path / "data")}
    for args in (
        ["project", "new", project, "--schema", schema, "--source", csv, "--budget", "10"],
        ["requests", "add", project, "--query", 'count(sex="F")', "--eps", "20", "--delta", "0.05"],
    ):
        subprocess.run([sys.executable, "-m", "dpdesk", *map(str, args)], env=env, check=True, timeout=300,
                       capture_output=True)  # fmt: skip
    ran = subprocess.run(
        [sys.executable, "-c", ANSWER, "answer", str(project), "--request", "r1", "--yes"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "answer r1:" in ran.stdout and "fresh" in ran.stdout, ran.stdout + ran.stderr
    assert ran.stdout.splitlines()[-1] == "0 []", ran.stdout
