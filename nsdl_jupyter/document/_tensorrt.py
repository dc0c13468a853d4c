"""TensorRT properties of a model: optimization profiles and layer precision constraints.

They live in the companion file (`"tensorrt"` entry), never in the ONNX model, and every
change is an undoable command of the document. `doc.tensorrt` is the API; the companion
reader keeps only well-formed entries, and properties naming inputs or nodes the model does not
have are dropped on open with a CompanionWarning. Renaming a node carries its constraint,
removing it drops the constraint (undo restores both).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, get_args

import onnx_ir as ir

from nsdl_jupyter._errors import list_argument
from nsdl_jupyter._trt_shapes import check_min_opt_max, size_list
from nsdl_jupyter.document import edits as e
from nsdl_jupyter.document._errors import DocumentError
from nsdl_jupyter.document._events import ChangeEvent

if TYPE_CHECKING:
    from nsdl_jupyter.document._document import ModelDocument

LayerPrecision = Literal[
    "fp32", "fp16", "bf16", "fp8", "int64", "int32", "int8", "int4", "uint8", "bool"
]
PRECISIONS: tuple[LayerPrecision, ...] = get_args(LayerPrecision)
NO_CONSTRAINT = "none"
COMPANION_KEY = "tensorrt"
_SHAPE_KEYS = ("min", "opt", "max")

Shapes = dict[str, list[int]]
Profile = dict[str, Shapes]


class TensorRtPropertyError(DocumentError):
    """A TensorRT property (optimization profile, layer precision) was refused; nothing changed."""


class TensorRtProperties:
    """`doc.tensorrt`: the model's optimization profiles and layer precision constraints.

    Named after what a user builds with them (`nj.export_engine` reads them from the document);
    each setter is one undo step and checks everything before anything changes.
    """

    def __init__(self, doc: ModelDocument) -> None:
        self._doc = doc

    # ------------------------------------------------------------------ reading
    @property
    def profiles(self) -> list[Profile]:
        """The optimization profiles, `[{input: {"min": dims, "opt": dims, "max": dims}}]`."""
        return copy.deepcopy(self._entry().get("optimization_profiles", []))

    @property
    def layer_precisions(self) -> dict[str, LayerPrecision]:
        """`{ONNX node name: precision}` for the nodes that carry a constraint."""
        return dict(self._entry().get("layer_precisions", {}))

    def layer_precision(self, node: ir.Node | str) -> LayerPrecision | None:
        """The node's precision constraint, None for none."""
        name = node.name if isinstance(node, ir.Node) else node
        precision: LayerPrecision | None = self._entry().get("layer_precisions", {}).get(name)
        return precision

    def dynamic_inputs(self) -> dict[str, list[int | str | None]]:
        """Top-level inputs with a free dimension: `{name: dims}` (None or a symbol where free);
        an input of unknown rank maps to []."""
        return {
            value.name or "": _dims(value)
            for value in self._doc.graph.inputs
            if not value.is_initializer() and _is_dynamic(value)
        }

    def __bool__(self) -> bool:
        return bool(self._entry())

    def __repr__(self) -> str:
        return (
            f"<TensorRtProperties: {len(self.profiles)} optimization profile(s), "
            f"{len(self.layer_precisions)} layer precision(s)>"
        )

    # --------------------------------------------------------------- profiles
    def set_profile(
        self,
        input: str,
        min: Sequence[int],
        opt: Sequence[int],
        max: Sequence[int],
        *,
        profile: int = 0,
    ) -> None:
        """Set min/opt/max shapes of one dynamic input in profile `profile` (the next index
        adds a profile)."""
        profiles = self.profiles
        if not 0 <= profile <= len(profiles):
            raise TensorRtPropertyError(
                f"profile={profile}: the model has {len(profiles)} optimization profile(s); "
                f"give 0..{len(profiles)} ({len(profiles)} adds one)"
            )
        shapes = self._checked_shapes(input, {"min": min, "opt": opt, "max": max})
        if profile == len(profiles):
            profiles.append({})
        profiles[profile][input] = shapes
        self._set("optimization_profiles", profiles, f"optimization profile {profile}: {input}")

    def set_profiles(self, profiles: Sequence[Mapping[str, Mapping[str, Sequence[int]]]]) -> None:
        """Replace every optimization profile at once (one undo step); [] removes them all."""
        if isinstance(profiles, Mapping):
            raise TensorRtPropertyError(
                "give a list of profiles: [{input: {'min': ..., 'opt': ..., 'max': ...}}]"
            )
        checked = [self._checked_profile(i, p) for i, p in enumerate(profiles)]
        self._set("optimization_profiles", checked, "set optimization profiles")

    def remove_profile(self, profile: int) -> None:
        profiles = self.profiles
        if not 0 <= profile < len(profiles):
            raise TensorRtPropertyError(
                f"profile={profile}: the model has {len(profiles)} optimization profile(s)"
            )
        del profiles[profile]
        self._set("optimization_profiles", profiles, f"remove optimization profile {profile}")

    def _checked_profile(self, index: int, profile: Any) -> Profile:
        if not isinstance(profile, Mapping) or not profile:
            raise TensorRtPropertyError(
                f"profile {index}: give {{input name: {{'min': dims, 'opt': dims, 'max': dims}}}}"
            )
        checked: Profile = {}
        for name, shapes in profile.items():
            if not isinstance(shapes, Mapping) or set(shapes) != set(_SHAPE_KEYS):
                raise TensorRtPropertyError(
                    f"profile {index}, input {name!r}: give exactly the keys 'min', 'opt', 'max'"
                )
            checked[str(name)] = self._checked_shapes(str(name), shapes)
        return checked

    def _checked_shapes(self, name: str, shapes: Mapping[str, Any]) -> Shapes:
        dynamic = self.dynamic_inputs()
        if name not in dynamic:
            inputs = [v.name for v in self._doc.graph.inputs if not v.is_initializer()]
            why = "is static: TensorRT needs no profile for it" if name in inputs else "is unknown"
            raise TensorRtPropertyError(
                f"input {name!r} {why}; optimization profiles take the model's dynamic inputs: "
                f"{sorted(dynamic) or 'none'}"
            )
        dims = dynamic[name]
        checked: Shapes = {}
        for key in _SHAPE_KEYS:
            value = size_list(f"input {name!r} {key}", shapes[key], TensorRtPropertyError)
            if dims and len(value) != len(dims):
                raise TensorRtPropertyError(
                    f"input {name!r} has rank {len(dims)} {dims}; {key}={list(value)} has rank "
                    f"{len(value)}: give one size per dimension"
                )
            fixed = [
                (i, d, v)
                for i, (d, v) in enumerate(zip(dims, value, strict=False))
                if isinstance(d, int) and d != v
            ]
            if fixed:
                i, d, v = fixed[0]
                raise TensorRtPropertyError(
                    f"input {name!r} dimension {i} is fixed at {d}; {key} gives {v}: only the "
                    f"free dimensions of {dims} may vary"
                )
            checked[key] = value
        check_min_opt_max(f"input {name!r}", checked, TensorRtPropertyError)
        return checked

    # -------------------------------------------------------- layer precisions
    def set_layer_precision(self, node: ir.Node | str, precision: str | None) -> None:
        """Constrain one node's TensorRT layer to `precision` (TensorRT <= 10); None or
        'none' clears the constraint."""
        self.set_layer_precisions([node], precision)

    def set_layer_precisions(self, nodes: Iterable[ir.Node | str], precision: str | None) -> None:
        """The same precision (or none) for several nodes, as one undo step."""
        wanted = _precision(precision)
        names = [self._doc.node(n).name or "" for n in list_argument(nodes, "nodes")]
        if not names:
            raise TensorRtPropertyError("give at least one node to constrain")
        if any(self._doc.nodes.get(n) is None for n in names):
            raise TensorRtPropertyError(
                "layer precisions apply to nodes of the main graph (TensorRT layers are named "
                "after them); pick a top-level node"
            )
        current = self.layer_precisions
        for name in names:
            if wanted is None:
                current.pop(name, None)
            else:
                current[name] = wanted
        what = "no constraint" if wanted is None else wanted
        self._set("layer_precisions", current, f"TensorRT precision {what}: {', '.join(names)}")

    def clear_layer_precisions(self) -> None:
        self._set("layer_precisions", {}, "clear TensorRT layer precisions")

    # ------------------------------------------------------------- internals
    def _entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = self._doc.companion.get(COMPANION_KEY) or {}
        return entry

    def _set(self, key: str, value: Any, description: str) -> None:
        entry = {k: copy.deepcopy(v) for k, v in self._entry().items() if k != key}
        if value:
            entry[key] = value
        self._doc.apply_edits(
            description,
            [e.SetMapping(self._doc.companion, COMPANION_KEY, entry or None)],
            ChangeEvent(description, tensorrt=True),
        )

    def follow_edit(
        self,
        *,
        renamed: Sequence[tuple[str, str]] = (),
        removed: Iterable[str] = (),
        renamed_input: tuple[str, str] | None = None,
        removed_input: str | None = None,
    ) -> e.Edit:
        """The edit that keeps the properties in step with a node/input rename or removal;
        part of that command, so one undo restores both."""
        return _Follow(
            self._doc.companion, renamed, frozenset(removed), renamed_input, removed_input
        )

    def drop_unknown(self) -> list[str]:
        """On open: forget properties naming nodes or inputs the model lacks; returns what was
        dropped, for the caller's warning."""
        entry = self._entry()
        if not entry:
            return []
        dropped: list[str] = []
        precisions = {}
        for name, precision in entry.get("layer_precisions", {}).items():
            if name in self._doc.nodes:
                precisions[name] = precision
            else:
                dropped.append(f"layer precision of {name!r} (no such node)")
        profiles = []
        for index, profile in enumerate(entry.get("optimization_profiles", [])):
            try:
                profiles.append(self._checked_profile(index, profile))
            except TensorRtPropertyError as error:
                dropped.append(f"optimization profile {index} ({error})")
        if not dropped:
            return []
        kept = {"optimization_profiles": profiles, "layer_precisions": precisions}
        self._doc.companion[COMPANION_KEY] = {k: v for k, v in kept.items() if v}
        if not self._doc.companion[COMPANION_KEY]:
            del self._doc.companion[COMPANION_KEY]
        return dropped


