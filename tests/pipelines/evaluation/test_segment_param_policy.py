"""The segment columns given as a parameter (``evaluate --segments``, the DAG's ``segments`` and
``segment_pairs``) are part of the attempt's policy identity (issue #43), fast tier: the pipeline's
first step (``prepare``) and the store on PostgreSQL, no scoring.

* Attempts of one run that differ only in those columns have different ``policy_sha256``; the
  expected hashes are computed here from the framing rule (each source: role, length, bytes;
  the parameter's source is JSON written by hand), never by the code under test.
* Fewer columns than the version's previous decided attempt, when that policy blocks on a segment
  threshold, is a looser policy (``policy_looser_than_previous``): with fewer slices the family is
  smaller, so the correction is milder and a slice left out is not judged at all; promotion under
  it needs ``--allow-looser-policy``. More columns is stricter.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from modelgate.evaluation.gate import GateDecision
from modelgate.evaluation.policy import default_policy_path
from support.model_zoo import build
from support.sql_rows import sql_rows

from modelgate.config import Settings
from modelgate.onnx.artifact import package
from modelgate.pipelines.context import Context, register_archive
from modelgate.pipelines.evaluation import attempts, prepare_step, run_refs
from modelgate.pipelines.evaluation.policy_provenance import LooserPolicyRefused
from modelgate.store import runs

OWN = "segments: {columns: [sex], metrics: {accuracy: {margin: 0.05, severity: block}}}\n"


def _sha(*sources: tuple[str, bytes]) -> str:
    """The framing rule: each source as its role, a newline, its length, a newline, its bytes."""
    return hashlib.sha256(b"".join(b"%s\n%d\n%s" % (role.encode(), len(body), body)
                                   for role, body in sources)).hexdigest()


@pytest.fixture()
def tiny(settings_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    zoo = build("sklearn-no-zipmap")
    archive = package(*zoo.write(tmp_path / "src"), tmp_path / "out")
    data = tmp_path / "heldout.parquet"
    # every segment column the tests name (prepare refuses one the data lacks): the policy's sex,
    # the parameters' race (the zoo has group), and a name with a comma in it
    rng = np.random.default_rng(0)
    frame = zoo.frame.assign(**{name: rng.choice(["a", "b"], size=len(zoo.frame))
                                for name in ("sex", "race", "group,race")})
    frame.to_parquet(data)
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / f"{zoo.draft['name']}.yaml").write_text(OWN)
    monkeypatch.setenv("MODELGATE_POLICY_DIR", str(policies))
    ctx = Context.open(settings_env)
    row, _ = register_archive(ctx, archive)
    return {"ctx": ctx, "run": {"model_name": row.model_name, "version": row.version,
                                "dataset_uri": str(data)}}


def _blocked(ctx: Context, ref: run_refs.RunRef) -> None:
    """What the ``store`` step stores for a blocked attempt (no checks needed here)."""
    run = runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)
    decision = GateDecision(False, (), (), (), "BLOCKED")
    rows = runs.EvaluationRows(gate_checks=[], gate={
        **decision.to_record(), "policy_sha256": "p" * 64, "had_champion": False})
    runs.write_evaluation_results(ctx.db_url, ref.evaluation_run_id, rows, status="blocked",
                                  report_key="r", report_uri="s3://b/r")
    row = run_refs.candidate_row(ctx, run)
    attempts.after_decision(ctx, ref.evaluation_run_id, run.attempt, model_name=row.model_name,
                            version=row.version, passed=False, checks_breached=1)


def test_segment_columns_given_as_a_parameter_are_in_the_policy_hash_and_dropping_them_is_looser(
        tiny: dict[str, Any]) -> None:
    ctx, run, url = tiny["ctx"], tiny["run"], tiny["ctx"].db_url
    first = prepare_step.prepare(ctx, run_key="k", segments=("race",), **run)
    _blocked(ctx, first)

    # the same run without the parameter: fewer slices than the blocked attempt judged
    with pytest.raises(LooserPolicyRefused) as caught:
        prepare_step.prepare(ctx, run_key="k", promote=True, **run)
    (check,) = caught.value.checks
    assert check.startswith('policy: segments {"columns": ["sex", "race"]') and "(unordered)" in check
    # more columns (and the pairs) than the blocked attempt: stricter, no flag needed
    prepare_step.prepare(ctx, run_key="k", promote=True, segments=("race", "sex"),
                         segment_pairs=True, **run)

    default = default_policy_path("binary_classification").read_bytes()
    own = [("default", default), ("model_file", OWN.encode())]
    history = sql_rows(url, """SELECT attempt, policy_sha256, policy_looser_than_previous,
                                   previous_attempt, policy_changes, policy_text
                            FROM analytics.evaluation_attempts ORDER BY attempt""")
    assert [h[:4] for h in history] == [
        (1, _sha(*own, ("segments_param", b'{"columns": ["race"], "pairs": false}')), False, None),
        (2, _sha(*own), True, 1),
        (3, _sha(*own, ("segments_param", b'{"columns": ["race", "sex"], "pairs": true}')),
         False, 1)]
    # the difference is recorded: the segments section as it was and as it is
    (dropped,), (added,) = history[1][4], history[2][4]
    assert (dropped["place"], dropped["key"], dropped["effect"], dropped["blocking"]) \
        == ("policy", "segments", "unordered", True)
    assert (json.loads(dropped["reference"])["columns"], json.loads(dropped["effective"])["columns"]) \
        == (["sex", "race"], ["sex"])
    assert (added["effect"], json.loads(added["effective"])["pairs"]) \
        == ("stricter", [["sex", "race"]])
    assert "race" in history[0][5] and "race" not in history[1][5]


def test_the_same_segment_columns_in_another_order_are_the_same_policy_and_run_key(
        tiny: dict[str, Any]) -> None:
    from modelgate.cli.runs import segments_key_part
    from modelgate.pipelines.evaluation.policy_loading import load_checked_policy

    ctx, run, url = tiny["ctx"], tiny["run"], tiny["ctx"].db_url
    for given in (("race", "group"), ("group", "race", "group")):
        ref = prepare_step.prepare(ctx, run_key="k", segments=given, **run)
        # the evaluated columns: the policy's, then the set given, sorted
        section = load_checked_policy(ctx, ref).policy.segments
        assert section is not None and section.columns == ("sex", "group", "race")
    prepare_step.prepare(ctx, run_key="k", segments=("group",), **run)
    prepare_step.prepare(ctx, run_key="k", segments=("group,race",), **run)
    default = default_policy_path("binary_classification").read_bytes()
    own = [("default", default), ("model_file", OWN.encode())]
    both = _sha(*own, ("segments_param", b'{"columns": ["group", "race"], "pairs": false}'))
    hashes = [h for (h,) in sql_rows(url, "SELECT policy_sha256 FROM analytics.evaluation_attempts "
                                       "ORDER BY attempt")]
    assert hashes[:2] == [both, both]
    # another set is another identity, and a comma inside a name is not a separator
    assert len(set(hashes)) == 3
    assert hashes[3] == _sha(*own, ("segments_param", b'{"columns": ["group,race"], "pairs": false}'))
    keys = {segments_key_part(c, p) for c, p in [(["a", "b"], False), (["b", "a", "b"], False)]}
    assert len(keys) == 1
    others = [segments_key_part(["a"], False), segments_key_part(["a", "b"], True),
              segments_key_part(["a,b"], False), segments_key_part([], False)]
    assert len({*keys, *others}) == 5 and others[-1] == ""
