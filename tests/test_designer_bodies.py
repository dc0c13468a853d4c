"""The Designer's body tabs (If/Loop bodies and local functions edited in tabs with Confirm),
the Local functions window and local functions in the palette, without a browser: the
messages a view sends are fed to the widgets' protocol endpoints as the comm would."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.document import DocumentError
from nsdl_jupyter.widgets import Designer, GraphView
from nsdl_jupyter.widgets.designer._body_tabs import SEPARATOR as S
from nsdl_jupyter.widgets.designer._body_tabs import Workspace
from tests.test_document_bodies import X, control_flow_model, function_model, leaky
from tests.test_transforms_extract import FUNCTION_WITH_IF

CONTROL_FLOW = Path(__file__).parent / "fixtures" / "exports" / "control_flow_torchscript.onnx"


def _bytes(doc: nj.ModelDocument) -> bytes:
    return ir.to_proto(doc.model).SerializeToString(deterministic=True)


def double_click(view: GraphView, node: str, attribute: str = "") -> None:
    """What the canvas sends on a double click on `node`'s subgraph mark."""
    message = {"node": node, "attribute": attribute}
    view._channel.receive(view, {"kind": "nsdl.event", "name": "open_body", "payload": message}, [])


def buttons(workspace: Workspace) -> dict[str, object]:
    bar = workspace.page.children[0]
    return {b.description: b for b in bar.children[1:]}


@pytest.fixture
def designer(tmp_path: Path) -> Designer:
    path = tmp_path / "cf.onnx"
    onnx.save(control_flow_model(), path)
    designer = Designer(nj.open_model(path), check_delay=0)
    yield designer
    designer.close()


def test_open_body_event_reaches_every_callback_until_removed() -> None:
    view = GraphView(nj.ModelDocument(ir.from_proto(control_flow_model())))
    calls: list[tuple[str, str]] = []
    remove = view.on_open_body(lambda n, a: calls.append((n, a)))
    double_click(view, "branch", "else_branch")
    # a payload that does not match the declared kind reaches no callback
    view._channel.receive(view, {"kind": "nsdl.event", "name": "open_body", "payload": {}}, [])
    remove()
    remove()  # twice is harmless
    double_click(view, "branch")
    assert calls == [("branch", "else_branch")]
    view.close()


