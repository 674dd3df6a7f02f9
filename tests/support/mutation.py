"""Mutation testing of one numeric core: ``python tests/support/mutation.py drift/data_drift.py``.

cosmic-ray, not mutmut 3: mutmut 3 runs the tests against a copy of the sources under
``mutants/`` found through ``sys.path``, which the editable install's package-dir mapping
(``modelgate.drift`` -> ``drift/``) bypasses, so the tests would import the unmutated file.
cosmic-ray mutates a file in place and restores it after each mutant. It works here on a
copy of the checkout laid out like the installed wheel (``site/modelgate/drift/...``, first on
``PYTHONPATH``, which the editable finder comes after), so the checkout is never left mutated
and other tests may run in it meanwhile. Each mutant runs only its module's own tests
(``TESTS``) and its doctests, with ``-x``. Session, configuration and report go to
``.modelgate/mutation/``; figures are in tests/MUTATION.md.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / ".modelgate" / "mutation"

# The unit tests that exercise each core module (its doctests are added); a mutant survives
# unless one of them fails. Only these folders: a pipeline test would start a database per run.
TESTS: dict[str, tuple[str, ...]] = {
    "drift/additive_splines.py": (
        "tests/drift/test_additive_splines_survivors.py",  # first: its small cases kill soonest
        "tests/drift/test_additive_splines.py",
        "tests/drift/test_nanny_estimation.py",  # the nanny error model fits and predicts with it
    ),
    "drift/adwin.py": ("tests/drift/test_drift_adwin.py",),
    "drift/attribution.py": ("tests/drift/test_drift_attribution.py", "tests/drift/test_attribution_null.py"),
    "drift/data_drift.py": (
        "tests/drift/test_drift_data_drift.py",
        "tests/drift/test_drift_threshold_rule.py",
        "tests/drift/test_drift_columns.py",
        "tests/drift/test_drift_multivariate.py",
    ),
    "drift/distances.py": ("tests/drift/test_drift_distances.py",),
    "drift/error_stream.py": ("tests/drift/test_error_stream.py",),
    "drift/multivariate.py": (
        "tests/drift/test_drift_multivariate_cases.py",  # first: its small cases kill soonest
        "tests/drift/test_drift_multivariate.py",
    ),
    "drift/performance_estimation.py": (
        "tests/drift/test_performance_estimation_survivors.py",  # first: its small cases kill soonest
        "tests/drift/test_performance_estimation.py",
        "tests/drift/test_performance_estimation_sim.py",
    ),
    "drift/payloads.py": (
        "tests/drift/test_drift_payloads.py",  # first: its small cases kill soonest
        "tests/drift/test_drift_reference.py",
        "tests/drift/test_drift_multivariate_cases.py",
    ),
    "drift/quality.py": ("tests/drift/test_quality.py",),
    "drift/reference.py": (
        "tests/drift/test_reference_survivors.py",
        "tests/drift/test_drift_reference.py",
        "tests/drift/test_drift_columns.py",
        "tests/drift/test_drift_data_drift.py",
        "tests/drift/test_drift_threshold_rule.py",
        "tests/drift/test_drift_multivariate.py",
    ),
    "drift/regression_estimation.py": (
        "tests/drift/test_regression_estimation_survivors.py",  # first: its small cases kill soonest
        "tests/drift/test_regression_estimation_nanny.py",
        "tests/drift/test_regression_estimation.py",
        "tests/drift/test_nanny_estimation.py",
        "tests/drift/test_performance_estimation_sim.py",
    ),
    "fairness/disaggregate.py": (
        "tests/fairness/test_fairness_disaggregate.py",
        "tests/fairness/test_fairness_gap_intervals.py",
        "tests/fairness/test_fairness_counts.py",
        "tests/evaluation/test_eval_gate.py",
        "tests/evaluation/test_eval_gate_inconclusive.py",
        "tests/evaluation/test_eval_gate_survivors.py",
        "tests/evaluation/test_eval_sufficient.py",
    ),
    "fairness/group_scores.py": (
        "tests/fairness/test_group_scores.py",  # first: its small cases kill soonest
        "tests/fairness/test_fairness_counts.py",
    ),
    "fairness/gap_intervals.py": (
        "tests/fairness/test_fairness_gap_intervals.py",  # first: textbook formulas, small cases
        "tests/fairness/test_fairness_metrics.py",
        "tests/intervals/test_interval_coverage.py",
    ),
    "fairness/gap_lower_end.py": (
        "tests/fairness/test_fairness_gap_intervals.py",  # first: exact laws, small cases
        "tests/fairness/test_fairness_metrics.py",
        "tests/intervals/test_interval_coverage.py",
    ),
    "fairness/score_intervals.py": (
        "tests/fairness/test_fairness_gap_intervals.py",  # first: textbook formulas
        "tests/fairness/test_fairness_disaggregate.py",
        "tests/evaluation/test_eval_multiclass.py",
    ),
    "fairness/metrics.py": (
        "tests/fairness/test_fairness_gaps_by_hand.py",  # first: its small cases kill soonest
        "tests/fairness/test_fairness_gap_intervals.py",
        "tests/fairness/test_fairness_metrics.py",
        "tests/fairness/test_fairness_counts.py",
        "tests/evaluation/test_eval_sufficient.py",
        "tests/intervals/test_interval_coverage.py",
    ),
    "fairness/multiclass.py": (
        "tests/fairness/test_fairness_tasks.py",
        "tests/evaluation/test_eval_policy_tasks.py",
    ),
    "fairness/regression.py": (
        "tests/fairness/test_fairness_regression.py",  # first: its small cases kill soonest
        "tests/fairness/test_fairness_tasks.py",
        "tests/evaluation/test_eval_policy_tasks.py",
        "tests/intervals/test_interval_coverage.py",
    ),
    "evaluation/bootstrap_cells.py": (
        "tests/evaluation/test_bootstrap_cells_survivors.py",  # first: its small cases kill soonest
        "tests/evaluation/test_bootstrap_cells.py",
        "tests/evaluation/test_bca_cells.py",
        "tests/evaluation/test_eval_sufficient.py",
        "tests/evaluation/test_per_metric_intervals.py",
        "tests/evaluation/test_eval_binary_intervals.py",
    ),
    "evaluation/gate.py": (
        "tests/evaluation/test_eval_gate.py",
        "tests/evaluation/test_eval_gate_inconclusive.py",
        "tests/evaluation/test_eval_gate_survivors.py",
        "tests/evaluation/test_eval_policy_tasks.py",
        "tests/evaluation/test_sample_size.py",  # the gate's projection of inconclusive checks
    ),
    "evaluation/labels.py": ("tests/evaluation/test_labels.py",),
    "evaluation/metric_results.py": (
        "tests/evaluation/test_metric_results.py",  # first: its small cases kill soonest
        "tests/cli/test_result_records.py",
        "tests/evaluation/test_eval_metrics.py",
    ),
    "evaluation/metric_intervals.py": (
        "tests/evaluation/test_metric_intervals_by_hand.py",  # first: its small cases kill soonest
        "tests/evaluation/test_per_metric_intervals.py",
        "tests/evaluation/test_paired_delta_intervals.py",  # the paired-delta functions
        "tests/evaluation/test_eval_sufficient.py",
        "tests/evaluation/test_eval_binary_intervals.py",
    ),
    "evaluation/metrics.py": (
        "tests/evaluation/test_binary_metrics_by_hand.py",  # first: its small cases kill soonest
        "tests/evaluation/test_metrics_survivors.py",
        "tests/evaluation/test_eval_metrics.py",
        "tests/evaluation/test_eval_binary_intervals.py",
        "tests/evaluation/test_eval_sufficient.py",
        "tests/evaluation/test_eval_gate.py",
        "tests/evaluation/test_eval_gate_inconclusive.py",
        "tests/evaluation/test_eval_gate_survivors.py",
    ),
    "evaluation/binary_inputs.py": (  # split out of metrics.py: the same tests
        "tests/evaluation/test_binary_metrics_by_hand.py",
        "tests/evaluation/test_metrics_survivors.py",
        "tests/evaluation/test_eval_metrics.py",
        "tests/evaluation/test_eval_sufficient.py",
    ),
    "evaluation/calibration.py": (
        "tests/evaluation/test_binary_metrics_by_hand.py",
        "tests/evaluation/test_metrics_survivors.py",
        "tests/evaluation/test_eval_metrics.py",
        "tests/evaluation/test_eval_sufficient.py",
    ),
    "evaluation/multiclass.py": (
        "tests/evaluation/test_multiclass_survivors.py",  # first: its small cases kill soonest
        "tests/evaluation/test_eval_multiclass.py",
        "tests/evaluation/test_multiclass_delta_intervals.py",
        "tests/evaluation/test_multiclass_many_classes.py",
        "tests/evaluation/test_eval_compare_tasks.py",
        "tests/evaluation/test_eval_policy_tasks.py",
        "tests/intervals/test_interval_coverage.py",
    ),
    "evaluation/ovr_auc.py": (
        "tests/evaluation/test_ovr_auc_interval.py",
        "tests/evaluation/test_eval_multiclass.py",
        "tests/intervals/test_interval_coverage.py",
    ),
    "evaluation/policy.py": (
        "tests/evaluation/test_eval_policy.py",
        "tests/evaluation/test_eval_policy_diff.py",
        "tests/evaluation/test_eval_gate.py",
        "tests/evaluation/test_eval_gate_inconclusive.py",
        "tests/evaluation/test_eval_gate_survivors.py",
        "tests/evaluation/test_eval_policy_tasks.py",
    ),
    "evaluation/policy_fields.py": (  # split out of policy.py: the same tests
        "tests/evaluation/test_eval_policy.py",
        "tests/evaluation/test_eval_policy_diff.py",
        "tests/evaluation/test_eval_policy_tasks.py",
    ),
    "evaluation/policy_diff.py": ("tests/evaluation/test_eval_policy_diff.py",),
    "evaluation/policy_text.py": ("tests/evaluation/test_eval_policy_diff.py",),
    "evaluation/regression.py": (
        "tests/evaluation/test_eval_regression.py",
        "tests/evaluation/test_regression_delta_intervals.py",
        "tests/evaluation/test_eval_compare_tasks.py",
        "tests/evaluation/test_eval_policy_tasks.py",
        "tests/intervals/test_interval_coverage.py",
    ),
    "evaluation/sample_size.py": (
        "tests/evaluation/test_sample_size.py",
        "tests/evaluation/test_eval_gate.py",
        "tests/evaluation/test_eval_gate_inconclusive.py",
        "tests/evaluation/test_eval_gate_survivors.py",
    ),
    "evaluation/sufficient.py": (
        "tests/evaluation/test_sufficient_statistics.py",  # first: its small cases kill soonest
        "tests/evaluation/test_eval_sufficient.py",
        "tests/evaluation/test_bca_cells.py",
        "tests/evaluation/test_eval_binary_intervals.py",
        "tests/evaluation/test_per_metric_intervals.py",
    ),
    "evaluation/performance.py": (
        "tests/evaluation/test_performance_summary.py",  # first: its small cases kill soonest
        "tests/evaluation/test_performance_oracles.py",
        "tests/evaluation/test_performance_survivors.py",
        "tests/evaluation/test_eval_sufficient.py",
        "tests/evaluation/test_bca_cells.py",
        "tests/evaluation/test_eval_binary_intervals.py",
        "tests/evaluation/test_per_metric_intervals.py",
        "tests/evaluation/test_paired_delta_intervals.py",
    ),
    "modelgate/intervals.py": (
        "tests/intervals/test_intervals.py",
        "tests/intervals/test_interval_methods.py",
        "tests/evaluation/test_bca_cells.py",
        "tests/evaluation/test_per_metric_intervals.py",
        "tests/evaluation/test_paired_delta_intervals.py",
        "tests/evaluation/test_ovr_auc_interval.py",
    ),
    "reports/explanation.py": (
        "tests/reports/test_explain_options.py",  # first: its small cases kill soonest
        "tests/reports/test_explain_survivors.py",
        "tests/reports/test_explain.py",
        "tests/reports/test_explain_properties_and_checks.py",
        "tests/reports/test_explain_deduplication.py",
        "tests/reports/test_explain_exact_and_errors.py",
        "tests/reports/test_explain_tasks.py",
    ),
    "reports/explain_errors.py": (
        "tests/reports/test_explain_errors.py",
        "tests/reports/test_explain_estimators_survivors.py",
        "tests/reports/test_explain_exact_and_errors.py",
    ),
    "reports/explain_estimators.py": (
        "tests/reports/test_explain_estimators_survivors.py",  # first: its small cases kill soonest
        "tests/reports/test_explain.py",
        "tests/reports/test_explain_properties_and_checks.py",
        "tests/reports/test_explain_deduplication.py",
        "tests/reports/test_explain_exact_and_errors.py",
    ),
    "reports/explain_masking.py": (
        "tests/reports/test_explain_masking_survivors.py",  # first: its small cases kill soonest
        "tests/reports/test_explain.py",
        "tests/reports/test_explain_properties_and_checks.py",
        "tests/reports/test_explain_deduplication.py",
        "tests/reports/test_explain_exact_and_errors.py",
        "tests/reports/test_explain_options.py",  # a feature of tuples
    ),
    "reports/explain_rows.py": (
        "tests/reports/test_explain_rows.py",  # first: its small cases kill soonest
        "tests/reports/test_explain.py",
        "tests/reports/test_explain_exact_and_errors.py",
        "tests/reports/test_explain_tasks.py",
    ),
    "reports/tree_shap.py": ("tests/reports/test_tree_shap.py",),
    "reports/onnx_trees.py": ("tests/reports/test_tree_shap.py", "tests/reports/test_linear_shap.py"),
    "reports/onnx_linear.py": ("tests/reports/test_linear_shap.py",),
    "reports/exact_explanation.py": ("tests/reports/test_tree_shap.py", "tests/reports/test_linear_shap.py"),
}
# A mutant that makes the tests loop is killed after this many seconds.
TIMEOUT_S = 120
# Operators left out, each for a stated reason (tests/MUTATION.md):
# - ``|`` in these modules is only in annotations, which ``from __future__ import annotations``
#   keeps as strings (every mutant equivalent), and in ``isinstance(x, int | float)``;
# - an arithmetic operator turned into a bitwise or shift one: on floats (most operands here) it
#   raises TypeError on the first call; on the few integer sizes it is left out for time.
EXCLUDED_OPERATORS = (
    "core/ReplaceBinaryOperator_BitOr_.*",
    "core/ReplaceBinaryOperator_.*_(BitOr|BitAnd|BitXor|LShift|RShift)$",
)


def package_dirs() -> dict[str, str]:
    """The setuptools package-dir mapping: package -> folder of the checkout."""
    import tomllib

    with open(ROOT / "pyproject.toml", "rb") as f:
        mapping: dict[str, str] = tomllib.load(f)["tool"]["setuptools"]["package-dir"]
    return mapping


def staged_path(module: str) -> str:
    """Where ``module`` (a checkout path) lies in the wheel-like copy.

    Examples
    --------
    >>> staged_path("drift/data_drift.py"), staged_path("modelgate/intervals.py")
    ('site/modelgate/drift/data_drift.py', 'site/modelgate/intervals.py')
    """
    folder, name = module.rsplit("/", 1)
    package = next(p for p, d in package_dirs().items() if d == folder)
    return "/".join(["site", *package.split("."), name])


def stage(tree: Path) -> None:
    """Copy the checkout's packages (wheel layout), tests and pyproject.toml under ``tree``."""
    import shutil

    shutil.rmtree(tree, ignore_errors=True)
    skip = shutil.ignore_patterns("__pycache__", "out")
    # modelgate first: the sub-packages are copied into it
    for package, folder in sorted(package_dirs().items(), key=lambda kv: kv[0].count(".")):
        shutil.copytree(ROOT / folder, tree / "site" / package.replace(".", "/"), ignore=skip,
                        dirs_exist_ok=True)
    shutil.copytree(ROOT / "tests", tree / "tests", ignore=skip)
    shutil.copy2(ROOT / "pyproject.toml", tree / "pyproject.toml")
    if (ROOT / ".venv-moto").exists():  # the S3 server of the tests that run a pipeline
        (tree / ".venv-moto").symlink_to(ROOT / ".venv-moto")


