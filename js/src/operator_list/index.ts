// OperatorList widget entry (Python side: nsdl_jupyter/widgets/designer/_operator_list.py): one
// group of the Layer Palette. A click chooses an operator; each line can be dragged onto a
// GraphView canvas in edit mode, which adds the operator where it is dropped
// (../graph_view/drop.ts). A double-click inside the Designer adds it (designer_keys reads
// the line's data-key).
import type { RenderProps } from "@anywidget/types";
import { OPERATOR_TYPE } from "../graph_view/drop";
import type { OperatorListModel } from "./model";

const LINE_PX = 22;

function render({ model, el }: RenderProps<OperatorListModel>) {
  el.classList.add("nsdl-op-list");
  el.setAttribute("role", "listbox");

  const draw = () => {
    const value = model.get("value");
    el.style.maxHeight = `${Math.max(2, model.get("rows")) * LINE_PX}px`;
    el.replaceChildren(
      ...model.get("options").map(([label, key]) => {
        const line = document.createElement("div");
        line.className = "nsdl-op-item";
        line.textContent = label;
        line.dataset.key = key;
        line.draggable = true;
        line.title = `${key}: drag onto the graph to add it there; double-click adds it`;
        line.setAttribute("role", "option");
        if (key === value) {
          line.classList.add("nsdl-op-chosen");
          line.setAttribute("aria-selected", "true");
        }
        return line;
      }),
    );
  };

  const lineOf = (target: EventTarget | null) =>
    target instanceof Element ? target.closest<HTMLElement>(".nsdl-op-item") : null;
  const onClick = (ev: Event) => {
    const key = lineOf(ev.target)?.dataset.key;
    if (!key) return;
    model.set("value", key);
    model.save_changes();
  };
  const onDragStart = (ev: DragEvent) => {
    const key = lineOf(ev.target)?.dataset.key;
    if (!key || !ev.dataTransfer) return;
    ev.dataTransfer.setData(OPERATOR_TYPE, key);
    ev.dataTransfer.setData("text/plain", key);
    ev.dataTransfer.effectAllowed = "copy";
  };
  el.addEventListener("click", onClick);
  el.addEventListener("dragstart", onDragStart);
  model.on("change:options", draw);
  model.on("change:value", draw);
  model.on("change:rows", draw);
  draw();
  return () => {
    el.removeEventListener("click", onClick);
    el.removeEventListener("dragstart", onDragStart);
    model.off("change:options", draw);
    model.off("change:value", draw);
    model.off("change:rows", draw);
  };
}

export default { render };
