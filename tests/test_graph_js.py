"""The TypeScript side of the graph view: `npm test` (vitest) in js/, so CI covers it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

JS = Path(__file__).resolve().parent.parent / "js"


@pytest.mark.slow
def test_npm_test_passes() -> None:
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: apt-get install -y nodejs npm")
    if not (JS / "node_modules" / ".bin" / "vitest").exists():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=JS, check=True, timeout=600)
    result = subprocess.run(
        [npm, "test"], cwd=JS, capture_output=True, text=True, timeout=600, check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "passed" in output and "failed" not in output.lower().replace("0 failed", "")
