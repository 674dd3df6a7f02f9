"""Issue #22 item 9 for ``s3://`` datasets: a prefix of many small objects is listed once with
the objects' sizes, batched like a local directory, its members fetched apart (an object is
downloaded to a path of its whole key, so ``dt=1/part-0`` and ``dt=2/part-0`` do not collide;
a batch's members are read into memory) and fingerprinted by their bytes,
so an evaluation from the prefix stores the numbers and the dataset sha256 of the same files
evaluated from a local copy. All against moto's S3 server through the ``minio`` client."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from modelgate.config import Settings
from modelgate.pipelines.context import Context, fetch_dataset, safe_key_part
from modelgate.pipelines.evaluation import partitions
from modelgate.store.objects import LocalObjectStore

PARQUET = "application/vnd.apache.parquet"


def _s3(settings: Settings, key: str) -> str:
    assert settings.s3 is not None
    return f"s3://{settings.s3.bucket}/{key}"


@pytest.mark.parametrize("kind", ["s3", "local"])
def test_list_sizes_gives_each_objects_bytes_for_keys_starting_with_the_prefix(
    settings: Settings, tmp_path: Path, kind: str,
) -> None:
    store = Context.open(settings).store if kind == "s3" else LocalObjectStore(tmp_path / "objects")
    objects = {"held/a.parquet": b"x" * 3, "held/a.parquet.crc": b"", "held/a.parquet-1/p.parquet": b"y" * 7,
               "held/b.parquet": b"z" * 11, "held2/a.parquet": b"w" * 5}
    for key, data in objects.items():
        store.put_bytes(key, data, content_type=PARQUET)
    assert store.list_sizes("held/a.parquet") == [
        ("held/a.parquet", 3), ("held/a.parquet-1/p.parquet", 7), ("held/a.parquet.crc", 0)]
    assert store.list_sizes("held/") == [
        ("held/a.parquet", 3), ("held/a.parquet-1/p.parquet", 7), ("held/a.parquet.crc", 0),
        ("held/b.parquet", 11)]
    assert store.list_sizes("nothing/") == []


def test_an_s3_prefix_is_batched_by_the_sizes_of_one_listing(
    settings: Settings, monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctx = Context.open(settings)
    small = [f"held/dt={d}/part-{i:03d}.parquet" for d in (1, 2, 3) for i in range(100)]
    for key in small:
        ctx.store.put_bytes(key, b"s" * 100, content_type=PARQUET)
    # 8 MiB: a partition of its own, between the batch before it and the batch after it
    ctx.store.put_bytes("held/dt=2/part-big.parquet", b"b" * (8 << 20), content_type=PARQUET)
    ctx.store.put_bytes("held/_SUCCESS", b"", content_type=PARQUET)
    ctx.store.put_bytes("held/dt=3/_temporary/part-000.parquet", b"t", content_type=PARQUET)
    calls: list[str] = []
    listing = ctx.store.list_sizes
    monkeypatch.setattr(ctx.store, "list_sizes", lambda prefix: calls.append(prefix) or listing(prefix))

    sized = partitions.list_sized(ctx.store, _s3(settings, "held"))

    assert calls == ["held/"]  # one listing (one request per 1000 keys), no request per object
    assert sized == sorted([(_s3(settings, k), 100) for k in small]
                           + [(_s3(settings, "held/dt=2/part-big.parquet"), 8 << 20)])
    uris = [_s3(settings, k) for k in small]
    assert [p.split("\n") for p in partitions.batch_by_size(sized)] == [
        uris[:200], [_s3(settings, "held/dt=2/part-big.parquet")], uris[200:]]


def test_batch_members_that_share_a_file_name_are_fetched_to_two_files(
    settings: Settings, tmp_path: Path,
) -> None:
    ctx = Context.open(settings)
    first, second = pd.DataFrame({"x": [1.0, 2.0]}), pd.DataFrame({"x": [3.0, 4.0, 5.0]})
    data = {}
    for key, frame in (("held/dt=1/part-0.parquet", first), ("held/dt=2/part-0.parquet", second)):
        frame.to_parquet(tmp_path / "f.parquet", index=False)
        data[key] = (tmp_path / "f.parquet").read_bytes()
        ctx.store.put_bytes(key, data[key], content_type=PARQUET)
    work = tmp_path / "work"

    one = fetch_dataset(ctx, _s3(settings, "held/dt=1/part-0.parquet"), work)
    two = fetch_dataset(ctx, _s3(settings, "held/dt=2/part-0.parquet"), work)

    assert one != two
    assert one.read_bytes() == data["held/dt=1/part-0.parquet"]  # not replaced by dt=2's
    assert two.read_bytes() == data["held/dt=2/part-0.parquet"]
    batch = "\n".join(_s3(settings, k) for k in data)
    fetched = partitions.fetch_members(ctx, batch, tmp_path / "batch")
    assert fetched.member_sha256 == tuple(hashlib.sha256(b).hexdigest() for b in data.values())
    assert pd.read_parquet(fetched.path)["x"].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert partitions.member_fingerprints(_s3(settings, "held"), fetched) == tuple(
        (k.removeprefix("held/"), hashlib.sha256(b).hexdigest()) for k, b in data.items())
    assert [p.name for p in (tmp_path / "batch").rglob("*")] == ["batch.parquet"]  # members in memory


def _layout(frame: pd.DataFrame, root: Path) -> dict[str, Path]:
    """300 files of 5 rows: ``dt=<d>/part-<i>.parquet``, each file name in three folders."""
    files = {}
    for n in range(300):
        name = f"dt={n // 100 + 1}/part-{n % 100:03d}.parquet"
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        frame.iloc[5 * n:5 * n + 5].to_parquet(root / name, index=False)
        files[name] = root / name
    return files


@pytest.fixture()
def env(settings_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """settings_env with no per-model policy overrides, batches of at most 128 files."""
    (tmp_path / "no-policies").mkdir()
    monkeypatch.setenv("MODELGATE_POLICY_DIR", str(tmp_path / "no-policies"))
    monkeypatch.setattr(partitions, "BATCH_FILES", 128)  # 300 files: batches of 128, 128, 44
    return settings_env


@pytest.mark.e2e  # two evaluations of the demo model
def test_an_s3_prefix_of_many_small_files_evaluates_in_batches_with_the_numbers_of_a_local_copy(
    env: Settings, demo_builds: dict[str, Any], tmp_path: Path,
) -> None:
    from modelgate.cli.runs import run_evaluation_locally
    from modelgate.store.db import fetch_all

    ctx = Context.open(env)
    files = _layout(pd.read_parquet(demo_builds["1"].heldout_path).iloc[:1500], tmp_path / "copy")
    for name, path in files.items():
        ctx.store.put_file(f"held/{name}", path, content_type=PARQUET)
    sha_sql = "SELECT dataset_sha256 FROM evaluation_run WHERE evaluation_run_id = %s"
    # the dataset sha256 as it is defined: each file's path under the dataset and the sha256
    # of its bytes, in sorted order
    expected_sha = hashlib.sha256("".join(
        f"{name}\t{hashlib.sha256(path.read_bytes()).hexdigest()}\n" for name, path in sorted(files.items())
    ).encode()).hexdigest()

    local = run_evaluation_locally(demo_builds["1"].archive_path, tmp_path / "copy", None).payload
    (local_sha,), = fetch_all(ctx.db_url, sha_sql, (local["evaluation_run_id"],))
    remote = run_evaluation_locally(demo_builds["1"].archive_path, _s3(env, "held"), None).payload
    (remote_sha,), = fetch_all(ctx.db_url, sha_sql, (remote["evaluation_run_id"],))

    assert remote["rows_scored"] == local["rows_scored"] == 1500
    assert remote["metrics"] == local["metrics"] and remote["fairness"] == local["fairness"]
    assert remote["gate"] == local["gate"]
    assert remote_sha == local_sha == expected_sha
    pickles = ctx.store.list_keys(f"runs/evaluation/{safe_key_part(remote['run_key'])}/partitions/")
    assert len(pickles) == 3  # 300 files scored as 3 partitions


@pytest.mark.e2e  # one evaluation of the demo model, failing
def test_an_unreadable_member_of_an_s3_batch_is_named(
    env: Settings, demo_builds: dict[str, Any], tmp_path: Path,
) -> None:
    from modelgate.cli.runs import run_evaluation_locally
    from modelgate.pipelines.evaluation.held_out_files import HeldOutRefused
    from modelgate.store.db import fetch_all

    ctx = Context.open(env)
    files = _layout(pd.read_parquet(demo_builds["1"].heldout_path).iloc[:1500], tmp_path / "copy")
    files["dt=2/part-050.parquet"].write_bytes(b"PAR1 not parquet")
    for name, path in files.items():
        ctx.store.put_file(f"held/{name}", path, content_type=PARQUET)
    bad = _s3(env, "held/dt=2/part-050.parquet")

    with pytest.raises(HeldOutRefused, match="cannot read parquet file") as caught:  # at prepare
        run_evaluation_locally(demo_builds["1"].archive_path, _s3(env, "held"), None)

    assert repr(bad) in str(caught.value)
    (status, reason), = fetch_all(ctx.db_url, "SELECT status, failure_reason FROM evaluation_run")
    assert status == "failed" and bad in reason
