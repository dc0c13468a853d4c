"""A failed run as the Profile pane shows it: one readable sentence, the whole text (runner
stderr, traceback) behind a "details" toggle, terminal colour codes removed."""

from __future__ import annotations

import re

from nsdl_jupyter._display import html_text

MAX_SENTENCE = 300  # characters; the rest is in the details

# ECMA-48 control sequences (onnxruntime colours its log lines: "\x1b[1;31m ... \x1b[m")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]")
_ORT_NODE = re.compile(
    r"while running (?P<op>[\w.:]+) node\. Name:'(?P<node>[^']*)' Status Message: (?P<why>.*)"
)
_SOURCE_LINE = re.compile(r"^\S+\.(?:h|cc|cpp|cu):\d+\s+")
_CPP_SIGNATURE = re.compile(r"^[\w:<>~]+\(.*?\)(?:\s*const)?\s+")
_FAILED_CHECK = re.compile(r"^.*? was false\.\s*")


def plain_text(text: str) -> str:
    """`text` without terminal escape sequences."""
    return _ANSI.sub("", text)


def failure_sentence(error: BaseException) -> str:
    """What went wrong, in one line: onnxruntime's node failures as "onnxruntime failed in
    Reshape node '/Reshape': <its reason>", anything else as the message's first line."""
    text = plain_text(str(error)).strip()
    first = text.split("\n", 1)[0].strip() or type(error).__name__
    found = _ORT_NODE.search(first)
    if found:
        why = _SOURCE_LINE.sub("", found["why"].strip())
        why = _CPP_SIGNATURE.sub("", why)
        why = _FAILED_CHECK.sub("", why) or why
        first = f"onnxruntime failed in {found['op']} node {found['node']!r}: {why}"
    if len(first) > MAX_SENTENCE:
        first = first[: MAX_SENTENCE - 1].rstrip() + "…"
    return first


def failure_html(error: BaseException) -> str:
    """The pane's message for `error`: the sentence, then the full text behind "details"."""
    stderr = str(getattr(error, "stderr", "") or "")
    text = (
        str(error) if not stderr or stderr in str(error) else f"{error}\n--- stderr ---\n{stderr}"
    )
    details = plain_text(f"{type(error).__name__}: {text}")
    return (
        f"<div class='nsdl-failure'><b>Failed:</b> {html_text(failure_sentence(error))}</div>"
        "<details class='nsdl-failure-details'><summary>details</summary>"
        f"<pre style='max-height:240px;overflow:auto;white-space:pre-wrap'>{html_text(details)}"
        "</pre></details>"
    )
