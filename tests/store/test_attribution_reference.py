"""The attribution reference keeps how its SHAP values were computed, and gives it back, so
every live interval computes its values the same way (issue #40: exact tree values)."""

from __future__ import annotations

import numpy as np
from modelgate.drift.attribution import build_attribution_reference
from support.tiny_graphs import manifest_of

from modelgate.store import drift_joint, models


def test_the_reference_algorithm_is_read_back(clean_db: str) -> None:
    row, _ = models.register(clean_db, model_name="attr-ref", version="1", sha256="5" * 64,
                             archive_sha256="6" * 64, archive_key="k", archive_uri="s3://b/k",
                             manifest=manifest_of())
    values = np.random.default_rng(0).normal(size=(20, 3))
    reference = build_attribution_reference(values, features=["a", "b", "c"])
    drift_joint.put_attribution_reference(
        clean_db, model_version_id=row.model_version_id, reference=reference,
        algorithm="tree_interventional", evaluations_per_row=0, background_rows=100,
        background_key="bg", background_uri="s3://b/bg")
    stored = drift_joint.get_attribution_reference(clean_db, row.model_version_id)
    assert stored is not None and stored.algorithm == "tree_interventional"
    assert stored.features == ("a", "b", "c") and stored.n_rows == 20


def test_the_split_null_is_read_back_and_an_older_reference_has_none(clean_db: str) -> None:
    """Migration 0037: the null's sizes, standardised quantiles and level round-trip; a
    reference stored without them (before the migration) reads back empty, so the drift
    step keeps the old rule for it."""
    import dataclasses

    from modelgate.store.db import transaction

    ids = []
    for version in ("1", "2"):
        row, _ = models.register(clean_db, model_name="attr-null", version=version, sha256=version * 64,
                                 archive_sha256="6" * 64, archive_key="k", archive_uri="s3://b/k",
                                 manifest=manifest_of())
        ids.append(row.model_version_id)
    values = np.random.default_rng(1).normal(size=(40, 2))
    reference = build_attribution_reference(values, features=["a", "b"])
    legacy = dataclasses.replace(reference, null_sizes=(), null_quantiles=())
    for mv, ref in zip(ids, (reference, legacy), strict=True):
        drift_joint.put_attribution_reference(
            clean_db, model_version_id=mv, reference=ref, algorithm="linear_interventional",
            evaluations_per_row=0, background_rows=100, background_key="bg", background_uri="s3://b/bg")
    stored = drift_joint.get_attribution_reference(clean_db, ids[0])
    assert stored is not None and stored.null_sizes == (2, 4, 8, 14, 20)  # 5, 10, 20, 35, 50 % of 40
    assert stored.null_quantiles == reference.null_quantiles and stored.null_level == 0.99
    old = drift_joint.get_attribution_reference(clean_db, ids[1])
    assert old is not None and (old.null_sizes, old.null_quantiles) == ((), ())
    with transaction(clean_db) as cur:
        cur.execute("SELECT null_sizes, null_level FROM attribution_reference WHERE model_version_id = %s",
                    (ids[1],))
        assert cur.fetchone() == (None, None)
