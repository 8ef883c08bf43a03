#!/usr/bin/env python3
"""Reference vectors for scaffold's statistics, computed with NumPy and SciPy.

Run from anywhere (needs `pip install scipy statsmodels`); writes `stats.json` beside
this script. The Rust tests in `scaffold/tests/all/stats.rs` read that file, so
the JSON is committed and this script is only re-run to add cases.

Conventions matched (see `scaffold/src/eval/stats.rs` and
`scaffold/src/eval/stats/significance.rs`):

* mean; sample standard deviation `np.std(x, ddof=1)`; percentiles
  `np.percentile(x, q)` (method="linear", NumPy's default);
* paired t-test `scipy.stats.ttest_rel(a, b, alternative=...)`;
* Wilcoxon signed-rank `scipy.stats.wilcoxon(a, b, zero_method="wilcox",
  correction=..., alternative=..., method=...)` with `method="exact"` where
  scaffold uses the exact distribution (n <= 50, no ties, no zeros) and
  `method="asymptotic"` (the normal approximation) everywhere else;
* exact McNemar `statsmodels.stats.contingency_tables.mcnemar(exact=True)`
  and the exact paired permutation test `scipy.stats.permutation_test(
  permutation_type="samples")` for the sign-flip test;
* the clustered standard error of a mean: statsmodels `OLS` on a constant
  with `cov_type="cluster"` (CR1);
* power: statsmodels `NormalIndPower(ratio=0)` (one-sample normal test).
"""

import json
import os
import sys

