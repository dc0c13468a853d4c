"""The kernel end of the one request/answer protocol between a widget and its browser views.

Every custom message is an envelope ``{"kind": "nsdl.request" | "nsdl.answer" | "nsdl.event",
"id", "name", "payload" | "ok", "value" | "error"}``. Request ids are unique per sender (a
random prefix and a counter), an answer carries the id of its request, and only the sender
of that request resolves it: the comm delivers every kernel message to every view of a
widget. Payloads are checked against the kinds declared in `nsdl_jupyter.widgets._messages`
before any handler runs; a handler's exception goes back as a typed error. The browser end is
js/src/protocol.ts.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import secrets
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from nsdl_jupyter._errors import ArgumentError, NsdlError
from nsdl_jupyter.widgets._errors import WidgetError
from nsdl_jupyter.widgets._main_shell import route_to_main_shell

REQUEST = "nsdl.request"
ANSWER = "nsdl.answer"
EVENT = "nsdl.event"

ErrorCode = Literal["unknown_request", "invalid_payload", "handler_error"]
Direction = Literal["kernel", "browser"]
_DIRECTIONS: tuple[Direction, ...] = ("kernel", "browser")


class WidgetRequestError(NsdlError, RuntimeError):
    """A browser view answered one of the kernel's requests with an error."""


class InvalidPayloadError(NsdlError, ValueError):
    """A message's payload does not match the kind declared for it."""


@dataclass(frozen=True)
class Kind:
    """One message kind: its payload (a TypedDict), its answer (a TypedDict, or None for an
    event, which is never answered) and who sends it."""

    payload: type
    answer: type | None
    to: Direction


@dataclass(frozen=True)
class Catalog:
    """The message kinds of one widget; `name` prefixes its TypeScript interfaces."""

    name: str
    kinds: Mapping[str, Kind]

    def sent_to(self, to: Direction) -> dict[str, Kind]:
        return {name: kind for name, kind in self.kinds.items() if kind.to == to}


class _Comm(Protocol):
    def send(self, content: dict[str, Any], buffers: list[bytes] | None = None) -> None: ...

    def on_msg(self, callback: Callable[[Any, Any, list[bytes]], None]) -> None: ...


Reply = tuple[dict[str, Any], list[bytes]]
Handler = Callable[[Any], Any]


