"""Data drift benchmark: modelgate vs a plain scipy loop vs Evidently vs NannyML.

Synthetic, seeded data: ``--rows`` reference rows and as many current rows, 20 numeric and 5
categorical features, written to parquet under bench/out/ (gitignored). Each contender runs
in a fresh subprocess; its peak RSS comes from ``os.wait4`` (that child only) and its compute
time is measured inside the child, after imports, from parquet on disk to per-feature results.

    .venv/bin/python -m bench.bench_drift                 # 1M x 1M, all contenders
    .venv/bin/python -m bench.bench_drift --rows 10000000 --contenders modelgate,scipy
    .venv/bin/python -m bench.bench_drift --contenders modelgate_cli,evidently --repeats 2

``modelgate_cli`` is the one-shot command a data scientist types, as a whole process:
``modelgate drift --reference R --current C --format json`` (reference sketches built in the
same run, nothing cached). With ``--repeats`` every contender runs that many times, interleaved
round by round, and each round prints the load average beside its ratios to Evidently, so a
ratio compares runs made under the same load.

Evidently and NannyML run in their own venvs (``bash bench/setup_peers.sh``), so this file
imports only the standard library at the top: the peer venvs run it as a plain script in
``--worker`` mode, and the driver stays small. That matters for the memory figures: Linux
carries a parent's peak RSS into a forked child's ``ru_maxrss``, so the driver generates the
data in a subprocess too and never imports numpy itself.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from modelgate.pipelines.drift.columns import FeatureKind

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
N_NUM, N_CAT = 20, 5
NUMERIC = [f"num_{i:02d}" for i in range(N_NUM)]
CATEGORICAL = [f"cat_{i}" for i in range(N_CAT)]
LABELS = [f"level_{k}" for k in range(9)]
CHUNK = 1_000_000
PYTHON = {
    "modelgate": ROOT / ".venv/bin/python",
    "scipy": ROOT / ".venv/bin/python",
    "evidently": ROOT / ".venv-evidently/bin/python",
    "nannyml": ROOT / ".venv-nannyml/bin/python",
}


def _chunk_table(rng: np.random.Generator, n: int, current: bool) -> pa.Table:
    import numpy as np
    import pyarrow as pa

    cols: dict[str, pa.Array] = {}
    for i, name in enumerate(NUMERIC):
        shift = 0.25 if current and i < 5 else 0.0
        kind = i % 4
        if kind == 0:
            x = rng.normal(shift, 1.0, n)
        elif kind == 1:
            x = rng.lognormal(shift, 0.8, n)
        elif kind == 2:
            x = np.where(rng.random(n) < 0.6, 0.0, rng.exponential(1.0 + shift, n))
        else:
            x = np.round(rng.normal(40 + 10 * shift, 12, n))
        x[rng.random(n) < 0.01] = np.nan
        cols[name] = pa.array(x)
    p = 1 / np.arange(1, 9)
    for i, name in enumerate(CATEGORICAL):
        probs = p / p.sum()
        # current cat_0 gets an unseen level_8
        probs = np.r_[probs * 0.95, 0.05] if current and i == 0 else np.r_[probs, 0.0]
        idx = rng.choice(9, size=n, p=probs).astype(np.int32)
        cols[name] = pa.DictionaryArray.from_arrays(idx, pa.array(LABELS))
    return pa.table(cols)


def write_data(rows: int, seed: int = 0) -> dict[str, Any]:
    import numpy as np
    import pyarrow.parquet as pq

    OUT.mkdir(parents=True, exist_ok=True)
    paths = []
    for role, current in (("ref", False), ("cur", True)):
        path = OUT / f"{role}_{rows}.parquet"
        paths.append(path)
        if path.exists():
            continue
        tmp = path.with_suffix(".tmp")
        writer = None
        for k, start in enumerate(range(0, rows, CHUNK)):
            rng = np.random.default_rng([seed, int(current), k])
            table = _chunk_table(rng, min(CHUNK, rows - start), current)
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema)
            writer.write_table(table)
        assert writer is not None
        writer.close()
        tmp.rename(path)
    return {"seconds": 0.0}


# ---------------------------------------------------------------- workers (one per process)


def _features() -> dict[str, FeatureKind]:
    return {**{n: "numeric" for n in NUMERIC}, **{c: "categorical" for c in CATEGORICAL}}


def worker_generate(ref: Path, cur: Path, rows: int) -> dict:
    t = time.perf_counter()
    write_data(rows)
    return {"seconds": time.perf_counter() - t}


def worker_modelgate_build(ref: Path, cur: Path, rows: int) -> dict:
    from modelgate.pipelines.drift.columns import build_references_from_parquet

    max_values = 1_000_000 if rows > 1_000_000 else None
    t = time.perf_counter()
    refs = build_references_from_parquet(ref, _features(), max_values=max_values)
    folder = OUT / f"sketch_{rows}"
    folder.mkdir(exist_ok=True)
    for name, r in refs.items():
        (folder / f"{name}.bin").write_bytes(r.to_bytes())
    bound = max(getattr(r, "w1_error_bound", 0.0) for r in refs.values())
    return {"seconds": time.perf_counter() - t, "max_values": max_values, "w1_error_bound": bound}


def worker_modelgate(ref: Path, cur: Path, rows: int) -> dict:
    from modelgate.drift.data_drift import summarise
    from modelgate.drift.reference import CategoricalReference, NumericReference

    from modelgate.pipelines.drift.columns import drift_from_parquet

    t = time.perf_counter()
    refs = {}
    for name, kind in _features().items():
        cls = NumericReference if kind == "numeric" else CategoricalReference
        refs[name] = cls.from_bytes((OUT / f"sketch_{rows}" / f"{name}.bin").read_bytes())
    summary = summarise(drift_from_parquet(cur, refs))
    return {"seconds": time.perf_counter() - t, "n_breached": summary.n_breached}


def worker_scipy(ref: Path, cur: Path, rows: int) -> dict:
    import numpy as np
    import pyarrow.parquet as pq
    from scipy.spatial.distance import jensenshannon
    from scipy.stats import wasserstein_distance

    t = time.perf_counter()
    out = {}
    for name, kind in _features().items():
        a = pq.read_table(ref, columns=[name]).column(name)
        b = pq.read_table(cur, columns=[name]).column(name)
        if kind == "numeric":
            x, y = a.to_numpy(), b.to_numpy()
            x, y = x[np.isfinite(x)], y[np.isfinite(y)]
            edges = np.unique(np.quantile(x, np.linspace(0, 1, 11)))
            edges[0], edges[-1] = -np.inf, np.inf
            p, q = np.histogram(x, edges)[0], np.histogram(y, edges)[0]
            out[name] = (wasserstein_distance(x, y), jensenshannon(p, q, base=2) ** 2)
        else:
            ca = a.to_pandas().value_counts(dropna=False)
            cb = b.to_pandas().value_counts(dropna=False)
            keys = ca.index.union(cb.index)
            p = ca.reindex(keys, fill_value=0).to_numpy()
            q = cb.reindex(keys, fill_value=0).to_numpy()
            out[name] = (None, jensenshannon(p, q, base=2) ** 2)
    return {"seconds": time.perf_counter() - t}


def worker_evidently(ref: Path, cur: Path, rows: int) -> dict:
    import pyarrow.parquet as pq
    from evidently import DataDefinition, Dataset, Report
    from evidently.presets import DataDriftPreset

    t = time.perf_counter()
    definition = DataDefinition(numerical_columns=NUMERIC, categorical_columns=CATEGORICAL)
    ref_ds = Dataset.from_pandas(pq.read_table(ref).to_pandas(), data_definition=definition)
    cur_ds = Dataset.from_pandas(pq.read_table(cur).to_pandas(), data_definition=definition)
    report = Report([DataDriftPreset(num_method="wasserstein", cat_method="jensenshannon")])
    snapshot = report.run(cur_ds, ref_ds)
    snapshot.dict()
    return {"seconds": time.perf_counter() - t}


def worker_nannyml(ref: Path, cur: Path, rows: int) -> dict:
    import nannyml as nml
    import pyarrow.parquet as pq

    t = time.perf_counter()
    ref_df = pq.read_table(ref).to_pandas()
    cur_df = pq.read_table(cur).to_pandas()
    calc = nml.UnivariateDriftCalculator(
        column_names=NUMERIC + CATEGORICAL,
        treat_as_categorical=CATEGORICAL,
        continuous_methods=["wasserstein"],
        categorical_methods=["jensen_shannon"],
        chunk_number=1,
    )
    calc.fit(ref_df)
    calc.calculate(cur_df).to_df()
    return {"seconds": time.perf_counter() - t}


WORKERS = {
    "generate": worker_generate,
    "modelgate_build": worker_modelgate_build,
    "modelgate": worker_modelgate,
    "scipy": worker_scipy,
    "evidently": worker_evidently,
    "nannyml": worker_nannyml,
}

# ---------------------------------------------------------------- driver


def _cli_command(ref: Path, cur: Path) -> list[str]:
    return [str(ROOT / ".venv/bin/modelgate"), "-q", "drift", "--reference", str(ref),
            "--current", str(cur), "--format", "json"]


def _cli_result(text: str, returncode: int) -> dict:
    """The one-shot command exits 3 when a feature breaches; its JSON is on stdout."""
    if returncode not in (0, 3):
        return {"error": f"exit {returncode}: {text.strip()[-300:]}"}
    payload = json.loads(text[text.index("{"):])
    return {"n_breached": payload["n_breached"]}


def run_contender(name: str, ref: Path, cur: Path, rows: int, timeout: float) -> dict:
    python = PYTHON.get(name, PYTHON["modelgate"])
    if not python.exists():
        return {"error": f"{python} missing (run bench/setup_peers.sh)"}
    cmd = [str(python), str(Path(__file__).resolve()), "--worker", name, "--rows", str(rows)]
    if name == "modelgate_cli":
        cmd = _cli_command(ref, cur)
    with tempfile.TemporaryFile("w+") as log:
        start = time.perf_counter()
        # the CLI's stderr is not mixed into its JSON
        err = subprocess.DEVNULL if name == "modelgate_cli" else subprocess.STDOUT
        proc = subprocess.Popen(cmd, stdout=log, stderr=err, cwd=ROOT)
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                return {"error": f"timed out after {timeout:.0f} s"}
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        log.seek(0)
        text = log.read()
    cpu = usage.ru_utime + usage.ru_stime
    result = {"process_s": wall, "cpu_s": cpu, "peak_mb": usage.ru_maxrss / 1024}
    if name == "modelgate_cli":
        return {**result, **_cli_result(text, proc.returncode)}
    lines = [ln for ln in text.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        tail = " | ".join(text.strip().splitlines()[-3:])
        return {**result, "error": f"exit {proc.returncode}: {tail[-300:]}"}
    return {**result, **json.loads(lines[-1][len("RESULT ") :])}


def _note(name: str, r: dict) -> str:
    if "error" in r:
        return str(r["error"])
    if name == "modelgate_build":
        return (f"reference sketches, once per model version; max_values={r['max_values']}, "
                f"max W1 error bound {r['w1_error_bound']:.2e}")
    if name == "modelgate":
        return f"cached sketches; {r['n_breached']} features breached"
    if name == "modelgate_cli":
        return f"one-shot `modelgate drift`, whole process; {r['n_breached']} features breached"
    return ""


def _fmt(values: list[float]) -> str:
    if not values:
        return "-"
    best, median = min(values), statistics.median(values)
    return f"{best:.2f}" if len(values) == 1 else f"{best:.2f} / {median:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--contenders", default="modelgate,modelgate_cli,scipy,evidently,nannyml")
    parser.add_argument("--repeats", type=int, default=1, help="interleaved rounds (default 1)")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--worker", choices=sorted(WORKERS))
    args = parser.parse_args()
    ref, cur = OUT / f"ref_{args.rows}.parquet", OUT / f"cur_{args.rows}.parquet"
    if args.worker:
        print("RESULT " + json.dumps(WORKERS[args.worker](ref, cur, args.rows)), flush=True)
        return
    gen = run_contender("generate", ref, cur, args.rows, args.timeout)
    if "error" in gen:
        raise SystemExit(f"data generation failed: {gen['error']}")
    print(
        f"data: {args.rows:,} x {args.rows:,} rows, {N_NUM} numeric + {N_CAT} categorical "
        f"({gen['seconds']:.1f} s to generate or reuse)\n"
    )
    names = args.contenders.split(",")
    if "modelgate" in names:
        names.insert(names.index("modelgate"), "modelgate_build")
    runs: dict[str, list[dict]] = {name: [] for name in names}
    for k in range(args.repeats):
        load = os.getloadavg()[0]
        for name in names:
            runs[name].append(run_contender(name, ref, cur, args.rows, args.timeout))
        if args.repeats > 1 or "modelgate_cli" in names:
            _print_round(k, load, os.getloadavg()[0], {n: r[-1] for n, r in runs.items()})
    label = "best / median" if args.repeats > 1 else ""
    print(f"\n| contender | compute s {label} | process s {label} | process CPU s | "
          "peak RSS MB | note |")
    print("|---|---:|---:|---:|---:|---|")
    for name in names:
        ok = [r for r in runs[name] if "error" not in r]
        secs = _fmt([r["seconds"] for r in ok if "seconds" in r])
        proc = _fmt([r["process_s"] for r in ok])
        cpu = _fmt([r["cpu_s"] for r in ok])
        peak = f"{max(r['peak_mb'] for r in ok):.0f}" if ok else "-"
        note = _note(name, (ok or runs[name])[-1])
        print(f"| {name} | {secs} | {proc} | {cpu} | {peak} | {note} |", flush=True)


def _print_round(k: int, load_before: float, load_after: float, last: dict[str, dict]) -> None:
    """One round's process times and every contender's ratio to Evidently in that round."""
    times = {n: r["process_s"] for n, r in last.items() if "error" not in r and "process_s" in r}
    parts = [f"{n} {t:.2f} s" for n, t in times.items()]
    ev = times.get("evidently")
    if ev is not None:
        parts += [f"Evidently / {n} = {ev / t:.1f}x" for n, t in times.items() if n != "evidently"]
    print(f"round {k + 1} (load average {load_before:.2f} before, {load_after:.2f} after): "
          + "; ".join(parts), flush=True)


if __name__ == "__main__":
    main()
