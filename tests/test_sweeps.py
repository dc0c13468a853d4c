"""nj.sweep on a real Dask cluster with real onnxruntime runs: the grid, the model variants,
the table and its views, a failing configuration's row, and the cache."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from _sweep_models import missing_backend, tiny_export

import nsdl_jupyter as nj
from nsdl_jupyter.sweeps import SweepResult, SweepSettingsError, expand_grid, sweep
from nsdl_jupyter.transforms import TransformError, fix_dims

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client() -> Iterator[distributed.Client]:
    """A real LocalCluster of two worker processes, shared by this module's sweeps."""
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
        silence_logs=logging.ERROR,
    )  # fmt: skip
    with distributed.Client(cluster) as dask_client:
        yield dask_client
    cluster.close()


@pytest.fixture
def model_path(tmp_path: Path) -> Path:
    path = tmp_path / "bert.onnx"
    onnx.save(tiny_export(), path)
    return path


# ---- the grid -------------------------------------------------------------------------------


def test_a_grid_dict_expands_to_every_combination_in_order() -> None:
    configs, axes = expand_grid({"batch": [1, 8], "precision": ["fp32", "fp16"], "iterations": [5]})
    assert axes == ["batch", "precision", "iterations"]
    assert [(c["batch"], c["precision"]) for c in configs] == [
        (1, "fp32"), (1, "fp16"), (8, "fp32"), (8, "fp16"),
    ]  # fmt: skip
    assert all(c["iterations"] == 5 and c["backend"] == "ort-cpu" for c in configs)


def test_a_grid_list_keeps_its_configurations() -> None:
    configs, axes = expand_grid([{"batch": 2}, {"backend": "tensorrt", "optimization_level": 5}])
    assert axes == ["batch", "backend", "optimization_level"]
    assert configs[0]["batch"] == 2 and configs[0]["backend"] == "ort-cpu"
    assert configs[1]["batch"] is None and configs[1]["optimization_level"] == 5


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ({"bacth": [1]}, "unknown setting"),
        ({"batch": [0]}, "batch=0"),
        ({"precision": ["int4"]}, "precision='int4'"),
        ({"backend": ["ort-gpu"]}, "backend='ort-gpu'"),
        ({"batch": 4}, "give a list"),
        ({"batch": []}, "empty"),
        ([{"batch": 1}, {"batch": 1}], "the same"),
        ("batch", "give a dict"),
    ],
)
def test_a_wrong_grid_is_refused_with_the_fix(grid: object, message: str) -> None:
    with pytest.raises(SweepSettingsError, match=message):
        expand_grid(grid)  # type: ignore[arg-type]


# ---- the variants ---------------------------------------------------------------------------


def test_fix_dims_makes_the_batch_axis_a_number(tmp_path: Path, model_path: Path) -> None:
    out = tmp_path / "b4.onnx"
    status = fix_dims(model_path, out, batch=4)
    assert status.ok
    graph = onnx.load(out).graph
    for value in [*graph.input, *graph.output]:
        first = value.type.tensor_type.shape.dim[0]
        assert first.dim_value == 4 and not first.dim_param, value.name
    with pytest.raises(TransformError, match="no free dimension named"):
        fix_dims(model_path, tmp_path / "x.onnx", {"seq_len": 3})
    assert not (tmp_path / "x.onnx").exists()


def test_batch_and_precision_variants_really_change_the_model(
    tmp_path: Path, model_path: Path
) -> None:
    from nsdl_jupyter.sweeps._variants import make_variant, source_model

    source = source_model(model_path, tmp_path)
    assert source.batch_dims == ("batch_size",)
    assert make_variant(source, None, "fp32", tmp_path) == model_path
    b8 = make_variant(source, 8, "fp32", tmp_path)
    half = make_variant(source, 8, "fp16", tmp_path)
    assert len({model_path.read_bytes(), b8.read_bytes(), half.read_bytes()}) == 3
    assert onnx.load(b8).graph.input[0].type.tensor_type.shape.dim[0].dim_value == 8
    dtypes = {init.data_type for init in onnx.load(half).graph.initializer}
    assert onnx.TensorProto.FLOAT16 in dtypes
    assert onnx.TensorProto.FLOAT not in dtypes
    stamp = half.stat().st_mtime_ns
    assert make_variant(source, 8, "fp16", tmp_path) == half  # made once, by content
    assert half.stat().st_mtime_ns == stamp


def test_a_batch_grid_on_a_static_model_is_refused_before_anything_runs(tmp_path: Path) -> None:
    static = tmp_path / "static.onnx"
    onnx.save(nj.examples.small_transformer(1, hidden=32, heads=2, seq=8, batch=1), static)
    with pytest.raises(SweepSettingsError, match="no free first input dimension"):
        sweep(static, {"batch": [1, 2]}, cache_dir=tmp_path / "cache", progress=False)
    assert not (tmp_path / "cache" / "runs").exists()


# ---- on Dask --------------------------------------------------------------------------------


