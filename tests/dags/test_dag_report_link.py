"""Both DAG files import with their "Report" operator extra link, as the API server serves it."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("dag_id", ["model_evaluation", "drift_monitoring"])
def test_dag_report_task_has_report_link(dag_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.serialization.serialized_objects import DagSerialization

    from modelgate.airflow_runner import load_dag

    # Airflow's SerializedDagModel sets this class attribute as a side effect of loading a DAG
    # without its links (dag.test() does, in earlier tests); the API server loads them.
    monkeypatch.setattr(DagSerialization, "_load_operator_extra_links", True)

    dag = load_dag(dag_id)
    group = "finish." if dag_id == "drift_monitoring" else ""  # drift's per-model task group
    assert [link.name for link in dag.get_task(f"{group}report").operator_extra_links] == ["Report"]
    # What the API server sees: the link name and its XCom key, from the serialized DAG.
    served = DagSerialization.from_dict(DagSerialization.to_dict(dag))
    assert served.get_task(f"{group}report").extra_links == ["Report"]
    assert served.get_task(f"{group}store").extra_links == []