class Endpoint:
    """Dispatches one widget's requests and events to its handlers and answers each request;
    sends the kernel's own requests and events to the views."""

    def __init__(self, widget: _Comm, catalog: Catalog, handlers: Mapping[str, Handler]) -> None:
        expected = set(catalog.sent_to("kernel"))
        if set(handlers) != expected:
            raise WidgetError(
                f"{catalog.name}: handlers for {sorted(handlers)} but the kinds sent to the "
                f"kernel are {sorted(expected)}"
            )
        self._widget = widget
        self._catalog = catalog
        self._handlers = dict(handlers)
        self._prefix = f"kernel-{secrets.token_hex(4)}"
        self._count = itertools.count(1)
        self._waiting: dict[str, tuple[str, concurrent.futures.Future[Reply]]] = {}
        widget.on_msg(self.receive)
        route_to_main_shell(widget, keep=_is_answer)

    # ------------------------------------------------------------------ kernel -> browser
    def request(self, name: str, payload: Mapping[str, Any]) -> concurrent.futures.Future[Reply]:
        """Send a request to the views; the Future holds the first answer (value, buffers).

        No timer: a kernel reads answers only between cells, so a timeout here would fail
        requests the browser had answered in time.
        """
        kind = self._kind(name, "browser")
        if kind.answer is None:
            raise WidgetError(f"{self._catalog.name}: {name!r} is an event: use notify()")
        check(payload, kind.payload, name)
        request_id = f"{self._prefix}:{next(self._count)}"
        future: concurrent.futures.Future[Reply] = concurrent.futures.Future()
        self._waiting[request_id] = (name, future)
        self._widget.send({"kind": REQUEST, "id": request_id, "name": name, "payload": payload})
        return future

    def notify(self, name: str, payload: Mapping[str, Any]) -> None:
        """Send an event to every view (no answer)."""
        kind = self._kind(name, "browser")
        if kind.answer is not None:
            raise WidgetError(f"{self._catalog.name}: {name!r} is a request: use request()")
        check(payload, kind.payload, name)
        self._widget.send({"kind": EVENT, "name": name, "payload": payload})

    def _kind(self, name: str, to: Direction) -> Kind:
        kind = self._catalog.sent_to(to).get(name)
        if kind is None:
            raise WidgetError(f"{self._catalog.name} declares no message {name!r} to the {to}")
        return kind

    # ------------------------------------------------------------------ browser -> kernel
    def receive(self, _widget: Any, content: Any, buffers: list[bytes]) -> None:
        """The widget's `on_msg` callback."""
        if not isinstance(content, dict):
            return
        kind = content.get("kind")
        if kind == ANSWER:
            self._resolve(content, buffers)
        elif kind in (REQUEST, EVENT):
            self._dispatch(content, answered=kind == REQUEST)

    def _dispatch(self, content: dict[str, Any], *, answered: bool) -> None:
        name = str(content.get("name"))
        request_id = content.get("id")
        declared = self._catalog.sent_to("kernel").get(name)
        if declared is None or (declared.answer is not None) != answered:
            if answered:
                self._error(
                    request_id, "unknown_request", "LookupError", f"unknown request {name!r}"
                )
            return
        payload = content.get("payload", {})
        try:
            check(payload, declared.payload, name)
        except InvalidPayloadError as error:
            if answered:
                self._error(request_id, "invalid_payload", type(error).__name__, str(error))
            return
        if not answered:
            self._handlers[name](payload)
            return
        try:
            value = self._handlers[name](payload)
        except Exception as error:  # answered to the view that asked, which shows it
            self._error(request_id, "handler_error", type(error).__name__, str(error))
            return
        assert declared.answer is not None
        check(value, declared.answer, f"answer to {name}")
        self._widget.send({"kind": ANSWER, "id": request_id, "ok": True, "value": value})

    def _error(self, request_id: Any, code: ErrorCode, error_type: str, message: str) -> None:
        error = {"code": code, "type": error_type, "message": message}
        self._widget.send({"kind": ANSWER, "id": request_id, "ok": False, "error": error})

    def _resolve(self, content: dict[str, Any], buffers: list[bytes]) -> None:
        # several views may answer one request: the first answer wins, the others find no entry
        entry = self._waiting.pop(str(content.get("id")), None)
        if entry is None:
            return
        name, future = entry
        if future.done():
            return
        if not content.get("ok"):
            error = content.get("error") or {}
            message = error.get("message") if isinstance(error, dict) else str(error)
            future.set_exception(WidgetRequestError(f"the browser could not {name}: {message}"))
            return
        value = content.get("value", {})
        declared = self._catalog.kinds[name].answer
        assert declared is not None
        try:
            check(value, declared, f"answer to {name}")
        except InvalidPayloadError as error:
            future.set_exception(error)
            return
        future.set_result((value, [bytes(b) for b in buffers]))


def _is_answer(data: Any) -> bool:
    """Whether a comm message's data is one of our answers (to a request the kernel sent)."""
    content = data.get("content") if isinstance(data, dict) else None
    return isinstance(content, dict) and content.get("kind") == ANSWER


# ---------------------------------------------------------------------- payload checks
def check(value: Any, annotation: Any, where: str) -> None:
    """Raise InvalidPayloadError unless `value` (decoded JSON) matches `annotation`."""
    problem = _mismatch(value, annotation, "")
    if problem is not None:
        raise InvalidPayloadError(f"{where}: {problem}")


def _mismatch(value: Any, annotation: Any, at: str) -> str | None:
    origin = typing.get_origin(annotation)
    if typing.is_typeddict(annotation):
        if not isinstance(value, dict):
            return f"{at or 'payload'} should be an object, not {type(value).__name__}"
        hints = typing.get_type_hints(annotation)
        extra = sorted(set(value) - set(hints))
        if extra:
            return f"unexpected field {at}{extra[0]!r}; the fields are {sorted(hints)}"
        for key, hint in hints.items():
            if key not in value:
                return f"missing field {at}{key!r}"
            problem = _mismatch(value[key], hint, f"{at}{key}.")
            if problem is not None:
                return problem
        return None
    if origin is Literal:
        allowed = typing.get_args(annotation)
        return None if value in allowed else f"{at.rstrip('.')} is {value!r}, not one of {allowed}"
    if origin in (typing.Union, types.UnionType):
        problems = [_mismatch(value, arg, at) for arg in typing.get_args(annotation)]
        return None if None in problems else problems[0]
    if origin is list:
        if not isinstance(value, list):
            return f"{at.rstrip('.')} should be a list, not {type(value).__name__}"
        (item,) = typing.get_args(annotation)
        for index, element in enumerate(value):
            problem = _mismatch(element, item, f"{at.rstrip('.')}[{index}].")
            if problem is not None:
                return problem
        return None
    expected = _SCALARS.get(annotation)
    if expected is None:
        raise ArgumentError(f"message field type {annotation!r} is not supported by the protocol")
    if isinstance(value, bool) and annotation is not bool:
        return f"{at.rstrip('.')} should be {_TS[annotation]}, not a boolean"
    if not isinstance(value, expected):
        return f"{at.rstrip('.')} should be {_TS[annotation]}, not {type(value).__name__}"
    return None


