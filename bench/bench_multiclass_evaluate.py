"""A many-class model through the whole ``modelgate evaluate``: wall time per stage, peak RSS.

Builds a ``--classes``-class ONNX model (MatMul of 8 float inputs by a seeded weight matrix,
plus a bias, then Softmax), draws ``--rows`` held-out rows (normal features, a sensitive
column ``group`` of three values, each row's label drawn from the model's own probabilities,
so the model is calibrated and every class is likely present) as one parquet file, packages
the archive and runs the whole evaluation (register, score, metrics with 1000 resamples,
fairness one-vs-rest per class, SHAP, decision, report, store) in a fresh child process as
``modelgate evaluate --data FILE`` does, against a PostgreSQL database made for the run and a
local object store. Peak RSS is the child's ``ru_maxrss`` (``wait4``); generating the data
happens before the child starts and is not counted.

Run: ``.venv/bin/python -m bench.bench_multiclass_evaluate --rows 100000 --classes 1000``
(needs PostgreSQL on ``--pg``, default ``postgresql://postgres@127.0.0.1:5432/postgres``).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench.bench_evaluate_scale import STAGES, _run_child

FEATURES = tuple(f"x{i}" for i in range(1, 9))


def _model_bytes(weights: np.ndarray, bias: np.ndarray) -> bytes:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    c = weights.shape[1]
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, len(FEATURES)])
    out = helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, c])
    nodes = [helper.make_node("MatMul", ["X", "W"], ["z"]),
             helper.make_node("Add", ["z", "b"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1)]
    init = [numpy_helper.from_array(weights.astype(np.float32), "W"),
            numpy_helper.from_array(bias.astype(np.float32), "b")]
    graph = helper.make_graph(nodes, "many_class", [x], [out], initializer=init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _labels(x: np.ndarray, weights: np.ndarray, bias: np.ndarray, rng: np.random.Generator
            ) -> np.ndarray:
    """Each row's label drawn from the model's probabilities (a slice of rows at a time)."""
    out = np.empty(len(x), dtype=np.int64)
    for start in range(0, len(x), 10_000):
        z = x[start:start + 10_000].astype(np.float64) @ weights + bias
        p = np.exp(z - z.max(axis=1, keepdims=True))
        cumulative = np.cumsum(p, axis=1)
        u = rng.random(len(z))[:, None] * cumulative[:, -1:]
        out[start:start + 10_000] = np.minimum((cumulative < u).sum(axis=1), weights.shape[1] - 1)
    return out


def build(root: Path, rows: int, classes: int, seed: int) -> tuple[Path, Path]:
    """The packaged archive and the held-out parquet file under ``root``."""
    from modelgate.onnx.artifact import package

    rng = np.random.default_rng(seed)
    weights = rng.normal(scale=1.5, size=(len(FEATURES), classes))
    bias = rng.normal(scale=0.3, size=classes)
    x = rng.normal(size=(rows, len(FEATURES))).astype(np.float32)
    frame = pd.DataFrame(x, columns=list(FEATURES))
    frame.insert(0, "row_id", np.arange(rows))
    frame["group"] = rng.choice(["a", "b", "c"], size=rows)
    frame["label"] = _labels(x, weights, bias, rng)
    src = root / "src"
    src.mkdir(parents=True)
    (src / "model.onnx").write_bytes(_model_bytes(weights, bias))
    manifest = {"format_version": 1, "name": f"many-{classes}", "version": "1",
                "task": "multiclass_classification", "input_tensor": "X",
                "features": [{"name": n, "kind": "numeric"} for n in FEATURES],
                "label": {"column": "label"}, "sensitive_features": ["group"],
                "id_column": "row_id",
                "output": {"name": "probabilities", "classes": list(range(classes))}}
    (src / "manifest.json").write_text(json.dumps(manifest))
    archive = package(src / "model.onnx", src / "manifest.json", root / "dist")
    data = root / "heldout.parquet"
    frame.to_parquet(data)
    return archive, data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-many-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        archive, data = build(root, args.rows, args.classes, args.seed)
        generated = time.perf_counter() - start
        result, usage = _run_child(args, root, archive, data, segments=False)
    print(f"{args.classes} classes x {args.rows:,} rows (generated in {generated:.1f} s, "
          f"not counted)")
    print("| stage | wall s |\n|---|---|")
    for name, seconds in result["stages"].items():
        print(f"| {STAGES.get(name, name)} | {seconds:.2f} |")
    print(f"| **end to end** | **{result['total_s']:.2f}** |")
    print(f"peak RSS {usage.ru_maxrss / 1024:.0f} MB; user {usage.ru_utime:.1f} s, "
          f"sys {usage.ru_stime:.1f} s; gate {result['status']}")


if __name__ == "__main__":
    main()
