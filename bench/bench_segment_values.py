"""What ``prepare`` adds by counting a segment column's distinct values before scoring.

The step reads the segment columns alone, a row group at a time, and stops at the first row
group past ``MAX_SEGMENT_VALUES`` (:mod:`modelgate.pipelines.evaluation.segment_values`); that
read is the whole of what it adds to ``prepare`` (plus importing pyarrow there, timed apart in a
fresh process). Timed here, wall and CPU seconds of
:func:`~modelgate.pipelines.evaluation.segment_values.refuse_segment_columns`:

* the demo's held-out file (GSS rows), one segment column (``gender``), median of 5;
* ``--rows`` rows resampled from it as ``bench_evaluate_scale`` writes them (parquet files of
  at most 5M rows, a string column ``segment_a`` of 50 values), once: that column (read whole)
  and ``row_id`` (an id: refused after its first row group).

Run: ``nice -n 10 .venv/bin/python -m bench.bench_segment_values --rows 10000000``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_evaluate_scale import _generate
from modelgate.pipelines.evaluation.segment_values import refuse_segment_columns
from modelgate.pipelines.evaluation.segments_step import SegmentColumnRefused


def _timed(data: Path, column: str) -> tuple[float, float, str]:
    """Wall s, CPU s and what the check said."""
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        counted = refuse_segment_columns(None, str(data), [column])
        said = f"passed, {counted.row_groups} row group(s) read"
    except SegmentColumnRefused as exc:
        said = f"refused ({str(exc).split(':', 1)[0]})"
    return time.perf_counter() - wall, time.process_time() - cpu, said


def _import_seconds() -> float:
    """What the check's imports add to a fresh process that has imported ``prepare_step``."""
    step = "modelgate.pipelines.evaluation"
    code = (f"import time\nimport {step}.prepare_step\nt = time.perf_counter()\n"
            f"import {step}.segment_values, {step}.partitions, {step}.row_sample\n"
            "print(time.perf_counter() - t)")
    return float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                text=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    args = parser.parse_args()
    from modelgate.demo.data import build_demo

    print(f"1-min load before: {os.getloadavg()[0]:.1f}")
    print(f"imports the check adds to prepare: {_import_seconds():.2f} s")
    with tempfile.TemporaryDirectory(prefix="bench-segvalues-") as tmp:
        root = Path(tmp)
        demo = build_demo(root / "demo", version="1", variant="baseline")
        runs = [_timed(demo.heldout_path, "gender") for _ in range(5)]
        print(f"demo held-out ({demo.heldout_path.stat().st_size / 1e6:.1f} MB), gender: median "
              f"{statistics.median(r[0] for r in runs) * 1000:.1f} ms wall, "
              f"{statistics.median(r[1] for r in runs) * 1000:.1f} ms CPU; {runs[0][2]}")
        data = root / "heldout"
        data.mkdir()
        files = _generate(demo.heldout_path, data, args.rows, 5_000_000, seed=0, segment_values=50)
        size = sum(p.stat().st_size for p in data.iterdir()) / 1e6
        for column in ("segment_a", "row_id"):
            wall, cpu, said = _timed(data, column)
            print(f"{args.rows:,} rows in {files} file(s) ({size:.0f} MB), {column}: {wall:.2f} s wall, "
                  f"{cpu:.2f} s CPU; {said}")
    print(f"1-min load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