def test_double_click_opens_the_then_branch_confirm_is_one_undo_step(
    designer: Designer, tmp_path: Path
) -> None:
    doc = designer.doc
    original = _bytes(doc)
    double_click(designer.graph, "branch")
    tabs = designer.bodies
    assert tabs.tabs.titles == ("main (locked)", f"branch{S}then_branch")
    assert tabs.tabs.selected_index == 1
    body = tabs.active
    # the Designer's panels are the body's now, where the main ones were
    assert designer.right.tabs.children[0] is body.parameters
    assert designer.left.tabs.children[0] is body.palette
    assert body.palette.quick_add in designer.toolbar.children
    assert body.type_check in designer.children
    assert "then_act" in body.doc.nodes
    assert f"locked while main{S}branch{S}then_branch" in tabs.main.lock_note.text
    with pytest.raises(DocumentError, match="confirm"):
        doc.rename_node("branch", "choose")

    body.graph.selected = ["then_act"]
    assert body.parameters.set_value("alpha", 0.5) is None
    assert designer.undo_button.disabled is False  # the toolbar follows the body's history
    buttons(body)["Confirm edits"].click()  # type: ignore[attr-defined]

    assert tabs.tabs.titles == ("main",)
    assert designer.right.tabs.children[0] is designer.parameters
    assert tabs.main.lock_note.text == ""
    assert doc.undo_description == "edit branch.then_branch"
    saved = doc.save(tmp_path / "edited.onnx")
    session = ort.InferenceSession(str(saved), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": X, "cond": np.array(True)})
    np.testing.assert_allclose(y, leaky(X, 0.5) + 3.0, rtol=1e-6)
    assert designer.undo()
    assert _bytes(doc) == original


def test_parameter_editor_opens_the_else_branch_and_discard_changes_nothing(
    designer: Designer,
) -> None:
    doc = designer.doc
    original = _bytes(doc)
    designer.graph.selected = ["branch"]
    rows = designer.parameters.set_rows.children
    (row,) = [r for r in rows if "nsdl-attr-else_branch" in r._dom_classes]
    _label, _value, open_button, *_ = row.children[0].children
    assert open_button.description == "open" and open_button.layout.display == ""
    assert designer.parameters.open_body("else_branch")
    body = designer.bodies.active
    assert body.title == f"branch{S}else_branch"
    body.doc.rename_node("else_neg", "flip")
    buttons(body)["Discard"].click()  # type: ignore[attr-defined]
    assert designer.bodies.active is designer.bodies.main
    assert _bytes(doc) == original
    assert not doc.can_undo


def test_nested_loop_body_tab_locks_the_branch_tab(designer: Designer) -> None:
    doc = designer.doc
    double_click(designer.graph, "branch", "then_branch")
    branch = designer.bodies.active
    double_click(branch.graph, "then_loop")
    loop = designer.bodies.active
    assert designer.bodies.tabs.titles == (
        "main (locked)",
        f"branch{S}then_branch (locked)",
        f"then_loop{S}body",
    )
    # the branch cannot be confirmed while its loop body is open: said, nothing closes
    assert not designer.bodies.confirm(branch)
    assert "confirm() or discard() it first" in designer.status.text
    assert len(designer.bodies.workspaces) == 3
    # double-clicking the open loop again shows its tab instead of opening it twice
    designer.bodies.show(branch)
    double_click(branch.graph, "then_loop")
    assert designer.bodies.active is loop
    loop.doc.rename_node("accumulate", "accumulate2")
    assert designer.bodies.confirm(loop)
    assert designer.bodies.active is branch
    assert designer.bodies.confirm(branch)
    body = doc.nodes["branch"].attributes["then_branch"].as_graph()
    loop_node = next(n for n in body if n.name == "then_loop")
    assert [n.name for n in loop_node.attributes["body"].as_graph()] == [
        "keep_going",
        "accumulate2",
    ]
    assert designer.undo()
    assert doc.nodes["branch"].attributes["then_branch"].as_graph() is not body


def test_undo_in_the_main_tab_while_a_body_is_open_is_refused_with_the_reason(
    designer: Designer,
) -> None:
    designer.doc.rename_node("branch", "choose")
    double_click(designer.graph, "choose")
    designer.bodies.show(designer.bodies.main)
    assert not designer.undo()
    assert "is open for editing" in designer.status.text
    assert designer.doc.nodes["choose"]


def test_functions_window_create_open_confirm_delete_and_palette_instances(
    tmp_path: Path,
) -> None:
    path = tmp_path / "fn.onnx"
    onnx.save(function_model(), path)
    designer = Designer(nj.open_model(path), check_delay=0)
    doc, window = designer.doc, designer.functions
    before = [r.key for r in window.rows]
    assert before and window.details.value  # the model's own function is listed
    window.new_button.click()
    assert window.form.layout.display == ""
    window.name_box.value = "Scale2"
    window.inputs_box.value = "a"
    window.outputs_box.value = "b"
    window.parameters_box.value = "factor=2.0, mode"
    window.create_button.click()
    assert window.list.value == "local::Scale2", window.message.text
    assert "factor" in window.details.value and "no default" in window.details.value
    window.filter_box.value = "scale2"
    assert [r.key for r in window.rows] == ["local::Scale2"]

    # the palette lists it and adds instances (with the required parameter refused first)
    palette = designer.palette
    assert palette.index.get("local::Scale2") is not None
    assert palette.add("local::Scale2") is None
    assert "missing ['mode']" in palette.message.text
    window.open_button.click()
    fn = designer.bodies.active
    assert fn.title == "ƒ local::Scale2"
    assert designer.bodies.tabs.titles[-1] == "ƒ local::Scale2"
    fn.doc.remove_parameter("mode")  # type: ignore[attr-defined]
    assert designer.bodies.confirm(fn)
    assert "mode" not in window.details.value and "factor" in window.details.value
    first = palette.add("local::Scale2")
    second = palette.add("local::Scale2")
    assert first and second and first != second
    assert doc.nodes[second].op_type == "Scale2" and doc.nodes[second].domain == "local"
    assert window.current is not None and window.current.instances == 2

    # delete asks first; the instances stay, as custom operators
    window.delete_button.click()
    assert window.confirm_row.layout.display == ""
    assert "2 instances become custom operators" in window.confirm_text.value
    window.confirm_delete.click()
    assert ("local", "Scale2", "") not in doc.functions
    assert palette.index.get("local::Scale2") is None
    assert first in doc.nodes
    designer.close()


def test_a_body_inside_a_function_tab_and_closing_the_designer_unlocks_the_model(
    tmp_path: Path,
) -> None:
    path = tmp_path / "gate.onnx"
    ir.save(ir.from_onnx_text(FUNCTION_WITH_IF), path)
    designer = Designer(nj.open_model(path), check_delay=0)
    doc = designer.doc
    fn = designer.bodies.open_function("Gate", "local")
    assert fn is not None and fn.graph.selected == []
    double_click(fn.graph, "gate")  # the If inside the function
    branch = designer.bodies.active
    assert branch.path == f"main{S}ƒ local::Gate{S}gate{S}then_branch"
    assert designer.bodies.tabs.titles[1] == "ƒ local::Gate (locked)"
    # a function call in the main graph opens its function (already open: its tab)
    double_click(designer.graph, doc.graph.node(0).name or "")
    assert designer.bodies.active is fn
    branch.doc.rename_node(next(iter(branch.doc.nodes)), "times_k")
    designer.close()
    with pytest.raises(DocumentError, match="closed"):
        branch.doc.confirm()
    doc.rename_node(doc.graph.node(0).name or "", "call")  # the model is editable again
    assert not any(n.name == "times_k" for f in doc.functions.values() for n in f.graph)


def test_keys_double_click_on_a_graph_attribute_and_ctrl_z_act_on_the_shown_tab(
    designer: Designer,
) -> None:
    def send(name: str, **payload: object) -> None:  # as the browser's DesignerKeys sends it
        event = {"kind": "nsdl.event", "name": name, "payload": payload}
        designer.shortcuts._channel.receive(None, event, [])

    designer.graph.selected = ["branch"]
    send("activate", target="parameters", index=-1, label="else_branch")
    body = designer.bodies.active
    assert body.title == f"branch{S}else_branch"
    body.doc.rename_node("else_neg", "flip")
    send("key", action="undo")  # Ctrl+Z in the body's tab undoes in the body
    assert "else_neg" in body.doc.nodes
    send("key", action="redo")
    send("quick_add", text="Relu")  # the toolbar's quick add adds to the body
    assert "Relu" in body.doc.nodes and "Relu" not in designer.doc.nodes
    assert designer.bodies.confirm(body)
    assert designer.doc.undo_description == "edit branch.else_branch"