class _Follow(e.Edit):
    """Carry constraints across node renames, drop those of removed nodes and inputs."""

    def __init__(
        self,
        companion: dict[str, Any],
        renamed: Sequence[tuple[str, str]],
        removed: frozenset[str],
        renamed_input: tuple[str, str] | None,
        removed_input: str | None,
    ) -> None:
        self.companion, self.renamed, self.removed = companion, tuple(renamed), removed
        self.renamed_input, self.removed_input = renamed_input, removed_input
        self._old: Any = None

    def apply(self) -> None:
        self._old = self.companion.get(COMPANION_KEY)
        if not self._old:
            return
        entry = copy.deepcopy(self._old)
        precisions: dict[str, Any] = entry.get("layer_precisions", {})
        for old, new in self.renamed:
            if old in precisions:
                precisions[new] = precisions.pop(old)
        for name in self.removed:
            precisions.pop(name, None)
        profiles = []
        for profile in entry.get("optimization_profiles", []):
            if self.renamed_input is not None and self.renamed_input[0] in profile:
                profile[self.renamed_input[1]] = profile.pop(self.renamed_input[0])
            profile.pop(self.removed_input, None)
            if profile:
                profiles.append(profile)
        entry = {
            k: v
            for k, v in {"optimization_profiles": profiles, "layer_precisions": precisions}.items()
            if v
        }
        if entry:
            self.companion[COMPANION_KEY] = entry
        else:
            self.companion.pop(COMPANION_KEY, None)

    def revert(self) -> None:
        if self._old is None:
            self.companion.pop(COMPANION_KEY, None)
        else:
            self.companion[COMPANION_KEY] = self._old