_SCALARS: dict[Any, tuple[type, ...]] = {
    int: (int,),
    float: (int, float),
    str: (str,),
    bool: (bool,),
    type(None): (type(None),),
}
_TS: dict[Any, str] = {int: "number", float: "number", str: "string", bool: "boolean"}
_TS[type(None)] = "null"


# ---------------------------------------------------------------------- TypeScript
def typescript(catalogs: tuple[Catalog, ...], source: str, command: str) -> str:
    """The TypeScript declarations of `catalogs`, declared in `source` and written by
    `command`, so that the message kinds are written once. A payload or answer is written
    inline; a TypedDict nested in one becomes an interface of its own, named as in Python."""
    named: dict[str, type] = {}
    lines: list[str] = []
    for catalog in catalogs:
        for to in _DIRECTIONS:
            kinds = catalog.sent_to(to)
            if not kinds:
                continue
            lines.append(f"export interface {catalog.name}To{to.capitalize()} {{")
            for name, kind in kinds.items():
                lines += [
                    f"  {name}: {{",
                    _ts_field("payload", kind.payload, named),
                    _ts_field("answer", kind.answer, named),
                    "  };",
                ]
            lines.append("}")
            lines.append("")
    head = [
        f"// Generated from {source} by `{command}`.",
        "// Do not edit: tests/test_widget_protocol.py fails when this file is not current.",
        "",
    ]
    done: set[str] = set()
    while len(done) < len(named):  # an interface may name further ones
        for name, annotation in list(named.items()):
            if name in done:
                continue
            done.add(name)
            fields = typing.get_type_hints(annotation).items()
            head.append(f"export interface {name} {{")
            head += [f"  {k}: {_ts_type(v, named, nested=True)};" for k, v in fields]
            head += ["}", ""]
    return "\n".join(head + lines)


def _ts_field(name: str, annotation: type | None, named: dict[str, type]) -> str:
    """`    name: {...};`, one field a line when one line would pass Biome's 100 columns."""
    if annotation is None:
        return f"    {name}: null;"
    line = f"    {name}: {_ts_type(annotation, named)};"
    if len(line) <= 100:
        return line
    fields = [
        f"      {k}: {_ts_type(v, named, nested=True)};"
        for k, v in typing.get_type_hints(annotation).items()
    ]
    return "\n".join([f"    {name}: {{", *fields, "    };"])


def _ts_type(annotation: Any, named: dict[str, type], *, nested: bool = False) -> str:
    origin = typing.get_origin(annotation)
    if typing.is_typeddict(annotation):
        if nested:
            known = named.setdefault(annotation.__name__, annotation)
            if known is not annotation:
                raise WidgetError(f"two message types are named {annotation.__name__!r}")
            return str(annotation.__name__)
        hints = typing.get_type_hints(annotation)
        if not hints:
            return "Record<string, never>"
        inner = "; ".join(f"{k}: {_ts_type(v, named, nested=True)}" for k, v in hints.items())
        return "{ " + inner + " }"
    if origin is Literal:
        return " | ".join(
            f'"{a}"' if isinstance(a, str) else str(a) for a in typing.get_args(annotation)
        )
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_ts_type(a, named, nested=nested) for a in typing.get_args(annotation))
    if origin is list:
        (item,) = typing.get_args(annotation)
        inner = _ts_type(item, named, nested=True)
        return f"({inner})[]" if " " in inner else f"{inner}[]"
    return _TS[annotation]
