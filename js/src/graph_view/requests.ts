// This view's end of the kernel protocol (../protocol.ts): its requests, whose failures
// (kernel error, timeout) are shown in the status line instead of being lost, and the
// handlers of what the kernel sends (export a picture, fit).
import type { AnyModel } from "@anywidget/types";
import type { GraphViewToBrowser, GraphViewToKernel } from "../messages";
import { Channel, type Reply, type RequestName } from "../protocol";
import { exportImage } from "./export";
import type { GraphViewModel } from "./model";
import type { Renderer } from "./renderer";

type Out = GraphViewToKernel;
export type GraphRequest = RequestName<Out>;

export class Requests {
  readonly channel: Channel<Out, GraphViewToBrowser>;

  constructor(
    model: AnyModel<GraphViewModel>,
    renderer: Renderer,
    private readonly showError: (message: string | null) => void,
  ) {
    this.channel = new Channel<Out, GraphViewToBrowser>(model, {
      export: (payload) => exportImage(renderer, payload),
      fit: () => renderer.fit(),
    });
  }

  /** Ask the kernel; resolves with its answer, or null once the failure is shown. */
  async send<K extends GraphRequest>(
    name: K,
    payload: Out[K]["payload"],
    timeoutMs?: number,
  ): Promise<Reply<Out[K]["answer"]> | null> {
    try {
      const reply = await this.channel.request(name, payload, timeoutMs);
      this.showError(null);
      return reply;
    } catch (e) {
      this.showError(`${name} failed: ${e instanceof Error ? e.message : String(e)}`);
      return null;
    }
  }

  close(): void {
    this.channel.close();
  }
}
