"""Tensor edits of `ModelDocument`: graph inputs and outputs, tensor names and types,
initializers and where they are stored."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import onnx_ir as ir

from nsdl_jupyter._errors import list_argument, text_argument
from nsdl_jupyter.document import edits as e
from nsdl_jupyter.document._data_types import as_data_type
from nsdl_jupyter.document._document_base import DocumentBase, _positions
from nsdl_jupyter.document._errors import DocumentError, GraphEditError, InitializerError
from nsdl_jupyter.document._events import ChangeEvent
from nsdl_jupyter.document._loading import resolve_inside
from nsdl_jupyter.document._names import check_tensor_name
from nsdl_jupyter.document._saving import ExternalLocation
from nsdl_jupyter.document._tensor_values import array_from_source, generate_array, to_tensor


class TensorEdits(DocumentBase):
    """Edits of tensors: each validates first, then applies one undo step."""

    # ---------------------------------------------------- graph inputs/outputs
    def add_graph_input(
        self, name: str, dtype: ir.DataType | str | int, shape: Sequence[int | str | None]
    ) -> ir.Value:
        check_tensor_name(name, self.tensors)
        value = ir.Value(
            name=name, type=ir.TensorType(as_data_type(dtype)), shape=ir.Shape(_dims(shape))
        )
        description = f"add graph input {name}"
        self.apply_edits(
            description,
            [e.ListInsert(self.graph.inputs, len(self.graph.inputs), value)],
            ChangeEvent(description, graph_io=True),
        )
        return value

    def remove_graph_input(self, name: str) -> None:
        """Remove a graph input; nodes that read it get an empty input."""
        value = self._tensor(name)
        if not value.is_graph_input():
            raise GraphEditError(f"{name!r} is not a graph input")
        edits: list[e.Edit] = [e.SetInput(user, index, None) for user, index in value.uses()]
        edits.append(
            e.ListInsert(self.graph.inputs, self.graph.inputs.index(value), value, remove=True)
        )
        edits.append(self.tensorrt.follow_edit(removed_input=name))
        users = frozenset(user.name or "" for user, _ in value.uses())
        description = f"remove graph input {name}"
        self.apply_edits(
            description, edits, ChangeEvent(description, changed=users, edges=True, graph_io=True)
        )

    def add_graph_output(self, tensor: str | ir.Value) -> None:
        value = self._tensor(tensor)
        if value.is_graph_output():
            raise GraphEditError(f"{value.name!r} is already a graph output")
        description = f"add graph output {value.name}"
        self.apply_edits(
            description,
            [e.ListInsert(self.graph.outputs, len(self.graph.outputs), value)],
            ChangeEvent(description, graph_io=True),
        )

    def remove_graph_output(self, name: str) -> None:
        value = self._tensor(name)
        if not value.is_graph_output():
            raise GraphEditError(f"{name!r} is not a graph output")
        edits = [
            e.ListInsert(self.graph.outputs, position, value, remove=True)
            for position in reversed(_positions(self.graph.outputs, value))
        ]
        description = f"remove graph output {name}"
        self.apply_edits(description, edits, ChangeEvent(description, graph_io=True))

    def rename_tensor(self, old: str, new: str) -> None:
        """Rename a tensor (graph input/output, initializer or node output)."""
        value = self._tensor(text_argument(old, "tensor name"))
        if new == old:
            return
        check_tensor_name(new, self.tensors)
        touched = {user.name or "" for user, _ in value.uses()}
        if value.producer() is not None:
            touched.add(value.producer().name or "")  # type: ignore[union-attr]
        description = f"rename tensor {old} to {new}"
        self.apply_edits(
            description,
            [
                e.RenameValue(self.graph, value, new),
                self.tensorrt.follow_edit(renamed_input=(old, new)),
            ],
            ChangeEvent(
                description,
                changed=frozenset(touched),
                edges=True,
                graph_io=value.is_graph_input() or value.is_graph_output(),
                initializers=value.is_initializer(),
            ),
        )

    def set_tensor_type(
        self,
        name: str,
        dtype: ir.DataType | str | int | None = None,
        shape: Sequence[int | str | None] | None = None,
    ) -> None:
        """Change a tensor's dtype and/or shape (e.g. shape=['batch', 3, 224, 224])."""
        value = self._tensor(name)
        if value.is_initializer():
            raise GraphEditError(
                f"{name!r} is an initializer: its type comes from its data; "
                "use convert_initializer or create a new one"
            )
        edits: list[e.Edit] = []
        if dtype is not None:
            edits.append(e.SetField(value, "type", ir.TensorType(as_data_type(dtype))))
        if shape is not None:
            edits.append(e.SetField(value, "shape", ir.Shape(_dims(shape))))
        if not edits:
            return
        users = frozenset(user.name or "" for user, _ in value.uses())
        description = f"change type of {name}"
        self.apply_edits(
            description,
            edits,
            ChangeEvent(description, changed=users, edges=True, graph_io=True),
        )

    # ------------------------------------------------------------ initializers
    def create_initializer(
        self,
        name: str,
        value: object = None,
        *,
        dtype: ir.DataType | str | int | None = None,
        shape: Sequence[int] | None = None,
        generate: str | None = None,
        seed: int = 0,
    ) -> ir.Value:
        """Create an initializer from `value` (array, nested list, literal text or a `.npy`
        path) or, with `generate` in ("zeros", "normal", "uniform"), from dtype and shape."""
        check_tensor_name(name, self.tensors)
        data_type = as_data_type(dtype) if dtype is not None else None
        dims = _initializer_dims(shape) if shape is not None else None
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise InitializerError(f"seed must be an int, not {type(seed).__name__}")
        if generate is not None:
            if value is not None:
                raise InitializerError("give either a value or a generate method, not both")
            if data_type is None or dims is None:
                raise InitializerError(f"generate={generate!r} needs a dtype and a shape")
            try:
                array = generate_array(data_type, dims, generate, seed)
            except (ValueError, MemoryError) as error:  # numpy: more than memory can hold
                raise InitializerError(
                    f"cannot make a {data_type.name} tensor of shape {dims}: {error}"
                ) from None
        elif value is None:
            raise InitializerError("give a value (array, list, literal or .npy path) or generate=")
        else:
            array = array_from_source(value, data_type, dims)
        tensor = to_tensor(array, data_type, name)
        initializer = ir.Value(
            name=name,
            type=ir.TensorType(tensor.dtype),
            shape=ir.Shape(tensor.shape.numpy()),
            const_value=tensor,
        )
        description = f"create initializer {name}"
        self.apply_edits(
            description,
            [e.RegisterInitializer(self.graph, initializer)],
            ChangeEvent(description, initializers=True),
        )
        return initializer

    def delete_initializer(self, name: str) -> None:
        """Delete an initializer; every input that used it becomes empty."""
        value = self._initializer(name)
        users = list(value.uses())
        edits: list[e.Edit] = [e.SetInput(user, index, None) for user, index in users]
        if value.is_graph_input():
            edits.append(
                e.ListInsert(self.graph.inputs, self.graph.inputs.index(value), value, remove=True)
            )
        edits.append(e.RegisterInitializer(self.graph, value, remove=True))
        if name in self._external_plan:
            edits.append(e.SetMapping(self._external_plan, name, None))
        description = f"delete initializer {name}"
        self.apply_edits(
            description,
            edits,
            ChangeEvent(
                description,
                changed=frozenset(user.name or "" for user, _ in users),
                edges=bool(users),
                initializers=True,
            ),
        )

    def set_initializer_value(self, name: str, value: object, description: str = "") -> None:
        """Give initializer `name` new values of the same dtype and shape (one undo step; undo
        gives back the very tensor it had). An external initializer stays in its data file:
        the new bytes are written there on the next save, the old ones are never overwritten."""
        initializer = self._initializer(name)
        old = initializer.const_value
        if old is None:
            raise InitializerError(f"initializer {name!r} has no value to replace")
        array = array_from_source(value, None, None)
        shape = tuple(old.shape.numpy())
        if tuple(array.shape) != shape:
            raise InitializerError(
                f"{name!r} has shape {list(shape)}, the new value {list(array.shape)}: give "
                "values of the same shape (doc.create_initializer makes a tensor of another shape)"
            )
        expected = old.dtype.numpy() if old.dtype != ir.DataType.STRING else None
        if expected is not None and array.dtype != expected:
            raise InitializerError(
                f"{name!r} holds {old.dtype.name} values, the new value is {array.dtype}: convert "
                f"it first (array.astype(...)) or use nj.convert_tensors for another dtype"
            )
        edits: list[e.Edit] = [
            e.SetField(initializer, "const_value", to_tensor(array, old.dtype, name))
        ]
        if isinstance(old, ir.ExternalTensor) and name not in self._external_plan:
            where = ExternalLocation(str(old.location))
            edits.append(e.SetMapping(self._external_plan, name, where))
        users = frozenset(user.name or "" for user, _ in initializer.uses())
        text = description or f"edit values of {name}"
        self.apply_edits(text, edits, ChangeEvent(text, changed=users, initializers=True))

    def set_external(
        self, name: str, location: str, offset: int | None = None, length: int | None = None
    ) -> None:
        """Store initializer `name` in file `location` (relative to the model) on next save."""
        value = self._initializer(name)
        if self._path is None:
            raise InitializerError(
                "the model has never been saved: save it first so external data has a folder"
            )
        resolve_inside(self._path.parent, location, f"initializer {name!r}")
        if offset is not None and offset < 0:
            raise InitializerError(f"offset must be >= 0, got {offset}")
        nbytes = value.const_value.nbytes  # type: ignore[union-attr]
        if length is not None and length != nbytes:
            raise InitializerError(f"{name!r} has {nbytes} bytes; length {length} does not match")
        description = f"store {name} in {location}"
        self.apply_edits(
            description,
            [e.SetMapping(self._external_plan, name, ExternalLocation(location, offset, length))],
            ChangeEvent(description, initializers=True),
        )

    def external_location(self, name: str) -> ExternalLocation | None:
        """Where an initializer is (or will be) stored outside the model, if anywhere."""
        planned = self._external_plan.get(name)
        if planned is not None:
            return planned
        tensor = self._initializer(name).const_value
        if isinstance(tensor, ir.ExternalTensor):
            return ExternalLocation(str(tensor.location), tensor.offset, tensor.length)
        return None


_MAX_DIM = 2**63 - 1  # ONNX dims are int64


def _dims(shape: Sequence[int | str | None]) -> list[int | str | None]:
    dims: list[int | str | None] = []
    for dim in list_argument(shape, "shape dims"):
        if isinstance(dim, str) and dim.isdigit():
            dims.append(int(dim))
        elif dim is None or isinstance(dim, (int, str)):
            if isinstance(dim, int) and dim < 0:
                raise DocumentError(f"dimension {dim} is negative: use a name for a free dimension")
            if isinstance(dim, int) and dim > _MAX_DIM:
                raise DocumentError("a dimension is over the int64 range of ONNX shapes")
            dims.append(dim)
        else:
            raise DocumentError(f"dimension {dim!r} must be an int, a name or None")
    return dims


def _initializer_dims(shape: Sequence[int]) -> tuple[int, ...]:
    dims = _dims(shape)
    if not all(isinstance(d, int) for d in dims):
        raise InitializerError(f"an initializer's shape is whole numbers >= 0, not {dims}")
    return tuple(cast("list[int]", dims))
