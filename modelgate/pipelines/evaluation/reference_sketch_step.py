"""The evaluation's ``reference_sketch`` step: before a passed candidate of a monitored model
is promoted, its drift reference sketch is made sure of (built from the monitoring config's
reference data when the version has none).

The sketch comes first so that a version that cannot be monitored is not promoted; the
sketch itself is the drift pipeline's (:func:`modelgate.pipelines.drift.monitor.reference_on_promotion`).
This module is the evaluation pipeline's one way into the drift pipeline: a step of the
declared graph (:mod:`modelgate.pipelines.evaluation.runner`), which the runner and the DAG
wire before ``promote``; ``tests/layers/test_import_layers.py`` checks that no other evaluation module
reaches the drift pipeline.
"""

from __future__ import annotations

from modelgate.pipelines.context import Context
from modelgate.pipelines.drift.monitor import reference_on_promotion
from modelgate.pipelines.evaluation.promote_step import promotion_candidate
from modelgate.pipelines.evaluation.run_refs import RunRef


def reference_sketch(ctx: Context, ref: RunRef) -> str | None:
    """The object key of the candidate's drift reference sketch, built if it has none; None
    when the model is not monitored or the candidate is in production already (nothing to
    promote). Refused as ``promote`` would refuse the run (:func:`.promotion_candidate`)."""
    row = promotion_candidate(ctx, ref)
    return None if row is None else reference_on_promotion(ctx, row)
