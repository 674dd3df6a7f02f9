"""Pickles written before the pipelines' modules moved still load (``stored_pickles.loads``)."""

from __future__ import annotations

import pickle

import pytest
from modelgate.reports.explanation import ExplanationBudget

from modelgate.pipelines import stored_pickles
from modelgate.pipelines.drift.estimation import EstimationReference
from modelgate.pipelines.evaluation.policy_loading import CheckedPolicy
from modelgate.pipelines.evaluation.run_refs import RunRef


def stored_under(obj: object, former_module: str) -> bytes:
    """``obj`` pickled as if its class still lived in ``former_module``. Protocol 2 names a
    class in text (``c<module>\\n<name>\\n``), so the name can be rewritten in place."""
    cls = type(obj)
    now = f"c{cls.__module__}\n{cls.__qualname__}\n".encode()
    data = pickle.dumps(obj, protocol=2)
    assert data.count(now) == 1, data
    return data.replace(now, f"c{former_module}\n{cls.__qualname__}\n".encode())


@pytest.mark.parametrize(("obj", "former"), [
    (EstimationReference("binary_classification", None, 0.5, (), None, (), {"roc_auc": 0.8}),
     "modelgate.pipelines.drift_estimation"),
    (RunRef(7, "dag__run"), "modelgate.pipelines.evaluate"),
    (CheckedPolicy(None, "ab" * 32), "modelgate.pipelines.evaluate"),
    (CheckedPolicy(None, "cd" * 32), "modelgate.pipelines.evaluation.evaluate"),
    (ExplanationBudget(24, 2, 100, 2000), "modelgate.reports.explain"),
], ids=["estimation-reference", "run-ref", "checked-policy", "checked-policy-2", "explanation-budget"])
def test_a_class_stored_under_its_former_module_loads_from_where_it_is_now(obj: object, former: str) -> None:
    data = stored_under(obj, former)
    with pytest.raises(ModuleNotFoundError, match=former.replace(".", r"\.")):
        pickle.loads(data)  # noqa: S301 - built above
    assert stored_pickles.loads(data) == obj


def test_pickles_of_classes_that_never_moved_load_as_they_are() -> None:
    value = {"a": (1, 2.5), "b": [None, "x"]}
    assert stored_pickles.loads(pickle.dumps(value, protocol=5)) == value
    assert stored_pickles.loads(pickle.dumps(RunRef(1, "k"), protocol=5)) == RunRef(1, "k")
