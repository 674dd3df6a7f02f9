"""The attribution reference keeps how its SHAP values were computed, and gives it back, so
every live interval computes its values the same way (issue #40: exact tree values)."""

from __future__ import annotations

import numpy as np
from modelgate.drift.attribution import build_attribution_reference

from modelgate.store import drift_joint, models


def test_the_reference_algorithm_is_read_back(clean_db: str) -> None:
    row, _ = models.register(clean_db, model_name="attr-ref", version="1", sha256="5" * 64,
                             archive_sha256="6" * 64, archive_key="k", archive_uri="s3://b/k",
                             manifest={})
    values = np.random.default_rng(0).normal(size=(20, 3))
    reference = build_attribution_reference(values, features=["a", "b", "c"])
    drift_joint.put_attribution_reference(
        clean_db, model_version_id=row.model_version_id, reference=reference,
        algorithm="tree_interventional", evaluations_per_row=0, background_rows=100,
        background_key="bg", background_uri="s3://b/bg")
    stored = drift_joint.get_attribution_reference(clean_db, row.model_version_id)
    assert stored is not None and stored.algorithm == "tree_interventional"
    assert stored.features == ("a", "b", "c") and stored.n_rows == 20
