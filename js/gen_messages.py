"""Writes js/src/messages.ts, the TypeScript types of the widget messages declared in
nsdl_jupyter/widgets/_messages.py (tests/test_widget_protocol.py checks it is current)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from nsdl_jupyter.widgets._messages import generated_typescript  # noqa: E402

(HERE / "src" / "messages.ts").write_text(generated_typescript())
