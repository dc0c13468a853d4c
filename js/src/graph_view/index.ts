// GraphView widget entry: one anywidget per model view (Python side:
// nsdl_jupyter/widgets/graph/_graph_view.py). A model may have several views at once.
import type { RenderProps } from "@anywidget/types";
import type { GraphViewModel } from "./model";
import { GraphViewElement } from "./view";

function render({ model, el }: RenderProps<GraphViewModel>) {
  const view = new GraphViewElement(model, el);
  return () => view.destroy();
}

export default { render };
