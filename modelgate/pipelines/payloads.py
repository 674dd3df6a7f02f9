"""What passes between the pipelines' steps: Airflow XCom values and the in-process runners'
step outputs, as :class:`~typing.TypedDict` so mypy checks every key a step reads.

At run time they are plain dicts of JSON values, which is what XCom stores. Kept free of
heavy imports: DAG files import it at parse time.

Evaluation (``model_evaluation``, :mod:`~modelgate.pipelines.evaluation.runner`)::

    verify -> RunRefDict (XCom ``run``: every later task); list[Partition] (its return value) -> score

Drift (``drift_monitoring``, :mod:`~modelgate.pipelines.drift.runner`)::

    plan -> list[MonitorSpecDict] -> prepare -> PreparedModel -> sample_and_score
    -> ScoredModel -> feature_drift (one FeatureTask each) and the per-model steps after it

Every other step passes a string (an object key, a status) or nothing.

A TypedDict return annotation makes TaskFlow push every key as an XCom of its own
(``multiple_outputs``), as ``dict`` does; the DAGs set ``multiple_outputs`` explicitly where
a task returns one of these.

Examples
--------
A payload is a plain dict, so it goes to XCom as JSON:

>>> import json
>>> json.dumps([Partition(index=0, uri="s3://held-out/part-0.parquet")])
'[{"index": 0, "uri": "s3://held-out/part-0.parquet"}]'
"""

from __future__ import annotations

from typing import Any, TypedDict

# --- evaluation ---------------------------------------------------------------------------


class RunRefDict(TypedDict):
    """An evaluation run, as every task after ``verify`` is given it
    (:meth:`RunRef.as_dict <modelgate.pipelines.evaluation.run_refs.RunRef.as_dict>`; ``RunRef(**it)``
    turns it back).

    Parameters
    ----------
    evaluation_run_id : int
        The ``evaluation_run`` row's id.
    run_key : str
        The run's key (:func:`~modelgate.pipelines.evaluation.run_keys.evaluation_run_key`), which
        names its objects in the store.
    """

    evaluation_run_id: int
    run_key: str


class Partition(TypedDict):
    """One held-out parquet file to score: what one mapped ``score`` task is given.

    Parameters
    ----------
    index : int
        Its place in the sorted list of the dataset's files, from 0; ``merge`` checks the
        scored partitions come back as 0, 1, 2, ...
    uri : str
        The file (a path or an ``s3://`` key).
    """

    index: int
    uri: str


# --- drift --------------------------------------------------------------------------------


class MonitorSpecDict(TypedDict):
    """What one model's drift run reads: its monitoring config overridden by the run's params
    (:meth:`MonitorSpec.as_dict <modelgate.pipelines.drift.feature_steps.MonitorSpec.as_dict>`, one per
    model from :func:`~modelgate.pipelines.drift.feature_steps.monitor_specs`).

    Parameters
    ----------
    model_name : str
        The monitored model; its version in ``production`` is the one scored.
    live : str
        Where the live partitions ``dt=YYYY-MM-DD`` are (a directory or an ``s3://`` prefix).
    labels : str
        Where the label partitions are (joined to the scored rows by the manifest's
        ``id_column``); empty: no labels.
    reference : str
        A reference dataset to build a missing reference sketch from (manual runs); empty
        for scheduled runs.
    sample_size : int
        How many live rows of the interval are sampled and scored.
    thresholds : dict
        The drift thresholds as given (JSON object), checked by
        :func:`~modelgate.pipelines.drift.feature_steps.parse_thresholds` and
        :func:`~modelgate.pipelines.drift.joint.split_thresholds`.
    adwin_delta : float
        ADWIN's confidence parameter for a detector created by this run.
    """

    model_name: str
    live: str
    labels: str
    reference: str
    sample_size: int
    thresholds: dict[str, Any]
    adwin_delta: float


class DriftRefDict(TypedDict):
    """A drift run, as its tasks are given it
    (:meth:`DriftRef.as_dict <modelgate.pipelines.drift.feature_steps.DriftRef.as_dict>`; ``DriftRef(**it)``
    turns it back).

    Parameters
    ----------
    drift_run_id : int
        The ``drift_run`` row's id.
    model_version_id : int
        The production model version the run scores.
    model_name, version : str
        That version's name and version, for object keys, logs and the report.
    interval_start, interval_end : str
        The data interval ``[start, end)``, ISO 8601 in UTC.
    """

    drift_run_id: int
    model_version_id: int
    model_name: str
    version: str
    interval_start: str
    interval_end: str


class PreparedRun(TypedDict):
    """What :func:`~modelgate.pipelines.drift.feature_steps.prepare` returns once the run row is open.

    Parameters
    ----------
    run : DriftRefDict
        The run.
    features : list of str
        The features the ``feature_drift`` step fans out over: the manifest's, then the
        score distribution (:data:`~modelgate.pipelines.drift.feature_steps.SCORE_FEATURE`).
    """

    run: DriftRefDict
    features: list[str]


class PreparedModel(PreparedRun):
    """One model's prepared run with what it reads: the ``prepare`` step's output.

    Parameters
    ----------
    run, features
        As in :class:`PreparedRun`.
    spec : MonitorSpecDict
        The model's spec, which later steps read their inputs and thresholds from.
    """

    spec: MonitorSpecDict


class LiveSample(TypedDict):
    """The interval's scored live sample
    (:func:`~modelgate.pipelines.drift.feature_steps.sample_and_score`).

    Parameters
    ----------
    rows : int
        Rows sampled; 0 when the interval has no live rows.
    key : str or None
        The object key of the scored sample (parquet; live columns, ``__score__`` and
        ``__prediction__``); None when there are no rows.
    """

    rows: int
    key: str | None


class ScoredModel(PreparedModel):
    """One model's run after ``sample_and_score``: what the feature fan-out is built from and
    what every step of the per-model ``finish`` group is given.

    Parameters
    ----------
    run, features, spec
        As in :class:`PreparedModel`.
    sample : LiveSample
        The scored live sample.
    """

    sample: LiveSample


class FeatureTask(TypedDict):
    """One (model, feature) of the fan-out: the keyword arguments of one mapped
    ``feature_drift`` task.

    Parameters
    ----------
    run : DriftRefDict
        The model's run.
    sample : LiveSample
        Its scored live sample.
    feature : str
        The feature (or the score distribution) to compare with its reference.
    thresholds : dict
        The spec's thresholds (:attr:`MonitorSpecDict.thresholds`).
    """

    run: DriftRefDict
    sample: LiveSample
    feature: str
    thresholds: dict[str, Any]
