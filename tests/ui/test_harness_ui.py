"""The UI harness itself: browser tests mix with the other tests on one pytest worker."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytestmark = [pytest.mark.ui]


async def _answer() -> int:
    await asyncio.sleep(0)
    return 42


def test_parked_playwright_leaves_no_running_loop_and_comes_back(
    browser: Any, chromium: Any
) -> None:
    """After a browser test the next test of the process may call asyncio.run() (the
    type-check runner does): Playwright's loop, marked running while it is started, is
    parked in between and put back for the next browser test."""
    pending = _answer()
    with pytest.raises(RuntimeError, match="cannot be called from a running event loop"):
        asyncio.run(pending)  # what a test after a browser test met before the parking
    pending.close()
    chromium.park()
    assert asyncio.run(_answer()) == 42
    again = chromium.get()
    assert again is browser
    page = again.new_page()
    try:
        page.set_content("<p id=x>ok</p>")
        assert page.inner_text("#x") == "ok"
    finally:
        page.close()