@pytest.mark.slow  # the first sweep on the cluster: its workers import the package
def test_a_sweep_gives_one_row_per_configuration_and_a_failing_one_its_error(
    tmp_path: Path, model_path: Path, client: distributed.Client
) -> None:
    broken = missing_backend()
    if broken is None:
        pytest.skip("this machine runs every backend: no configuration fails here")
    grid = [
        {"batch": 1, "iterations": 3},
        {"batch": 4, "iterations": 3},
        {"batch": 1, "iterations": 3, "optimization_level": 0},
        {"batch": 1, "iterations": 3, "backend": broken},
    ]
    result = sweep(model_path, grid, client=client, cache_dir=tmp_path / "c", progress=False)
    frame = result.frame
    assert len(frame) == 4 and result.ran == 4 and result.from_cache == 0
    assert list(frame["status"]) == ["ok", "ok", "ok", "error"]
    assert frame.loc[3, "error"]  # the runtime's own words
    assert np.isnan(frame.loc[3, "p50_ms"])
    ok = frame.iloc[:3]
    assert (ok["p50_ms"] > 0).all() and (ok["p99_ms"] >= ok["p50_ms"]).all()
    assert ok.loc[1, "throughput_per_s"] == pytest.approx(4000 / ok.loc[1, "mean_ms"])
    assert (frame["onnxruntime_version"] != "").all() and (frame["cpu"] != "").all()
    assert (ok["attempts"] == 1).all()
    # each row's report: the model's own nodes, at the row's batch size
    report = result.report({"batch": 4})
    assert any(name.startswith("/encoder/layer.0/") for name in report.layers["name"])
    assert "[4," in " ".join(report.layers["input_shapes"])
    assert result.report(2).metadata["graph_optimization"] is False
    with pytest.raises(SweepSettingsError, match="has no report"):
        result.report(3)
    # the views
    assert result.best("p50_ms")["status"] == "ok"
    assert result.best("throughput_per_s", {"batch": 1})["batch"] == 1
    compared = result.compare(0, 1)
    assert {"delta_ms", "speedup"} <= set(compared.columns)
    figure = result.plot("p50_ms", x="batch")
    assert len(figure.data) >= 1
    heat = result.heatmap(top=10)
    assert heat.data[0].z.shape == (10, 3)


def test_a_second_sweep_runs_only_what_changed(
    tmp_path: Path, model_path: Path, client: distributed.Client
) -> None:
    cache = tmp_path / "cache"
    grid = {"batch": [1, 2], "iterations": [2]}
    first = sweep(model_path, grid, client=client, cache_dir=cache, progress=False)
    assert first.ran == 2 and (first.frame["status"] == "ok").all()
    rows = sorted((cache / "runs").glob("*.json"))
    assert len(rows) == 4  # a row and a report per run
    with distributed.get_task_stream(client) as stream:
        again = sweep(model_path, grid, client=client, cache_dir=cache, progress=False)
    assert again.ran == 0 and again.from_cache == 2 and again.frame["cached"].all()
    assert not [t for t in stream.data if str(t.get("key", "")).startswith("nsdl-sweep")]
    assert list(again.frame["p50_ms"]) == list(first.frame["p50_ms"])
    # a third value of the axis: one new run, the two others from the cache (a kernel restart
    # in between changes nothing: the rows live on disk)
    more = sweep(model_path, {"batch": [1, 2, 3], "iterations": [2]}, client=client,
                 cache_dir=cache, progress=False)  # fmt: skip
    assert more.ran == 1 and more.from_cache == 2
    assert list(more.frame["cached"]) == [True, True, False]


def test_a_result_is_a_tidy_frame_with_its_columns(
    tmp_path: Path, model_path: Path, client: distributed.Client
) -> None:
    result = sweep(model_path, {"iterations": [2]}, client=client, cache_dir=tmp_path,
                   progress=False)  # fmt: skip
    assert isinstance(result, SweepResult) and len(result) == 1
    for column in ("batch", "precision", "backend", "target", "gpu_name", "driver", "p50_ms",
                   "p90_ms", "p99_ms", "throughput_per_s", "gpu_busy_ms", "memory_mb",
                   "build_s", "status", "error", "attempts", "cached"):  # fmt: skip
        assert column in result.frame.columns, column
    assert "1 ok" in repr(result)


def test_progress_outside_jupyter_is_a_text_bar(capsys: pytest.CaptureFixture[str]) -> None:
    from nsdl_jupyter.sweeps import SweepProgress
    from nsdl_jupyter.sweeps._progress import ProgressDisplay

    display = ProgressDisplay(4)
    display.update(SweepProgress(4, done=1, running=2, failed=0, cached=1, eta_s=3.0))
    display.close(SweepProgress(4, done=4, failed=1, cached=1))
    err = capsys.readouterr().err
    assert "1/4" in err and "running=2" in err
    assert "4/4" in err and "failed=1" in err
    assert SweepProgress(4, 1, 2, 0, 1, 3.0).text() == (
        "1/4 done (1 cached), 2 running, 0 failed, ETA 3 s"
    )


def test_the_sweep_panel_runs_the_grid_its_form_says(
    tmp_path: Path, model_path: Path, client: distributed.Client
) -> None:
    from nsdl_jupyter.widgets import SweepPanel

    panel = SweepPanel(model_path, client=client, cache_dir=tmp_path)
    panel.batch.value = "1, two"
    assert panel.run() is None and "two" in panel.status.value  # said, nothing started
    panel.batch.value = "1, 2"
    panel.iterations.value = 2
    assert panel.grid() == {
        "batch": [1, 2], "precision": ["fp32"], "backend": ["ort-cpu"], "iterations": [2],
    }  # fmt: skip
    assert panel.run() is not None
    result = panel.wait(120)
    assert result is not None and list(result.frame["status"]) == ["ok", "ok"]
    assert "2/2 done" in panel.status.value and panel.bar.value == 2
    assert panel.table.value.count("</tr>") == 3  # header + one row per configuration


def test_variants_of_a_model_with_external_data_are_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ext.onnx"
    onnx.save(tiny_export(), path, save_as_external_data=True, size_threshold=0,
              location="ext.onnx.data")  # fmt: skip
    with pytest.raises(SweepSettingsError, match="external data"):
        sweep(path, {"batch": [2]}, cache_dir=tmp_path / "cache", progress=False)
    assert not (tmp_path / "cache" / "runs").exists()
