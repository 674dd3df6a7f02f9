"""Multivariate and attribution drift: their references (once per model version) and their
results per drift run, in the results store (migration 0008)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from modelgate.store.db import transaction


@dataclass(frozen=True, slots=True)
class MultivariateReferenceRow:
    object_key: str
    features: tuple[str, ...]


def get_multivariate_reference(url: str, model_version_id: int) -> MultivariateReferenceRow | None:
    with transaction(url) as cur:
        cur.execute("SELECT object_key, features FROM multivariate_reference WHERE model_version_id = %s",
                    (model_version_id,))
        record = cur.fetchone()
    return None if record is None else MultivariateReferenceRow(str(record[0]), tuple(record[1]))


def put_multivariate_reference(url: str, *, model_version_id: int, object_key: str, object_uri: str,
                               features: Sequence[str], n_rows: int, n_projections: int,
                               baseline: float) -> None:
    """Record the reference once; a second writer of the same version keeps the first row."""
    with transaction(url) as cur:
        cur.execute(
            """INSERT INTO multivariate_reference (model_version_id, object_key, object_uri, features,
                                                   n_rows, n_projections, baseline)
               VALUES (%s, %s, %s, %s, %s, %s, %s)
               ON CONFLICT ON CONSTRAINT multivariate_reference_pkey DO NOTHING""",
            (model_version_id, object_key, object_uri, list(features), n_rows, n_projections, baseline),
        )


@dataclass(frozen=True, slots=True)
class AttributionReferenceRow:
    features: tuple[str, ...]
    shares: tuple[float, ...]
    mean_abs_shap: tuple[float, ...]
    n_rows: int
    baseline: float
    half_sizes: tuple[int, int]
    background_key: str
    # how the reference's SHAP values were computed: live values must be computed the same way
    algorithm: str = ""
    # the split null (migration 0037); empty on references stored before it
    null_sizes: tuple[int, ...] = ()
    null_quantiles: tuple[float, ...] = ()
    null_level: float = 0.99


def get_attribution_reference(url: str, model_version_id: int) -> AttributionReferenceRow | None:
    with transaction(url) as cur:
        cur.execute("""SELECT n_rows, baseline, half_size_1, half_size_2, background_key, algorithm,
                              null_sizes, null_quantiles, null_level
                       FROM attribution_reference WHERE model_version_id = %s""", (model_version_id,))
        head = cur.fetchone()
        cur.execute("""SELECT feature, share, mean_abs_shap FROM attribution_reference_share
                       WHERE model_version_id = %s ORDER BY feature""", (model_version_id,))
        shares = cur.fetchall()
    if head is None:
        return None
    return AttributionReferenceRow(tuple(r[0] for r in shares), tuple(r[1] for r in shares),
                                   tuple(r[2] for r in shares), int(head[0]), float(head[1]),
                                   (int(head[2]), int(head[3])), str(head[4]), str(head[5]),
                                   tuple(int(k) for k in head[6] or ()),
                                   tuple(float(q) for q in head[7] or ()),
                                   0.99 if head[8] is None else float(head[8]))


def put_attribution_reference(url: str, *, model_version_id: int, reference: Any, algorithm: str,
                              evaluations_per_row: int, background_rows: int, background_key: str,
                              background_uri: str) -> None:
    """Record the profile (an ``AttributionReference``) once, with its shares, in one transaction."""
    with transaction(url) as cur:
        cur.execute(
            """INSERT INTO attribution_reference (model_version_id, n_rows, baseline, half_size_1,
                   half_size_2, algorithm, evaluations_per_row, background_rows, background_key,
                   background_uri, null_sizes, null_quantiles, null_level)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
               ON CONFLICT ON CONSTRAINT attribution_reference_pkey DO NOTHING RETURNING 1""",
            (model_version_id, reference.n, reference.baseline, *reference.half_sizes, algorithm,
             evaluations_per_row, background_rows, background_key, background_uri,
             [int(k) for k in reference.null_sizes] or None,
             [float(q) for q in reference.null_quantiles] or None,
             float(reference.null_level) if reference.null_sizes else None),
        )
        if cur.fetchone() is None:
            return  # another run stored it first; the profile of a version never changes
        cur.executemany(
            """INSERT INTO attribution_reference_share (model_version_id, feature, share, mean_abs_shap)
               VALUES (%s, %s, %s, %s)""",
            [(model_version_id, f, float(s), float(m)) for f, s, m in
             zip(reference.features, reference.shares, reference.mean_abs_shap, strict=True)],
        )


def clear_run(cur: Any, run_id: int) -> None:
    """Delete a run's multivariate and attribution rows (re-run, failure), inside ``cur``'s transaction."""
    cur.execute("DELETE FROM multivariate_drift WHERE drift_run_id = %s", (run_id,))
    cur.execute("DELETE FROM attribution_drift WHERE drift_run_id = %s", (run_id,))


def write_run(cur: Any, run_id: int, multivariate: Any | None, attribution: Any | None) -> None:
    """Write a run's ``MultivariateDrift`` and ``AttributionDrift`` inside ``cur``'s transaction."""
    clear_run(cur, run_id)
    if multivariate is not None:
        cur.execute(
            """INSERT INTO multivariate_drift (drift_run_id, statistic_name, statistic_value, baseline,
                   threshold, verdict, n_features, n_projections, n_reference, n_current, n_compared,
                   n_incomplete_current)
               VALUES (%(drift_run_id)s, %(statistic_name)s, %(statistic_value)s, %(baseline)s,
                   %(threshold)s, %(verdict)s, %(n_features)s, %(n_projections)s, %(n_reference)s,
                   %(n_current)s, %(n_compared)s, %(n_incomplete_current)s)""",
            {"drift_run_id": run_id, **multivariate.to_record()},
        )
    if attribution is not None:
        r = attribution.to_record()
        cur.execute(
            """INSERT INTO attribution_drift (drift_run_id, statistic_name, statistic_value, baseline,
                   threshold, verdict, n_reference, n_current)
               VALUES (%(drift_run_id)s, %(statistic_name)s, %(statistic_value)s, %(baseline)s,
                   %(threshold)s, %(verdict)s, %(n_reference)s, %(n_current)s)""",
            {"drift_run_id": run_id, **r},
        )
        current = r["current_shares"]
        if current:
            cur.executemany(
                """INSERT INTO attribution_drift_share (drift_run_id, feature, reference_share,
                       current_share)
                   VALUES (%(drift_run_id)s, %(feature)s, %(reference_share)s, %(current_share)s)""",
                [{"drift_run_id": run_id, "feature": f, "reference_share": s, "current_share": current[f]}
                 for f, s in r["reference_shares"].items()],
            )
