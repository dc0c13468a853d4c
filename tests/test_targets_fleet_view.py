"""The ActivityPanel's Fleet tab (issue 27, item 4): the saved targets' GPU slots, driver,
CUDA, runtimes and cache size in one table, checked when Refresh is pressed and never when the
panel is built; a host with two GPUs (a stand-in nvidia-smi on its PATH) shows two slots."""

from __future__ import annotations

import os
from pathlib import Path

import onnx
import pytest

from nsdl_jupyter import examples
from nsdl_jupyter.targets import connections
from nsdl_jupyter.widgets import FleetView
from nsdl_jupyter.widgets.profile._activity_panel import ActivityPanel
from tests._nvidia_smi import fake_nvidia_smi
from tests._sshd import ssh_lab

pytestmark = pytest.mark.skipif(
    not Path("/usr/sbin/sshd").exists() or os.geteuid() != 0,
    reason="needs OpenSSH's sshd (bash scripts/setup.sh installs it) and root to run it",
)


def test_the_fleet_tab_checks_the_saved_targets_on_refresh_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NSDL_CONFIG_DIR", str(tmp_path / "config"))
    model = tmp_path / "small.onnx"
    onnx.save(examples.small_transformer(batch=1), model)
    path = fake_nvidia_smi(tmp_path / "gpu-bin", "550.54.15", "12.4")
    with ssh_lab(tmp_path / "lab", {"env": {"PATH": path}}) as lab:
        connections().add(lab.target(name="two-gpus"))
        panel = ActivityPanel(model)
        view = panel.fleet_view
        assert [panel.tabs.get_title(i) for i in range(3)] == ["Profile", "Sweep", "Fleet"]
        panel.tabs.selected_index = 2
        assert isinstance(view, FleetView) and view.table.value == ""
        assert view.frame() is None
        assert not (tmp_path / "config" / "fleet.json").exists()  # nothing checked yet

        view.refresh_button.click()
        view.wait(120)
    frame = view.frame()
    assert list(frame["slot"]) == [0, 1]
    assert set(frame["name"]) == {"two-gpus"} and set(frame["driver"]) == {"550.54.15"}
    assert set(frame["gpu"]) == {"NVIDIA A100-SXM4-80GB"} and set(frame["cuda"]) == {"12.4"}
    assert (frame["cache_bytes"] > 0).all() and frame["error"].isna().all()
    assert "<th>cuda</th>" in view.table.value and "<td>12.4</td>" in view.table.value
    assert "NVIDIA A100-SXM4-80GB" in view.table.value and "2 slot(s)" in view.status.value
    assert not view.refresh_button.disabled