def _precision(precision: str | None) -> LayerPrecision | None:
    if precision is None or precision == NO_CONSTRAINT:
        return None
    if precision not in PRECISIONS:
        raise TensorRtPropertyError(
            f"precision {precision!r}: use one of {', '.join(PRECISIONS)}, or None / "
            f"{NO_CONSTRAINT!r} for no constraint"
        )
    return precision  # type: ignore[return-value]


def _dims(value: ir.Value) -> list[int | str | None]:
    if value.shape is None:
        return []
    return [d if isinstance(d, int) else (d.value if d.value else None) for d in value.shape]


def _is_dynamic(value: ir.Value) -> bool:
    return value.shape is None or any(not isinstance(d, int) for d in value.shape)


def companion_entry(value: Any) -> dict[str, Any] | None:
    """The companion reader's check: the well-formed part of a `"tensorrt"` entry (shapes of
    the data only; `drop_unknown` checks it against the model)."""
    if not isinstance(value, dict):
        return None
    kept: dict[str, Any] = {}
    precisions = value.get("layer_precisions")
    if isinstance(precisions, dict):
        good = {k: v for k, v in precisions.items() if isinstance(k, str) and v in PRECISIONS}
        if good:
            kept["layer_precisions"] = good
    profiles = value.get("optimization_profiles")
    if isinstance(profiles, list):
        good_profiles = [p for p in profiles if _profile_shaped(p)]
        if good_profiles:
            kept["optimization_profiles"] = good_profiles
    return kept or None


def _profile_shaped(profile: Any) -> bool:
    return (
        isinstance(profile, dict)
        and bool(profile)
        and all(
            isinstance(name, str)
            and isinstance(shapes, dict)
            and set(shapes) == set(_SHAPE_KEYS)
            and all(
                isinstance(dims, list)
                and all(isinstance(d, int) and not isinstance(d, bool) for d in dims)
                for dims in shapes.values()
            )
            for name, shapes in profile.items()
        )
    )