def staged_env(tree: Path) -> dict[str, str]:
    """The environment of a test run in the staged copy ``tree``."""
    # the staged packages come before the editable install's finder; no bytecode, so a
    # mutant of the same size written in the same second is never read from a stale .pyc
    return {**os.environ, "PYTHONPATH": str(tree / "site"), "PYTHONDONTWRITEBYTECODE": "1",
            "MODELGATE_TEST_NO_BYTECODE": "1",  # tests/conftest.py would turn bytecode on
            "MODELGATE_TEST_MUTATION": "1"}  # conftest defines cosmic-ray's exception name


def pytest_args(module: str) -> list[str]:
    """The pytest arguments of ``module``'s whole test set: its tests and its doctests."""
    # e2e-marked tests (large coverage simulations) are left out: the fast tier decides
    return ["-p", "no:xdist", "-x", "-q", "-m", "not e2e", *TESTS[module], staged_path(module)]


def config(module: str, test_command: str | None = None) -> str:
    """The cosmic-ray session configuration (TOML) for ``module``, run from the staged copy.

    ``test_command`` defaults to the whole test set in a fresh pytest.

    Examples
    --------
    >>> print(config("drift/distances.py").splitlines()[1])
    module-path = "site/modelgate/drift/distances.py"
    """
    target = staged_path(module)
    if test_command is None:
        test_command = shlex.join([sys.executable, "-m", "pytest", *pytest_args(module)])
    excluded = ", ".join(f'"{op}"' for op in EXCLUDED_OPERATORS)
    return (
        "[cosmic-ray]\n"
        f'module-path = "{target}"\n'
        f"timeout = {TIMEOUT_S}\n"
        "excluded-modules = []\n"
        f'test-command = "{test_command}"\n'
        "\n[cosmic-ray.distributor]\n"
        'name = "local"\n'
        "\n[cosmic-ray.filters.operators-filter]\n"
        f"exclude-operators = [{excluded}]\n"
    )


