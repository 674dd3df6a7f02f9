"""Segment columns encoded from arrow without a Python object per row give the labels and
codes that encoding the objects gives (strings with nulls, integers, floats with NaN)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from modelgate.fairness.disaggregate import encode_groups

from modelgate.pipelines.evaluation.segments_step import _segment_codes


@pytest.mark.parametrize("values", [
    pa.chunked_array([["b", None, "a"], ["b", "c", None]]),
    pa.chunked_array([[5, -3, 10], [5, 5, 0]]),
    pa.chunked_array([[5, None, 10], [5, 5, 0]]),
    pa.chunked_array([[0.5, float("nan"), 1.0], [None, 0.5, 2.0]]),
])
def test_codes_equal_those_of_the_objects(values: pa.ChunkedArray) -> None:
    labels, codes = _segment_codes(values)
    want_labels, want_codes = encode_groups(values.to_pandas().to_numpy(dtype=object))
    assert labels == want_labels
    assert np.array_equal(codes, want_codes)
