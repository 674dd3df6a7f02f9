"""Issue #22 item 4: many-class models in bounded memory.

A 1000-class model on 300 rows failed with ``MemoryError: 7.45 GiB (1000, 1000001)``: the
statistics held ``C^2 + 1`` dense cells per row. Point estimates are compared with
scikit-learn; the memory bound :func:`multiclass_memory_bytes` states up front is checked
against the peak numpy allocates (``tracemalloc`` sees numpy's buffers).
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from modelgate.evaluation.multiclass import evaluate_multiclass, multiclass_memory_bytes
from sklearn import metrics as skm
from support.tiny_graphs import manifest_of

from modelgate.pipelines.evaluation import model_tasks


def _data(seed: int, n: int, c: int, ties: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, size=n)
    logits = rng.normal(size=(n, c))
    logits[np.arange(n), y] += 3.0
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    if ties:
        proba = np.round(proba, 2)
        proba /= proba.sum(axis=1, keepdims=True)
    return y, proba


def test_a_1000_class_model_on_300_rows_is_evaluated() -> None:
    y, proba = _data(0, 300, 1000)
    labels = list(range(1000))
    pred = proba.argmax(axis=1)
    m = evaluate_multiclass(y, proba, n_bootstrap=200, seed=1).by_name()
    assert m["accuracy"].value == pytest.approx(skm.accuracy_score(y, pred), abs=1e-12)
    assert m["macro_f1"].value == pytest.approx(
        skm.f1_score(y, pred, labels=labels, average="macro", zero_division=np.nan), abs=1e-9)
    assert m["log_loss"].value == pytest.approx(skm.log_loss(y, proba, labels=labels), abs=1e-9)
    assert m["accuracy"].ci_lower < m["accuracy"].value < m["accuracy"].ci_upper
    assert np.isnan(m["roc_auc_ovr_macro"].value)  # most classes have no row: undefined, as sklearn


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
def test_ovr_auc_of_many_classes_equals_sklearn(ties: bool) -> None:
    y, proba = _data(3, 3000, 120, ties=ties)
    y[:120] = np.arange(120)  # every class present
    got = evaluate_multiclass(y, proba, n_bootstrap=0).by_name()["roc_auc_ovr_macro"].value
    assert got == pytest.approx(skm.roc_auc_score(y, proba, multi_class="ovr", average="macro",
                                                  labels=list(range(120))), abs=1e-12)


def test_peak_memory_stays_under_the_stated_bound() -> None:
    y, proba = _data(5, 2000, 300)
    bound = multiclass_memory_bytes(2000, 300, n_bootstrap=300)
    tracemalloc.start()
    try:
        evaluate_multiclass(y, proba, n_bootstrap=300, seed=0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak + proba.nbytes <= bound  # the input was allocated before tracing
    assert bound < 8 * 2000 * (300**2 + 1)  # what one dense confusion-cell table alone held


def test_the_limit_refuses_up_front_naming_the_setting() -> None:
    manifest = manifest_of("wide", task="multiclass_classification", label={"column": "y"},
                           output={"name": "probabilities", "classes": list(range(1000))}, threshold=None)
    model_tasks.check_memory(manifest, 300, champion=True, n_bootstrap=1000, limit_mb=4096)
    with pytest.raises(model_tasks.EvaluationTooLarge,
                       match=r"1000-class model 'wide' on 100,000 rows with its champion need "
                             r"about [\d,]+ MiB, over MODELGATE_EVAL_MEMORY_LIMIT_MB=2048"):
        model_tasks.check_memory(manifest, 100_000, champion=True, n_bootstrap=1000,
                                    limit_mb=2048)
    binary = manifest_of("b")
    model_tasks.check_memory(binary, 10**9, champion=True, n_bootstrap=1000, limit_mb=1)
