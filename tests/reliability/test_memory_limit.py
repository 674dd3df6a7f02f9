"""Issue #22 item 4: an evaluation over ``MODELGATE_EVAL_MEMORY_LIMIT_MB`` is refused before
any scoring, with the estimate and the setting in the run's failure reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.model_zoo import build

from modelgate.cli.runs import run_evaluation_locally
from modelgate.config import Settings
from modelgate.onnx.artifact import package
from modelgate.pipelines.evaluation.model_tasks import EvaluationTooLarge
from modelgate.store.db import fetch_all


@pytest.mark.e2e  # builds and registers a model: slow tier
def test_a_multiclass_run_over_the_limit_is_refused_before_scoring(
    settings_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    zoo = build("sklearn-3-class")
    archive = package(*zoo.write(tmp_path / "src"), tmp_path / "out")
    data = tmp_path / "heldout.parquet"
    zoo.frame.to_parquet(data)
    monkeypatch.setenv("MODELGATE_EVAL_MEMORY_LIMIT_MB", "1")  # below the resample chunk alone
    with pytest.raises(EvaluationTooLarge, match="MODELGATE_EVAL_MEMORY_LIMIT_MB=1"):
        run_evaluation_locally(archive, data, None)
    (status, reason, rows), = fetch_all(str(settings_env.database_url),
                                        "SELECT status, failure_reason, rows_scored FROM evaluation_run")
    assert status == "failed" and "3-class model" in reason and f"{len(zoo.frame):,} rows" in reason
    assert rows is None  # nothing was scored
