"""The ActivityPanel's Sweep tab, driven through the widget classes: the tab is built when
first shown, its targets are this machine and the saved connections, Run sweeps the grid the
form says on the embedded cluster, the status follows it and the table says which machine ran
each row."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import onnx
import pytest
from _sweep_models import tiny_export

from nsdl_jupyter.sweeps import close_sweep_cluster
from nsdl_jupyter.targets import LocalTarget, SshTarget, connections
from nsdl_jupyter.widgets import SweepPanel
from nsdl_jupyter.widgets.profile._activity_panel import ActivityPanel
from nsdl_jupyter.widgets.profile._sweep_panel import HERE

pytest.importorskip("distributed")


@pytest.fixture
def model_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("NSDL_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("NSDL_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "bert.onnx"
    onnx.save(tiny_export(), path)
    yield path
    close_sweep_cluster()


def test_the_sweep_tab_is_built_when_first_shown_with_the_saved_targets(
    model_path: Path,
) -> None:
    connections().add(SshTarget("127.0.0.1", "root", 22, ssh_config=False, name="gpu-box"))
    panel = ActivityPanel(model_path)
    assert [panel.tabs.get_title(i) for i in range(2)] == ["Profile", "Sweep"]
    assert panel.tabs.selected_index == 0 and panel.tabs.children[1].children == ()
    panel.tabs.selected_index = 1
    (sweep,) = panel.tabs.children[1].children
    assert isinstance(sweep, SweepPanel) and sweep is panel.sweep_panel
    assert sweep.targets.options == (HERE, "gpu-box")
    sweep.targets.value = (HERE,)
    assert sweep.chosen_targets() is None  # this machine alone: the embedded cluster
    sweep.targets.value = (HERE, "gpu-box")
    chosen = sweep.chosen_targets()  # this machine stays in the sweep beside the saved one
    assert chosen is not None and isinstance(chosen[0], LocalTarget) and chosen[1] == "gpu-box"


@pytest.mark.slow  # real onnxruntime runs on the embedded Dask cluster
def test_the_sweep_tab_runs_watches_and_shows_the_table_with_each_machine(
    model_path: Path,
) -> None:
    panel = ActivityPanel(model_path)
    sweep = panel.sweep_panel
    sweep.batch.value = "1, 2"
    sweep.iterations.value = 2
    assert sweep.run() is not None
    result = sweep.wait(300)
    assert result is not None and list(result.frame["status"]) == ["ok", "ok"]
    assert "2/2 done" in sweep.status.value and sweep.bar.value == 2
    table = sweep.table.value
    assert table.count("</tr>") == 3  # header + one row per configuration
    for column in ("target", "gpu_name", "driver", "onnxruntime_version", "p50_ms"):
        assert f"<th>{column}</th>" in table, column
    assert str(result.frame.loc[0, "onnxruntime_version"]) in table
