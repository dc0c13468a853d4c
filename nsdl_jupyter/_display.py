"""What reaches a page: every name, path and message that goes into HTML or SVG passes here.

`html_text` escapes markup and makes invisible characters visible, so a model whose names
hold `<script>` or a right-to-left override (U+202E) can neither run code nor disguise
itself in a widget, an SVG export or a static HTML export. `shown_path` keeps home folders
out of saved notebooks unless the user asks for them.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

# Unicode format characters (Cf: bidi controls, zero-width spaces and joiners, tag
# characters), C0/C1 controls but tab and newlines, line and paragraph separators,
# surrogates (invalid UTF-8 in a written page) and the invisible Hangul fillers used for
# spoofing. tests/test_display.py checks this against unicodedata.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891"
    "\u08e2\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\u3164"
    "\ud800-\udfff\ufeff\uffa0\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def neutralize(value: object) -> str:
    """`value` as text with every invisible or direction-changing character written out
    (`\\u202e`), so what a reader sees is what the name holds."""
    return _INVISIBLE.sub(_visible, str(value))


def html_text(value: object) -> str:
    """`value` ready for HTML or SVG text and for quoted attribute values: neutralised, then
    `& < > " '` escaped. Everything that puts a name, path or message into markup uses it."""
    return html.escape(neutralize(value), quote=True)


def shown_path(path: str | os.PathLike[str]) -> str:
    """A path as a notebook shows and saves it: relative to the working folder when inside
    it, `~/...` when inside the home folder, else as given (no user name, no home path)."""
    raw = Path(os.fspath(path)).expanduser()
    if not raw.is_absolute():
        return str(raw)
    for base, prefix in ((Path.cwd(), ""), (Path.home(), "~")):
        try:
            rest = raw.relative_to(base)
        except ValueError:
            continue
        if prefix:
            return str(Path(prefix) / rest)
        return str(rest) if rest.parts else "."
    return str(raw)
