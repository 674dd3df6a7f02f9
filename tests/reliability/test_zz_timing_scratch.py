import time

import pandas as pd

from modelgate.pipelines.cli_runs import run_evaluation_locally


def test_time(settings_env, demo_builds, tmp_path):
    t = time.perf_counter()
    b = demo_builds["1"]
    print("build", time.perf_counter() - t, b.n_heldout)
    df = pd.read_parquet(b.heldout_path)
    print(df.dtypes, df.head())
    small = tmp_path / "small.parquet"
    df.iloc[:400].to_parquet(small)
    t = time.perf_counter()
    out = run_evaluation_locally(b.archive_path, b.heldout_path, None)
    print("full", time.perf_counter() - t, out.text)
    t = time.perf_counter()
    out = run_evaluation_locally(b.archive_path, small, None)
    print("small", time.perf_counter() - t, out.text)
