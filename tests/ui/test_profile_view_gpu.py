"""ProfileView of a GPU-timed report (the H200 ResNet-50 fixture) in a real JupyterLab +
headless Chromium: kernel bars with NVML panels, the GPU/host switch and the kernel table of
a selected row reach Python and back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.ui, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
REPORT = REPO / "tests" / "fixtures" / "gpu_truth" / "resnet50_b8_cuda_report.json"
VIEW = ".nsdl-profile-view"

SETUP = f"""
import nsdl_jupyter as nj
from nsdl_jupyter.profiling import ProfileReport
report = ProfileReport.load({str(REPORT)!r})
view = nj.ProfileView(report)
view
"""


def test_gpu_profile_view_switch_and_kernel_table(notebook: Any) -> None:
    nb = notebook([SETUP,
                   "print('TIMES=' + view.times, 'SORT=' + view.sort_by)",
                   "print('SEL=' + view.selected, 'OPEN=%s' % view._kernel_box.selected_index)"],
                  height=1400)  # fmt: skip
    nb.run_cell(0)
    nb.wait_for(f"{VIEW} .js-plotly-plot .main-svg")
    assert nb.error_outputs() == []
    timeline = nb.page.locator(f"{VIEW} .js-plotly-plot").first
    # every kernel twice (stream lane + layer row): 236 kernels of one inference
    nb.page.wait_for_function(
        "() => document.querySelector('.nsdl-profile-view .js-plotly-plot')"
        ".querySelectorAll('.barlayer .point').length >= 472",
        timeout=60_000,
    )
    assert timeline.locator(".scatterlayer .trace").count() >= 4  # NVML panels below
    assert "GPU kernels per layer" in (timeline.locator(".gtitle").first.text_content() or "")
    summary = nb.page.locator(f"{VIEW}").first.inner_text()
    assert "GPU busy / idle" in summary and "SM clock locked at 1980 MHz" in summary
    nb.screenshot("gpu", VIEW)

    # the host switch reaches Python, the timeline is redrawn with host bars
    nb.page.locator(f"{VIEW} .nsdl-profile-times button", has_text="host time").first.click()
    nb.page.wait_for_function(
        "() => [...document.querySelectorAll('.nsdl-profile-view .gtitle')]"
        ".some(t => t.textContent.includes('host time per layer'))",
        timeout=60_000,
    )
    assert "TIMES=host SORT=mean_ms" in nb.run_cell(1)
    nb.page.locator(f"{VIEW} .nsdl-profile-times button", has_text="GPU time").first.click()
    nb.page.wait_for_timeout(500)
    assert "TIMES=gpu SORT=gpu_ms" in nb.run_cell(1)

    # a table row opens the kernel table of that layer
    select = nb.page.locator(f"{VIEW} .nsdl-profile-table select").first
    select.select_option(index=1)  # the slowest compute layer: /conv1/Conv
    nb.wait_for(f"{VIEW} table.nsdl-profile-kernels")
    out = nb.run_cell(2)
    assert "SEL=/conv1/Conv OPEN=0" in out
    kernels = nb.page.locator(f"{VIEW} table.nsdl-profile-kernels").first
    kernels.scroll_into_view_if_needed()
    assert kernels.locator("tr").count() == 1 + 5  # header + the layer's 5 kernel kinds
    nb.screenshot("kernels", VIEW)
