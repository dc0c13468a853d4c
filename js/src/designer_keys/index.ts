// DesignerKeys widget entry (Python side: nsdl_jupyter/widgets/designer/_keys.py). It draws
// nothing: it finds the Designer box around it and turns Ctrl+Z / Ctrl+Y / Ctrl+S (when the
// focus is inside the Designer), double-clicks on its lists (and on graph attributes in the
// ParameterEditor) and drags of its side-pane strips (panes.ts) into messages to the kernel;
// text cut with an ellipsis gets its full text as a tooltip (tooltips.ts).
import type { RenderProps } from "@anywidget/types";
import type { DesignerKeysToKernel } from "../messages";
import { Channel } from "../protocol";
import { actionFor, isTextField, wantsQuickAdd } from "./keys";
import { ACTIVATE, type DesignerKeysModel } from "./model";
import { attachPaneGrips } from "./panes";
import { attachCutTooltips } from "./tooltips";

function render({ model, el }: RenderProps<DesignerKeysModel>) {
  el.classList.add("nsdl-designer-keys");
  const cleanups: Array<() => void> = [];
  let root: HTMLElement | null = null;
  let frame = 0;
  const channel = new Channel<DesignerKeysToKernel, Record<string, never>>(model, {});
  cleanups.push(() => channel.close());

  const inside = (target: EventTarget | null) =>
    root !== null && target instanceof Node && root.contains(target);

  // Window, capture phase: runs before JupyterLab's document-level shortcut handling, so
  // Ctrl+S saves the model rather than the notebook while the Designer has the focus.
  const onKey = (event: Event) => {
    const ev = event as KeyboardEvent;
    if (!inside(ev.target) && !inside(document.activeElement)) return;
    const editing = isTextField(ev.target);
    // Enter in the quick-add box sends the text itself: the box's value sync is throttled
    // by ipywidgets and could reach the kernel after a plain "submit" event.
    if (ev.key === "Enter" && ev.target instanceof HTMLInputElement) {
      if (ev.target.closest(".nsdl-quick-add")) {
        ev.preventDefault(); // no keypress, so no second (value-less) submit
        ev.stopPropagation();
        channel.notify("quick_add", { text: ev.target.value });
        return;
      }
    }
    const action = actionFor(ev, editing);
    if (action) {
      ev.preventDefault();
      ev.stopPropagation();
      channel.notify("key", { action });
      return;
    }
    if (wantsQuickAdd(ev, editing) && root) {
      const boxes = root.querySelectorAll<HTMLInputElement>(".nsdl-quick-add input");
      const box = Array.from(boxes).find((b) => b.offsetParent !== null);
      if (box) {
        ev.preventDefault();
        ev.stopPropagation();
        box.focus();
      }
    }
  };

  // The option rides along with the message: the list's own "value changed" sync may reach
  // the kernel after this message (ipywidgets throttles model syncs), so Python must not
  // read the list's current value.
  const onDoubleClick = (event: Event) => {
    const target = event.target;
    if (!(target instanceof Element)) return;
    const graphRow = target.closest(".nsdl-attr-graph"); // a body: open it in its tab
    if (graphRow) {
      const label = graphRow.querySelector(".nsdl-attr-label")?.textContent?.trim() ?? "";
      channel.notify("activate", { target: "parameters", index: -1, label });
      return;
    }
    for (const [cls, what] of ACTIVATE) {
      const list = target.closest(`.${cls}`);
      if (!list) continue;
      const select = target.closest("select") ?? list.querySelector("select");
      const option = target.closest("option") ?? select?.selectedOptions[0] ?? null;
      const index = option && select ? Array.from(select.options).indexOf(option) : -1;
      const line = target.closest<HTMLElement>(".nsdl-op-item"); // a Layer Palette operator
      const label = option?.textContent ?? line?.dataset.key ?? "";
      channel.notify("activate", { target: what, index, label });
      return;
    }
  };

  const attach = (): boolean => {
    root = el.closest<HTMLElement>(`.${model.get("root_class")}`);
    if (!root) return false;
    if (!root.hasAttribute("tabindex")) root.tabIndex = 0; // clicking blank space focuses it
    window.addEventListener("keydown", onKey, true);
    root.addEventListener("dblclick", onDoubleClick);
    const owner = root;
    cleanups.push(attachPaneGrips(root, (payload) => channel.notify("resize_pane", payload)));
    cleanups.push(attachCutTooltips(root));
    cleanups.push(() => {
      window.removeEventListener("keydown", onKey, true);
      owner.removeEventListener("dblclick", onDoubleClick);
      delete owner.dataset.keysReady;
    });
    root.dataset.keysReady = "1";
    return true;
  };

  // the view is rendered before it is attached under the Designer box: wait for that
  let tries = 0;
  const poll = () => {
    if (attach() || ++tries > 600) return;
    frame = requestAnimationFrame(poll);
  };
  poll();
  cleanups.push(() => cancelAnimationFrame(frame));
  return () => {
    for (const fn of cleanups) fn();
  };
}

export default { render };
