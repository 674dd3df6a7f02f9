"""The scratch files of one drift run, and their removal on every way out of it.

A drift run writes into ``MODELGATE_HOME/work``: the interval's live rows and their sample
with a copy of the model archive (``drift/<model>/<version>/<interval>``), the stored
sample fetched back by the later steps (``drift-sample/<interval>/<run id>-sample.parquet``),
label partitions (``labels/<model>/<version>``), the joint-drift folder and, when the run
builds the version's references, the reference copies (``reference``, ``joint-reference``,
``estimation-reference``). None of it is needed once the run is over, stored or failed:
rows of live data must not outlive the run that read them.

:func:`discard_run_scratch` removes them all. The in-process runner
(:func:`~modelgate.pipelines.drift.runner.run_drift`) calls it in a ``finally`` (stored,
breached, failed, interrupted), and so does the pipeline's ``fail`` (a DAG task's last try;
a try Airflow retries keeps its files for the retry, which empties them first).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Protocol

from modelgate.pipelines.context import safe_key_part

if TYPE_CHECKING:
    from modelgate.pipelines.context import Context


class RunScratch(Protocol):
    """What names a drift run's scratch files (a ``DriftRef`` has it)."""

    @property
    def drift_run_id(self) -> int: ...

    @property
    def model_name(self) -> str: ...

    @property
    def version(self) -> str: ...

    @property
    def interval_start(self) -> str: ...

#: Scratch folders of a model version, under ``work/`` (each followed by model and version).
VERSION_SCRATCH = ("labels", "reference", "joint-reference", "estimation-reference")
#: Scratch folders of one interval of a model version (followed by model, version, interval).
INTERVAL_SCRATCH = ("drift", "joint-drift")


def discard_run_scratch(ctx: Context, ref: RunScratch) -> None:
    """Remove every scratch file of the drift run ``ref`` (missing ones are no error).

    Parameters
    ----------
    ctx : Context
        Where the scratch folder is (``MODELGATE_HOME/work``).
    ref : RunScratch
        The run (a ``DriftRef``): its model, version, interval and id name its files.
    """

    for folder in INTERVAL_SCRATCH:
        ctx.discard_scratch(folder, ref.model_name, ref.version, ref.interval_start)
    for folder in VERSION_SCRATCH:
        ctx.discard_scratch(folder, ref.model_name, ref.version)
    # the sample's folder is shared by the interval's runs of other models: only this run's file
    samples = ctx.settings.home.resolve() / "work" / "drift-sample" / safe_key_part(ref.interval_start)
    (samples / f"{ref.drift_run_id}-sample.parquet").unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # not empty: another model's run is using it
        samples.rmdir()
