"""Mutation testing of one numeric core with cosmic-ray: ``python tests/mutation.py drift/data_drift.py``.

cosmic-ray, not mutmut 3: mutmut 3 runs the tests against a copy of the sources under
``mutants/``, which the editable install's package-dir mapping (``modelgate.drift`` -> ``drift/``)
bypasses, so the tests would import the unmutated file; cosmic-ray mutates the file in place,
the very file the tests import, and restores it after each mutant. So do not run other tests
in the same checkout while it runs. Each mutant runs only its module's own tests (``TESTS``)
and its doctests, with ``-x``; results go to ``.modelgate/mutation/<module>.sqlite`` and the
summary is printed. ``make mutation MODULE=...`` calls this; figures are in tests/MUTATION.md.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / ".modelgate" / "mutation"

# The tests that exercise each core module; a mutant survives unless one of them fails.
TESTS: dict[str, tuple[str, ...]] = {
    "drift/data_drift.py": ("tests/drift/test_drift_data_drift.py",
                            "tests/drift/test_drift_threshold_rule.py"),
    "drift/distances.py": ("tests/drift/test_drift_distances.py",),
    "drift/reference.py": ("tests/drift/test_drift_reference.py",),
    "drift/adwin.py": ("tests/drift/test_drift_adwin.py",),
    "drift/multivariate.py": ("tests/drift/test_drift_multivariate.py",),
    "drift/attribution.py": ("tests/drift/test_drift_attribution.py",),
    "drift/error_stream.py": ("tests/drift/test_drift_adwin.py",),
    "fairness/disaggregate.py": ("tests/fairness/test_fairness_disaggregate.py",),
    "fairness/metrics.py": ("tests/fairness/test_fairness_metrics.py",),
    "evaluation/metrics.py": ("tests/evaluation/test_eval_metrics.py",),
    "evaluation/sufficient.py": ("tests/evaluation/test_eval_sufficient.py",),
    "evaluation/gate.py": ("tests/evaluation/test_eval_gate.py",),
    "evaluation/policy.py": ("tests/evaluation/test_eval_policy.py",),
    "evaluation/multiclass.py": ("tests/evaluation/test_eval_multiclass.py",),
    "evaluation/regression.py": ("tests/evaluation/test_eval_regression.py",),
    "modelgate/intervals.py": ("tests/evaluation/test_eval_metrics.py",
                               "tests/evaluation/test_eval_sufficient.py"),
    "reports/explain.py": ("tests/reports/test_explain.py",),
}
# A mutant that makes the tests loop is killed after this many seconds.
TIMEOUT_S = 120


def config(module: str) -> str:
    """The cosmic-ray session configuration (TOML) for ``module``.

    Examples
    --------
    >>> print(config("drift/distances.py").splitlines()[1])
    module-path = "drift/distances.py"
    """
    tests = " ".join((*TESTS[module], module))
    return (
        "[cosmic-ray]\n"
        f'module-path = "{module}"\n'
        f"timeout = {TIMEOUT_S}\n"
        "excluded-modules = []\n"
        f'test-command = "{sys.executable} -m pytest -p no:xdist -x -q {tests}"\n'
        "\n[cosmic-ray.distributor]\n"
        'name = "local"\n'
    )


def main(module: str) -> int:
    if module not in TESTS:
        print(f"MODULE must be one of {sorted(TESTS)}, got {module!r}", file=sys.stderr)
        return 2
    # The mutated file is restored by cosmic-ray; refuse a dirty file so `git diff` can prove it.
    if subprocess.run(["git", "diff", "--quiet", "--", module], cwd=ROOT).returncode:
        print(f"{module} has uncommitted changes; commit them first", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    stem = module.replace("/", "__").removesuffix(".py")
    cfg, session = OUT / f"{stem}.toml", OUT / f"{stem}.sqlite"
    cfg.write_text(config(module))
    bindir = Path(sys.executable).parent
    steps = [
        [str(bindir / "cosmic-ray"), "init", str(cfg), str(session)],
        [str(bindir / "cosmic-ray"), "baseline", str(cfg)],
        [str(bindir / "cosmic-ray"), "exec", str(cfg), str(session)],
    ]
    try:
        for step in steps:
            if subprocess.run(step, cwd=ROOT).returncode:
                print(f"failed: {' '.join(step)}", file=sys.stderr)
                return 1
    finally:
        if subprocess.run(["git", "diff", "--quiet", "--", module], cwd=ROOT).returncode:
            print(f"{module} was left mutated: `git checkout -- {module}`", file=sys.stderr)
    report = subprocess.run([str(bindir / "cr-report"), "--surviving-only", "--show-diff", str(session)],
                            cwd=ROOT, capture_output=True, text=True)
    (OUT / f"{stem}.report.txt").write_text(report.stdout)
    print(report.stdout)
    return report.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "drift/data_drift.py"))
