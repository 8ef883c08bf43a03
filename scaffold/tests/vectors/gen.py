#!/usr/bin/env python3
"""Reference vectors for scaffold's statistics, computed with NumPy and SciPy.

Run from anywhere (needs `pip install scipy`); writes `stats.json` beside
this script. The Rust tests in `scaffold/tests/stats.rs` read that file, so
the JSON is committed and this script is only re-run to add cases.

Conventions matched (see `scaffold/src/eval/stats.rs` and
`scaffold/src/eval/stats/significance.rs`):

* mean; sample standard deviation `np.std(x, ddof=1)`; percentiles
  `np.percentile(x, q)` (method="linear", NumPy's default);
* paired t-test `scipy.stats.ttest_rel(a, b, alternative=...)`;
* Wilcoxon signed-rank `scipy.stats.wilcoxon(a, b, zero_method="wilcox",
  correction=..., alternative=..., method=...)` with `method="exact"` where
  scaffold uses the exact distribution (n <= 25, no ties, no zeros) and
  `method="asymptotic"` (the normal approximation) everywhere else.
"""

import json
import os
import sys

import numpy as np
import scipy
from scipy import stats

rng = np.random.default_rng(20260128)
ALTERNATIVES = ["two-sided", "less", "greater"]


def floats(a):
    return [float(x) for x in a]


def descriptive_cases():
    samples = {
        "small": [0.5, 0.75, 1.0],
        "latencies": [1200.0, 950.0, 3100.0, 2200.0, 1800.0, 990.0, 15000.0],
        "single": [42.0],
        "two": [1.0, 3.0],
        "uniform-40": floats(np.round(rng.uniform(0, 1, 40), 6)),
        "lognormal-101": floats(np.round(rng.lognormal(7, 0.5, 101), 3)),
        "ties": [1.0, 1.0, 2.0, 2.0, 2.0, 3.0],
    }
    out = []
    for name, x in samples.items():
        a = np.asarray(x)
        out.append({
            "name": name,
            "values": x,
            "mean": float(np.mean(a)),
            "stddev": float(np.std(a, ddof=1)) if len(a) > 1 else None,
            "min": float(np.min(a)),
            "max": float(np.max(a)),
            "percentiles": {str(q): float(np.percentile(a, q)) for q in (0, 25, 50, 90, 95, 99, 100)},
        })
    return out


def ttest_cases():
    pairs = {
        "doc-example": ([0.9, 0.8, 0.95, 0.7, 0.85], [0.6, 0.7, 0.8, 0.65, 0.5]),
        "two-pairs": ([1.0, 2.0], [0.5, 2.5]),
        "negative-shift-12": (
            floats(np.round(rng.normal(0.6, 0.1, 12), 4)),
            floats(np.round(rng.normal(0.7, 0.1, 12), 4)),
        ),
        "pass-fail-20": (
            floats(rng.integers(0, 2, 20)),
            floats(rng.integers(0, 2, 20)),
        ),
        "noisy-60": (
            floats(rng.normal(1000, 200, 60)),
            floats(rng.normal(1020, 200, 60)),
        ),
        "tiny-effect-30": (
            floats(np.round(rng.normal(0.5, 0.2, 30), 3)),
            floats(np.round(rng.normal(0.5, 0.2, 30), 3)),
        ),
    }
    out = []
    for name, (a, b) in pairs.items():
        for alt in ALTERNATIVES:
            r = stats.ttest_rel(a, b, alternative=alt)
            out.append({
                "name": f"{name}/{alt}",
                "a": a,
                "b": b,
                "alternative": alt,
                "statistic": float(r.statistic),
                "df": float(r.df),
                "pvalue": float(r.pvalue),
            })
    return out


def has_ties(d):
    nz = np.abs(d[d != 0])
    return len(np.unique(nz)) != len(nz)


def wilcoxon_cases():
    cases = []

    def add(name, a, b, method, correction=True):
        a = np.asarray(a, dtype=float)
        b = np.asarray(b, dtype=float)
        d = a - b
        for alt in ALTERNATIVES:
            r = stats.wilcoxon(a, b, zero_method="wilcox", correction=correction,
                               alternative=alt, method=method)
            cases.append({
                "name": f"{name}/{alt}",
                "a": floats(a),
                "b": floats(b),
                "alternative": alt,
                "correction": correction,
                "method": "exact" if method == "exact" else "normal",
                "n": int(np.count_nonzero(d)),
                "zeros": int(np.count_nonzero(d == 0)),
                "ties": bool(has_ties(d)),
                "statistic": float(r.statistic),
                "pvalue": float(r.pvalue),
            })

    # Exact: no ties, no zeros, n <= 25.
    add("scipy-doc-9", [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30],
        [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29], "exact")
    add("exact-1", [2.0], [1.0], "exact")
    add("exact-5-all-positive", [5.1, 4.2, 3.3, 2.4, 1.5], [0.0, 0.0, 0.0, 0.0, 0.0], "exact")
    for n in (6, 10, 16, 25):
        a = rng.normal(0.55, 0.15, n)
        b = rng.normal(0.5, 0.15, n)
        assert not has_ties(a - b) and np.all(a - b != 0)
        add(f"exact-{n}", a, b, "exact")
    # Normal approximation: n > 25 without ties or zeros.
    for n in (26, 40, 120):
        a = rng.normal(0.52, 0.2, n)
        b = rng.normal(0.5, 0.2, n)
        assert not has_ties(a - b)
        add(f"normal-{n}", a, b, "asymptotic")
    add("normal-40-uncorrected", rng.normal(0.5, 0.2, 40), rng.normal(0.45, 0.2, 40),
        "asymptotic", correction=False)
    # Ties (rounded scores) and zeros: normal approximation with corrections.
    a = np.round(rng.uniform(0, 1, 18), 1)
    b = np.round(rng.uniform(0, 1, 18), 1)
    assert has_ties(a - b)
    add("ties-18", a, b, "asymptotic")
    a = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0]
    b = [0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    add("pass-fail-12", a, b, "asymptotic")
    a = np.round(rng.uniform(0, 1, 50), 2)
    b = a.copy()
    b[::3] = np.round(rng.uniform(0, 1, len(b[::3])), 2)
    add("zeros-and-ties-50", a, b, "asymptotic")
    add("zeros-small", [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [1.0, 1.5, 3.0, 2.5, 6.5, 9.0], "asymptotic")
    add("zeros-small-uncorrected", [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        [1.0, 1.5, 3.0, 2.5, 6.5, 9.0], "asymptotic", correction=False)
    # Forced exact with ties: SciPy rounds W+ conservatively.
    add("forced-exact-ties", [1.0, 2.0, 3.0, 4.0, 5.0], [0.0, 1.0, 4.0, 2.0, 6.0], "exact")
    return cases


def main():
    doc = {
        "generator": "scaffold/tests/vectors/gen.py",
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "descriptive": descriptive_cases(),
        "ttest_rel": ttest_cases(),
        "wilcoxon": wilcoxon_cases(),
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stats.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {path}: {len(doc['descriptive'])} descriptive, "
          f"{len(doc['ttest_rel'])} t-test, {len(doc['wilcoxon'])} Wilcoxon vectors")


if __name__ == "__main__":
    main()