import numpy as np
import scipy
import statsmodels
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

    def add(name, a, b, method, correction=True, force=None):
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
                "method": {"exact": "exact", "auto": "permutation"}.get(method, "normal"),
                "force": force,
                "n": int(np.count_nonzero(d)),
                "zeros": int(np.count_nonzero(d == 0)),
                "ties": bool(has_ties(d)),
                "statistic": float(r.statistic),
                "pvalue": float(r.pvalue),
            })

    # Exact: no ties, no zeros, n <= 50 (SciPy's own rule since 1.9).
    add("scipy-doc-9", [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30],
        [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29], "exact")
    add("exact-1", [2.0], [1.0], "exact")
    add("exact-5-all-positive", [5.1, 4.2, 3.3, 2.4, 1.5], [0.0, 0.0, 0.0, 0.0, 0.0], "exact")
    for n in (6, 10, 16, 25):
        a = rng.normal(0.55, 0.15, n)
        b = rng.normal(0.5, 0.15, n)
        assert not has_ties(a - b) and np.all(a - b != 0)
        add(f"exact-{n}", a, b, "exact")
    # 26..50 untied: exact (as SciPy); beyond, the normal approximation.
    for n in (26, 40, 120):
        a = rng.normal(0.52, 0.2, n)
        b = rng.normal(0.5, 0.2, n)
        assert not has_ties(a - b)
        add(f"{'normal' if n > 50 else 'exact'}-{n}", a, b, "asymptotic" if n > 50 else "exact")
    add("forced-normal-40-uncorrected", rng.normal(0.5, 0.2, 40), rng.normal(0.45, 0.2, 40),
        "asymptotic", correction=False, force="normal")
    # Ties (rounded scores) and zeros: normal approximation with corrections.
    a = np.round(rng.uniform(0, 1, 18), 1)
    b = np.round(rng.uniform(0, 1, 18), 1)
    assert has_ties(a - b)
    add("ties-18", a, b, "asymptotic")
    a = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0]
    b = [0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    # SciPy 1.17's default with ties or zeros and at most 13 pairs: an exact
    # permutation test over every sign assignment.
    add("pass-fail-12", a, b, "auto")
    a = np.round(rng.uniform(0, 1, 50), 2)
    b = a.copy()
    b[::3] = np.round(rng.uniform(0, 1, len(b[::3])), 2)
    add("zeros-and-ties-50", a, b, "asymptotic")
    add("zeros-small", [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [1.0, 1.5, 3.0, 2.5, 6.5, 9.0], "auto")
    add("zeros-small-uncorrected", [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        [1.0, 1.5, 3.0, 2.5, 6.5, 9.0], "asymptotic", correction=False, force="normal")
    # Forced exact with ties: SciPy rounds W+ conservatively.
    add("forced-exact-ties", [1.0, 2.0, 3.0, 4.0, 5.0], [0.0, 1.0, 4.0, 2.0, 6.0], "exact",
        force="exact")
    # The edge of the exact range.
    for n in (33, 50):
        a = rng.normal(0.55, 0.15, n)
        b = rng.normal(0.5, 0.15, n)
        assert not has_ties(a - b) and np.all(a - b != 0)
        add(f"exact-{n}", a, b, "exact")
    a = rng.normal(0.55, 0.15, 51)
    b = rng.normal(0.5, 0.15, 51)
    add("normal-51", a, b, "asymptotic")
    # Issue 38: pass/fail +7/-1/0x3 (the normal approximation said 0.041).
    add("pass-fail-7-1-3", [1.0] * 7 + [0.0] + [1.0] * 3, [0.0] * 7 + [1.0] + [1.0] * 3, "auto")
    add("ties-13", [3.0, 1.0, 2.0, 2.0, 5.0, 1.0, 4.0, 2.0, 3.0, 1.0, 2.0, 2.0, 4.0],
        [1.0, 1.0, 1.0, 3.0, 2.0, 0.0, 1.0, 2.0, 1.0, 2.0, 0.0, 1.0, 2.0], "auto")
    # 14 pairs with ties: beyond the permutation range, the normal approximation.
    add("ties-14", [3.0, 1.0, 2.0, 2.0, 5.0, 1.0, 4.0, 2.0, 3.0, 1.0, 2.0, 2.0, 4.0, 3.0],
        [1.0, 1.0, 1.0, 3.0, 2.0, 0.0, 1.0, 2.0, 1.0, 2.0, 0.0, 1.0, 2.0, 1.0], "asymptotic")
    return cases


def mcnemar_cases():
    """Exact McNemar (statsmodels) on pass/fail pairs: the sign-flip test
    on ±1/0 differences must give the same p."""
    from statsmodels.stats.contingency_tables import mcnemar
    out = []
    for wins, losses, both_pass, both_fail in [(5, 0, 0, 0), (5, 1, 2, 1), (7, 2, 0, 1),
                                               (4, 4, 1, 1), (12, 3, 5, 0), (1, 0, 3, 3),
                                               (9, 1, 10, 10), (0, 6, 2, 0)]:
        table = [[both_pass, wins], [losses, both_fail]]
        r = mcnemar(table, exact=True)
        out.append({"wins": wins, "losses": losses, "bothPass": both_pass,
                    "bothFail": both_fail, "pvalue": float(r.pvalue)})
    return out


def sign_flip_cases():
    """SciPy's exact paired permutation test (`permutation_test`, sample
    swaps within pairs, mean difference), with ties and zeros."""
    out = []

    def add(name, a, b):
        a = np.asarray(a, dtype=float)
        b = np.asarray(b, dtype=float)
        r = stats.permutation_test((a, b), lambda x, y, axis: np.mean(x - y, axis=axis),
                                   permutation_type="samples", n_resamples=np.inf,
                                   alternative="two-sided", vectorized=True)
        out.append({"name": name, "a": floats(a), "b": floats(b), "pvalue": float(r.pvalue)})

    add("pass-rates-ties-zeros-8", [1.0, 0.6, 0.8, 1.0, 0.4, 1.0, 0.2, 0.8],
        [0.6, 0.6, 0.4, 1.0, 0.4, 0.8, 0.2, 0.4])
    add("scores-12", np.round(rng.uniform(0.3, 1, 12), 2), np.round(rng.uniform(0.2, 0.9, 12), 2))
    add("ties-10", [1.0, 1.0, 0.5, 0.5, 1.0, 0.0, 1.0, 0.5, 0.5, 1.0],
        [0.5, 0.5, 0.0, 0.5, 0.0, 0.0, 0.5, 1.0, 0.0, 0.5])
    add("two-pairs", [0.9, 0.4], [0.1, 0.4])
    add("all-zero", [0.5, 0.7], [0.5, 0.7])
    add("trial-means-16", np.round(rng.integers(0, 6, 16) / 5, 1), np.round(rng.integers(0, 6, 16) / 5, 1))
    return out


def clustered_se_cases():
    """Cluster-robust (CR1) standard error of a mean: statsmodels OLS on a
    constant with `cov_type="cluster"`."""
    import statsmodels.api as sm
    out = []

    def add(name, x, groups):
        x = np.asarray(x, dtype=float)
        fit = sm.OLS(x, np.ones(len(x))).fit(cov_type="cluster",
                                             cov_kwds={"groups": np.asarray(groups)})
        out.append({"name": name, "values": floats(x), "clusters": [int(g) for g in groups],
                    "se": float(fit.bse[0])})

    add("agreeing-trials-2x5", [1.0] * 5 + [0.0] * 5, [1] * 5 + [2] * 5)
    add("singletons", [1.0, 0.0, 1.0, 1.0, 0.0, 1.0], [1, 2, 3, 4, 5, 6])
    groups = np.repeat(np.arange(12), 3)
    add("pass-fail-12x3", floats(rng.integers(0, 2, 36)), groups)
    groups = np.concatenate([np.repeat(i, k) for i, k in enumerate([1, 4, 2, 5, 3, 1, 2])])
    add("scores-unequal", floats(np.round(rng.uniform(0, 1, len(groups)), 3)), groups)
    groups = np.repeat(np.arange(25), 5)
    case_effect = np.repeat(rng.uniform(0.1, 0.9, 25), 5)
    add("correlated-25x5", floats((rng.uniform(0, 1, 125) < case_effect).astype(float)), groups)
    return out


def power_cases():
    """Minimum detectable effect and cases needed at 80% power:
    statsmodels `NormalIndPower(ratio=0)` (the one-sample normal test)."""
    from statsmodels.stats.power import NormalIndPower
    p = NormalIndPower()
    out = []
    for cases, sd, alpha in [(6, 0.5, 0.05), (12, 0.3, 0.05), (25, 0.45, 0.05),
                             (100, 0.5, 0.05), (40, 0.2, 0.01), (500, 0.5, 0.1)]:
        es = p.solve_power(effect_size=None, nobs1=cases, alpha=alpha, power=0.8, ratio=0)
        out.append({"kind": "mde", "cases": cases, "sd": sd, "alpha": alpha,
                    "effect": float(es * sd)})
    for effect, sd, alpha in [(0.1, 0.5, 0.05), (0.05, 0.5, 0.05), (0.2, 0.3, 0.05),
                              (0.1, 0.45, 0.01), (0.3, 0.5, 0.1)]:
        n = p.solve_power(effect_size=effect / sd, nobs1=None, alpha=alpha, power=0.8, ratio=0)
        out.append({"kind": "cases", "effect": effect, "sd": sd, "alpha": alpha,
                    "cases": int(np.ceil(n))})
    return out


def sign_flip_binomial_cases():
    """Pass/fail comparisons of any size: the sign-flip test is the exact
    McNemar test (statsmodels), checked against SciPy's `binomtest` too."""
    from statsmodels.stats.contingency_tables import mcnemar
    out = []
    for wins, losses, agreeing in [(115, 87, 0), (114, 86, 0), (30, 10, 5), (61, 40, 99),
                                   (500, 430, 70), (1000, 930, 0), (2, 3, 400), (260, 200, 40)]:
        r = mcnemar([[agreeing, wins], [losses, 0]], exact=True)
        b = stats.binomtest(wins, wins + losses, 0.5).pvalue
        assert abs(r.pvalue - b) <= 1e-12 * max(b, 1e-300)
        out.append({"wins": wins, "losses": losses, "agreeing": agreeing,
                    "pvalue": float(r.pvalue)})
    return out


def exact_sign_flip_p(d):
    """The two-sided sign-flip p of differences on a common grid, counted
    with Python's exact integers: the share of the 2^n sign assignments
    whose sum is at least as far from 0 as the observed one."""
    from fractions import Fraction
    steps = None
    for scale in range(1, 1001):
        v = [Fraction(x).limit_denominator(1000) * scale for x in d]
        close = all(abs(float(f) / scale - x) <= 1e-9 for f, x in zip(v, d))
        if close and all(x.denominator == 1 for x in v):
            steps = [int(x) for x in v if x != 0]
            break
    assert steps is not None
    counts = {0: 1}
    for s in steps:
        nxt = {}
        for total, c in counts.items():
            nxt[total + s] = nxt.get(total + s, 0) + c
            nxt[total - s] = nxt.get(total - s, 0) + c
        counts = nxt
    observed = abs(sum(steps))
    hits = sum(c for total, c in counts.items() if abs(total) >= observed)
    return hits / 2 ** len(steps)


def sign_flip_grid_cases():
    """Differences on a common step (trial means, scores in hundredths) at
    sizes enumeration cannot reach: exact counts in Python integers."""
    out = []

    def add(name, a, b):
        a = np.asarray(a, dtype=float)
        b = np.asarray(b, dtype=float)
        out.append({"name": name, "a": floats(a), "b": floats(b),
                    "pvalue": float(exact_sign_flip_p(list(a - b)))})

    for n, trials in [(30, 3), (60, 3), (150, 5), (240, 2)]:
        a = rng.integers(0, trials + 1, n) / trials
        b = rng.integers(0, trials + 1, n) / trials
        b[: n // 6] = np.maximum(b[: n // 6] - 1 / trials, 0)
        add(f"trial-means-{n}x{trials}", a, b)
    for n in (25, 45):
        add(f"hundredths-{n}", np.round(rng.uniform(0.4, 1, n), 2), np.round(rng.uniform(0.3, 0.9, n), 2))
    return out


def mcnemar_power(n, effect, sd, alpha):
    """Exact power of the two-sided exact binomial (McNemar) test over n
    cases whose difference is +1 with p10, -1 with p01, else 0, where
    p10 - p01 = effect and the differences' spread is sd: SciPy's binom
    and binomtest, summed over the number of cases that differ."""
    pd = sd * sd + effect * effect
    if pd > 1 or effect > pd or pd == 0:
        return 0.0
    q = (pd + effect) / (2 * pd)
    total = 0.0
    for k in range(n + 1):
        reject = [j for j in range(k + 1) if k > 0 and stats.binomtest(j, k, 0.5).pvalue <= alpha]
        total += stats.binom.pmf(k, n, pd) * sum(stats.binom.pmf(j, k, q) for j in reject)
    return total


def mcnemar_power_enumerated(n, effect, sd, alpha):
    """The same power by enumerating all 3^n outcomes (small n only)."""
    import itertools
    pd = sd * sd + effect * effect
    p10, p01 = (pd + effect) / 2, (pd - effect) / 2
    total = 0.0
    for outcome in itertools.product((1, -1, 0), repeat=n):
        wins, losses = outcome.count(1), outcome.count(-1)
        prob = p10 ** wins * p01 ** losses * (1 - pd) ** (n - wins - losses)
        if wins + losses > 0 and stats.binomtest(wins, wins + losses, 0.5).pvalue <= alpha:
            total += prob
    return total


def power_exact_cases():
    """Exact McNemar power (pass/fail comparisons), its minimum detectable
    effect and the cases an effect needs, searched on it."""
    out = []
    for n, effect, sd, alpha in [(6, 0.6, 0.5, 0.05), (8, 0.5, 0.5, 0.05), (9, 0.4, 0.5, 0.05)]:
        enumerated = mcnemar_power_enumerated(n, effect, sd, alpha)
        mixture = mcnemar_power(n, effect, sd, alpha)
        assert abs(enumerated - mixture) < 1e-12, (n, enumerated, mixture)
    for n, effect, sd, alpha in [(6, 0.6, 0.5, 0.05), (8, 0.5, 0.5, 0.05), (9, 0.4, 0.5, 0.05),
                                 (11, 0.42, 0.5, 0.05), (15, 0.3, 0.5, 0.05), (40, 0.2, 0.45, 0.05),
                                 (120, 0.1, 0.5, 0.05), (60, 0.15, 0.4, 0.01)]:
        out.append({"kind": "power", "cases": n, "effect": effect, "sd": sd, "alpha": alpha,
                    "power": float(mcnemar_power(n, effect, sd, alpha))})
    for n, sd, alpha in [(6, 0.5, 0.05), (11, 0.5, 0.05), (15, 0.5, 0.05), (40, 0.45, 0.05)]:
        lo, hi = 0.0, None
        for i in range(1, 201):
            e = i / 200
            if mcnemar_power(n, e, sd, alpha) >= 0.8:
                hi = e
                break
            lo = e
        if hi is not None:
            for _ in range(30):
                mid = (lo + hi) / 2
                if mcnemar_power(n, mid, sd, alpha) >= 0.8:
                    hi = mid
                else:
                    lo = mid
        out.append({"kind": "mde", "cases": n, "sd": sd, "alpha": alpha, "effect": hi})
    for effect, sd, alpha in [(0.3, 0.5, 0.05), (0.2, 0.45, 0.05)]:
        n = next(n for n in range(6, 401) if mcnemar_power(n, effect, sd, alpha) >= 0.8)
        out.append({"kind": "cases", "effect": effect, "sd": sd, "alpha": alpha, "cases": n})
    return out


def main():
    doc = {
        "generator": "scaffold/tests/vectors/gen.py",
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "statsmodels": statsmodels.__version__,
        "descriptive": descriptive_cases(),
        "ttest_rel": ttest_cases(),
        "wilcoxon": wilcoxon_cases(),
        "mcnemar": mcnemar_cases(),
        "sign_flip": sign_flip_cases(),
        "clustered_se": clustered_se_cases(),
        "power": power_cases(),
        "sign_flip_binomial": sign_flip_binomial_cases(),
        "sign_flip_grid": sign_flip_grid_cases(),
        "power_exact": power_exact_cases(),
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stats.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {path}: " + ", ".join(f"{len(v)} {k}" for k, v in doc.items()
                                         if isinstance(v, list)))


if __name__ == "__main__":
    main()
