"""The decision path, fast: bugs the gate's own tests did not catch (issue #37 point 7).

Each test names the hand-written bug it kills (checked by applying it, see tests/MUTATION.md):

* ``promote`` must refuse every run that is not ``passed``, not only ``blocked`` ones;
* change thresholds against a champion judged on the paired deltas (``decide(deltas=...)``):
  breach, pass and inconclusive, absolute and relative, both directions;
* the gate's minimum-count rule counts only the groups a gap takes part in;
* a policy override of a group minimum of 0 is taken, not read as "not given".

Expected verdicts and numbers are worked by hand in the comments, never taken from the gate.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from modelgate.evaluation.gate import decide
from modelgate.evaluation.metrics import MetricDelta, MetricEstimate
from modelgate.evaluation.policy import Policy, load_policy, merge_policies
from modelgate.fairness import fairness_report
from support.model_zoo import build

from modelgate.config import Settings
from modelgate.onnx.artifact import package

# --- promote refuses any run that did not pass ------------------------------------------------
# Kills: ``if run.status != "passed"`` in promote_step.promote mutated to ``run.status == "blocked"``
# (a failed or still running run would go on to promote its version).


@pytest.mark.parametrize("status", ["running", "failed", "abandoned", "blocked"])
def test_promote_refuses_a_run_that_did_not_pass(settings_env: Settings, tmp_path: Path,
                                                 status: str) -> None:
    from modelgate.pipelines.context import Context, register_archive
    from modelgate.pipelines.evaluation import promote_step, run_refs
    from modelgate.store import models, runs
    from modelgate.store.db import transaction

    ctx = Context.open(settings_env)
    archive = package(*build("sklearn-no-zipmap").write(tmp_path / "src"), tmp_path / "out")
    row, _ = register_archive(ctx, archive)
    run_id = runs.start_evaluation_run(ctx.db_url, run_key="k", model_version_id=row.model_version_id,
                                       champion_version_id=None, dataset_uri="d.parquet",
                                       archive_sha256=row.archive_sha256)
    if status != "running":
        with transaction(ctx.db_url) as cur:  # the state a failed, abandoned or blocked run ends in
            cur.execute("UPDATE evaluation_run SET status = %s, failure_reason = %s, "
                        "finished_at = now() WHERE evaluation_run_id = %s",
                        (status, None if status == "blocked" else "it broke", run_id))
    with pytest.raises(run_refs.EvaluationBlocked, match=status):  # names why: the status
        promote_step.promote(ctx, run_refs.RunRef(run_id, "k"))
    assert models.get_by_id(ctx.db_url, row.model_version_id).stage == "candidate"


# --- change thresholds judged on the paired deltas -------------------------------------------
# Kills: deltas ignored (``delta = None``), a relative interval left unscaled (``lo, hi`` instead
# of ``lo / scale, hi / scale``), and a change limit of the wrong sign.

def _est(name: str, value: float, lo: float, hi: float) -> MetricEstimate:
    return MetricEstimate(name, value, lo, hi, 1000)


# (metric, change spec, champion value, delta point, delta interval, verdict, observed, interval)
DELTA_CASES = [
    # auc higher is better, limit >= -0.01 on the change
    ("roc_auc", "absolute: -0.01", 0.80, -0.02, (-0.03, -0.015), "breach", -0.02, (-0.03, -0.015)),
    ("roc_auc", "absolute: -0.01", 0.80, 0.01, (-0.005, 0.02), "pass", 0.01, (-0.005, 0.02)),
    ("roc_auc", "absolute: -0.01", 0.80, -0.005, (-0.02, 0.01), "inconclusive", -0.005, (-0.02, 0.01)),
    # relative: divided by |champion| = 0.80 -> -0.03 [-0.04, -0.025], all below -0.02
    ("roc_auc", "relative: -0.02", 0.80, -0.024, (-0.032, -0.02), "breach", -0.03, (-0.04, -0.025)),
    # relative: -0.008 [-0.024, 0.008] / 0.80 = -0.01 [-0.03, 0.01] straddles -0.02
    ("roc_auc", "relative: -0.02", 0.80, -0.008, (-0.024, 0.008), "inconclusive", -0.01, (-0.03, 0.01)),
    # log loss lower is better, limit <= +0.01: +0.005 [-0.002, +0.008] is all below it
    ("log_loss", "absolute: -0.01", 0.40, 0.005, (-0.002, 0.008), "pass", 0.005, (-0.002, 0.008)),
    # +0.02 [+0.012, +0.03] is all above +0.01
    ("log_loss", "absolute: -0.01", 0.40, 0.02, (0.012, 0.03), "breach", 0.02, (0.012, 0.03)),
    # relative, / 0.40: +0.004 [-0.004, +0.006] -> +0.01 [-0.01, +0.015], within <= +0.02
    ("log_loss", "relative: -0.02", 0.40, 0.004, (-0.004, 0.006), "pass", 0.01, (-0.01, 0.015)),
]


@pytest.mark.parametrize(
    ("metric", "spec", "champ", "d", "interval", "verdict", "observed", "judged"), DELTA_CASES,
    ids=[f"{m}-{s.split(':')[0]}-{v}" for m, s, _, _, _, v, _, _ in DELTA_CASES])
def test_a_change_against_the_champion_is_judged_on_the_paired_delta(
        metric: str, spec: str, champ: float, d: float, interval: tuple[float, float],
        verdict: str, observed: float, judged: tuple[float, float]) -> None:
    policy = load_policy(f"basis: interval\nmetrics: {{{metric}: {{change: {{{spec}}}}}}}")
    cand = {metric: _est(metric, champ + d, champ + d - 0.05, champ + d + 0.05)}
    champion = {metric: _est(metric, champ, champ - 0.05, champ + 0.05)}
    deltas = {metric: MetricDelta(metric, champ + d, champ, d, *interval, 1000)}
    decision = decide(cand, champion, {}, policy, deltas=deltas)
    (check,) = decision.checks
    assert check.verdict == verdict, check.reason
    assert check.observed == pytest.approx(observed)
    assert (check.ci_lower, check.ci_upper) == pytest.approx(judged)
    assert decision.passed is (verdict == "pass")
    assert check.kind == "change" and check.n == 1000


def test_the_point_basis_judges_the_paired_delta_s_point() -> None:
    """On the point basis the delta's point decides: -0.02 breaches >= -0.01 although its
    interval [-0.03, +0.01] straddles the limit."""
    policy = load_policy("metrics: {roc_auc: {change: {absolute: -0.01}}}")
    cand = {"roc_auc": _est("roc_auc", 0.78, 0.75, 0.81)}
    champ = {"roc_auc": _est("roc_auc", 0.80, 0.77, 0.83)}
    deltas = {"roc_auc": MetricDelta("roc_auc", 0.78, 0.80, -0.02, -0.03, 0.01, 1000)}
    (check,) = decide(cand, champ, {}, policy, deltas=deltas).checks
    assert (check.verdict, check.observed) == ("breach", pytest.approx(-0.02))


# --- the minimum-count rule counts only the groups in the gap -------------------------------
# Kills: ``_group_minima`` counting the groups the gap leaves out (``kept = list(table.groups)``).

def test_a_small_group_left_out_of_the_gap_is_not_counted() -> None:
    """Groups a and b: 40 rows each, 20 positives and 20 negatives, predicted perfectly (TPR 1,
    FPR 0 in each, so the equalized-odds gap is 0, its interval [0, 0.174]: 20 of 20 has the
    Wilson lower end 20 / (20 + 2.054^2) = 0.826 at the upper end's one-sided 98 % point);
    group c: 2 rows, 1 positive and 1 negative,
    below ``min_group_size`` 5 and left out of the gaps. With the policy's minimum of 10 per
    group, the gap is judged on a and b's 20 and 20: pass at the limit 0.2."""
    y_ab = np.tile([1, 0], 20)
    y = np.concatenate([y_ab, y_ab, [1, 0]])
    pred = np.concatenate([y_ab, y_ab, [0, 1]])
    groups = np.array(["a"] * 40 + ["b"] * 40 + ["c"] * 2)
    report = fairness_report(y, pred, groups, sensitive_feature="g", min_group_size=5,
                             include_small_groups=False, n_bootstrap=50, seed=1)
    eod = report.by_name()["equalized_odds_difference"]
    assert [g for g, _ in eod.excluded_groups] == ["c"] and eod.value == 0.0
    policy = load_policy("basis: interval\nfairness: {min_positives_per_group: 10, "
                         "min_negatives_per_group: 10, default: {equalized_odds_difference: "
                         "{upper: 0.2}}}")
    (check,) = decide({}, None, {"g": report}, policy).checks
    assert (check.min_group_positives, check.min_group_negatives) == (20, 20)
    assert check.verdict == "pass", check.reason
    assert "too few cases" not in check.reason


# --- a group minimum of 0 in an override is taken -------------------------------------------
# Kills: ``merge_policies`` taking ``override or base`` (0 is falsy, so the base's 10 would stay).

def test_an_override_of_zero_minimums_is_taken() -> None:
    base = load_policy("fairness: {min_positives_per_group: 10, min_negatives_per_group: 7}")
    merged = merge_policies(base, load_policy(
        "fairness: {min_positives_per_group: 0, min_negatives_per_group: 0}"))
    assert (merged.min_positives_per_group, merged.min_negatives_per_group) == (0, 0)
    kept = merge_policies(base, Policy())  # None means "not given": the base's stay
    assert (kept.min_positives_per_group, kept.min_negatives_per_group) == (10, 7)
