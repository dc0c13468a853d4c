"""The fleet (issue 27, item 4): `nj.fleet()` shows each saved target's GPUs,
driver, runtimes and cache size, kept between calls and refreshed on demand."""

from __future__ import annotations

import json
from pathlib import Path

import onnxruntime

import nsdl_jupyter as nj
from nsdl_jupyter.profiling import profile_ort
from nsdl_jupyter.targets import connections
from tests._sshd import Sshd, free_port
from tests.test_targets_ssh import small_model
from tests.test_targets_ssh_stream import servers, target_of

__all__ = ["servers"]  # the sshd fixture, shared


def test_the_fleet_lists_saved_targets_and_refreshes_on_demand(
    servers: tuple[Path, Sshd, Sshd], tmp_path: Path
) -> None:
    key, with_sftp, without = servers
    saved = connections(tmp_path / "config" / "connections.json")
    for folder in "abc":
        (tmp_path / folder).mkdir()
    lab = target_of(key, with_sftp, tmp_path / "a")
    saved.add(lab)
    saved.add(target_of(key, without, tmp_path / "b", name="no-sftp"))
    off = target_of(key, with_sftp, tmp_path / "c", name="off", port=free_port())
    saved.add(off)
    with lab:
        profile_ort(small_model(tmp_path / "m.onnx"), target=lab, iterations=2)
    frame = nj.fleet(saved).to_frame()
    rows = {row["name"]: row for row in frame.to_dict("records")}
    assert list(rows) == [lab.name, "no-sftp", "off"]
    assert onnxruntime.__version__ in rows[lab.name]["runtimes"]
    assert rows[lab.name]["cache_bytes"] > rows["no-sftp"]["cache_bytes"] > 0
    assert rows["off"]["error"] and "off" not in rows["off"]["runtimes"]
    stored = json.loads((tmp_path / "config" / "fleet.json").read_text())

    again = nj.fleet(saved)  # from fleet.json: nothing is checked again
    assert [r.checked for r in again.rows] == [s[0]["checked"] for s in stored.values()]
    fresh = nj.fleet(saved, refresh=["no-sftp"])
    checked = {r.name: r.checked for r in fresh.rows}
    assert checked["no-sftp"] > stored["no-sftp"][0]["checked"]
    assert checked[lab.name] == stored[lab.name][0]["checked"]
    assert "<table>" in fresh._repr_html_()