def fast_spec(module: str, tree: Path, stem: str) -> dict[str, object]:
    """Write what ``mutation_fast.py --mutant`` needs (paths, the whole set's arguments)."""
    import json
    import shutil

    target = tree / staged_path(module)
    original = OUT / f"{stem}.original.py"
    shutil.copy2(target, original)
    spec = {"target": str(target), "original": str(original),
            "lines": str(OUT / f"{stem}.lines.json"),
            "durations": str(OUT / f"{stem}.durations.json"),  # the record step writes it
            # a short path: AF_UNIX socket paths are limited to about 100 bytes
            "socket": f"/tmp/modelgate-mutation-{os.getuid()}-{stem}.sock",
            "args": pytest_args(module)}
    (OUT / f"{stem}.spec.json").write_text(json.dumps(spec))
    return spec


def main(module: str, resume: bool = False) -> int:
    """Run a session of ``module``; with ``resume``, only the mutants its session left pending
    (an interrupted run), staged anew against the current tests."""
    if module not in TESTS:
        print(f"MODULE must be one of {sorted(TESTS)}, got {module!r}", file=sys.stderr)
        return 2
    stem = module.replace("/", "__").removesuffix(".py")
    tree = OUT / f"{stem}.tree"
    stage(tree)
    cfg, session = OUT / f"{stem}.toml", OUT / f"{stem}.sqlite"
    if not (resume and session.exists()):
        resume = False
        session.unlink(missing_ok=True)
    env = staged_env(tree)
    spec = fast_spec(module, tree, stem)
    fast = Path(__file__).with_name("mutation_fast.py")
    print(f"recording which tests execute each line of {module}", flush=True)
    with open(OUT / f"{stem}.record.log", "w") as log:
        if subprocess.run([sys.executable, str(fast), "--record", spec["target"], spec["lines"],
                           *spec["args"]], cwd=tree, env=env, stdout=log, stderr=log).returncode:
            print(f"the tests fail on the unmutated module: see {log.name}", file=sys.stderr)
            return 1
    cfg.write_text(config(module, f"{sys.executable} {fast} --mutant {OUT / f'{stem}.spec.json'}"))
    # the server may write bytecode (it deletes the mutated module's own before each run)
    server_env = {k: v for k, v in env.items()
                  if k not in ("PYTHONDONTWRITEBYTECODE", "MODELGATE_TEST_NO_BYTECODE")}
    module_name = staged_path(module).removeprefix("site/").removesuffix(".py").replace("/", ".")
    server = subprocess.Popen([sys.executable, str(fast), "--serve", spec["socket"],
                               str(OUT / f"{stem}.last-run.log"), spec["target"], module_name],
                              cwd=tree, env=server_env, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        bindir = Path(sys.executable).parent
        steps = [["cosmic-ray", "init", cfg, session], ["cr-filter-operators", session, cfg],
                 ["cosmic-ray", "baseline", cfg], ["cosmic-ray", "exec", cfg, session]]
        for step in steps[3:] if resume else steps:
            if subprocess.run([str(bindir / str(step[0])), *map(str, step[1:])], cwd=tree,
                              env=env).returncode:
                print(f"failed: {' '.join(map(str, step))}", file=sys.stderr)
                return 1
    finally:
        server.kill()
        server.wait()
    report = subprocess.run(
        [str(bindir / "cr-report"), "--surviving-only", "--show-diff", str(session)],
        capture_output=True, text=True, check=True)
    (OUT / f"{stem}.report.txt").write_text(report.stdout)
    print(report.stdout)
    n = counts(session)
    run = n["killed"] + n["survived"]
    print(f"{module}: {run} mutants run, {n['killed']} killed ({n['killed'] / max(run, 1):.1%}), "
          f"{n['survived']} survived; {n['skipped']} left out by operator; {n['incompetent']} "
          f"incompetent; {n['pending']} pending")
    return 0


def counts(session: Path) -> dict[str, int]:
    """Mutants of a session by outcome: killed, survived, skipped (filtered out), pending and
    incompetent (the mutant could not run, e.g. it does not compile)."""
    import json

    bindir = Path(sys.executable).parent
    dump = subprocess.run([str(bindir / "cosmic-ray"), "dump", str(session)],
                          capture_output=True, text=True, check=True).stdout
    out = dict.fromkeys(("killed", "survived", "skipped", "pending", "incompetent"), 0)
    for _, result in map(json.loads, dump.splitlines()):
        if result is None:
            out["pending"] += 1
        elif result.get("worker_outcome") == "skipped":
            out["skipped"] += 1
        elif result.get("test_outcome") in out:
            out[result["test_outcome"]] += 1
        else:
            out["incompetent"] += 1
    return out


def retest(module: str) -> int:
    """Run each survivor of ``module``'s last session again against the current tests.

    A whole session takes long on a busy machine; after tests are added for its survivors,
    this re-applies only those mutants (``cosmic-ray mutate-and-test``) in a fresh copy.
    Prints one line per survivor (killed or survived, operator, line, source line) and
    writes them to ``.modelgate/mutation/<module>.retest.txt``; returns 1 if any survives.
    """
    import json

    stem = module.replace("/", "__").removesuffix(".py")
    # its own copy: a session of the same module may still be running in <module>.tree
    session, tree = OUT / f"{stem}.sqlite", OUT / f"{stem}.retest-tree"
    bindir = Path(sys.executable).parent
    dump = subprocess.run([str(bindir / "cosmic-ray"), "dump", str(session)],
                          capture_output=True, text=True, check=True).stdout
    survivors = [item["mutations"][0] for item, result in map(json.loads, dump.splitlines())
                 if result and result.get("test_outcome") == "survived"]
    stage(tree)
    env = {**os.environ, "PYTHONPATH": str(tree / "site"), "MODELGATE_TEST_MUTATION": "1"}
    command = config(module).split('test-command = "', 1)[1].split('"', 1)[0]
    source = (tree / staged_path(module)).read_text().splitlines()
    lines, left = [], 0
    for m in survivors:
        done = subprocess.run(
            [str(bindir / "cosmic-ray"), "mutate-and-test", m["module_path"], m["operator_name"],
             str(m["occurrence"]), command], cwd=tree, env=env, capture_output=True, text=True)
        outcome = json.loads(done.stdout)["test_outcome"] if done.returncode == 0 else "error"
        left += outcome != "killed"
        row = m["start_pos"][0]
        lines.append(f"{outcome:9} {m['operator_name']:45} line {row:4}: {source[row - 1].strip()}")
        print(lines[-1], flush=True)
    (OUT / f"{stem}.retest.txt").write_text("\n".join(lines) + "\n")
    print(f"{len(survivors)} survivors re-run: {len(survivors) - left} killed, {left} not")
    return 1 if left else 0


def by_hand(module: str, line: int, old: str, new: str, tests: list[str]) -> int:
    """Apply one mutant by hand (``old`` -> ``new`` on ``line`` of ``module``) and run tests.

    For checking that a new test kills a survivor, or that a hand-made mutant of a line
    written after its session would be killed. The mutant goes into a fresh wheel-like copy
    (``.modelgate/mutation/<module>.hand-<pid>``, removed after), never into the checkout. ``tests`` are
    pytest arguments as in the checkout (``tests/...``; the module's own path for its
    doctests); none means the module's whole test set. Prints and returns 0 if a test
    fails (killed), 1 if they pass (survived), 2 if ``old`` is not on that line once, 3 if
    pytest could not run them (a usage error, no tests collected).
    """
    import shutil

    stem = module.replace("/", "__").removesuffix(".py")
    tree = OUT / f"{stem}.hand-{os.getpid()}"  # one per process: checks may run side by side
    try:
        return _by_hand_in(tree, module, line, old, new, tests)
    finally:
        shutil.rmtree(tree, ignore_errors=True)


def _by_hand_in(tree: Path, module: str, line: int, old: str, new: str, tests: list[str]) -> int:
    stage(tree)
    target = tree / staged_path(module)
    source = target.read_text().splitlines(keepends=True)
    if not 1 <= line <= len(source) or source[line - 1].count(old) != 1:
        print(f"{module}:{line} does not hold {old!r} exactly once", file=sys.stderr)
        return 2
    source[line - 1] = source[line - 1].replace(old, new)
    target.write_text("".join(source))
    args = (["-p", "no:xdist", "-x", "-q", *(staged_path(module) if a == module else a for a in tests)]
            if tests else pytest_args(module))
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=tree,
                          env=staged_env(tree), capture_output=True, text=True)
    # pytest: 0 all passed, 1 some failed; 2-5 interrupted, internal or usage error, no tests
    verdict = {0: "survived", 1: "killed"}.get(done.returncode, "error")
    tail = (done.stdout + done.stderr).strip().splitlines()[-1:]
    print(f"{verdict}: {module}:{line} {old!r} -> {new!r} ({' '.join(tail)})")
    return {"killed": 0, "survived": 1}.get(verdict, 3)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--by-hand"]:  # --by-hand MODULE LINE OLD NEW [PYTEST ARGS...]
        sys.exit(by_hand(args[1], int(args[2]), args[3], args[4], args[5:]))
    if args[:1] == ["--retest"]:
        sys.exit(retest(args[1] if len(args) > 1 else "drift/data_drift.py"))
    if args[:1] == ["--resume"]:
        sys.exit(main(args[1], resume=True))
    sys.exit(main(args[0] if args else "drift/data_drift.py"))
