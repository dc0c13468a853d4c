// The browser end of the widget protocol (src/protocol.ts) against an in-memory comm that
// behaves as anywidget's does: a view's message goes to the kernel, a kernel message goes to
// every view of the model.
import type { AnyModel } from "@anywidget/types";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Channel, type Handlers, RequestError } from "../src/protocol";

interface ToKernel {
  echo: { payload: { text: string }; answer: { text: string } };
  note: { payload: { n: number }; answer: null };
}
interface ToBrowser {
  picture: { payload: { scale: number }; answer: { mime: string } };
  fit: { payload: Record<string, never>; answer: null };
}

type Listener = (msg: unknown, buffers: DataView[]) => void;
// biome-ignore lint/suspicious/noExplicitAny: the wire carries decoded JSON
type Wire = any;

class Comm {
  readonly toKernel: { msg: Wire; buffers: ArrayBuffer[] }[] = [];
  private listeners = new Set<Listener>();

  model(): AnyModel {
    return {
      on: (_event: string, fn: Listener) => this.listeners.add(fn),
      off: (_event: unknown, fn: Listener) => this.listeners.delete(fn),
      send: (msg: Wire, _callbacks: unknown, buffers?: ArrayBuffer[]) =>
        this.toKernel.push({ msg, buffers: buffers ?? [] }),
    } as unknown as AnyModel;
  }

  /** The kernel sends `msg`: every view gets it. */
  broadcast(msg: Wire, buffers: DataView[] = []): void {
    for (const fn of [...this.listeners]) fn(msg, buffers);
  }

  get listening(): number {
    return this.listeners.size;
  }
}

const noHandlers = (): Handlers<ToBrowser> => ({
  picture: async () => ({ value: { mime: "image/png" } }),
  fit: () => {},
});

function answerOk(id: string, value: unknown) {
  return { kind: "nsdl.answer", id, ok: true, value };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("Channel", () => {
  it("gives each of two views of one model its own answer", async () => {
    const comm = new Comm();
    const a = new Channel<ToKernel, ToBrowser>(comm.model(), noHandlers());
    const b = new Channel<ToKernel, ToBrowser>(comm.model(), noHandlers());
    expect(a.viewId).not.toEqual(b.viewId);
    const fromA = a.request("echo", { text: "from a" });
    const fromB = b.request("echo", { text: "from b" });
    const [reqA, reqB] = comm.toKernel.map((m) => m.msg);
    expect(reqA.id).not.toEqual(reqB.id); // both are the first request of their view
    // the kernel answers B first; the comm hands both answers to both views
    comm.broadcast(answerOk(reqB.id, { text: reqB.payload.text }));
    comm.broadcast(answerOk(reqA.id, { text: reqA.payload.text }));
    expect((await fromA).value).toEqual({ text: "from a" });
    expect((await fromB).value).toEqual({ text: "from b" });
  });

  it("turns a kernel error into a typed RequestError", async () => {
    const comm = new Comm();
    const view = new Channel<ToKernel, ToBrowser>(comm.model(), noHandlers());
    const pending = view.request("echo", { text: "x" });
    const { id } = comm.toKernel[0].msg;
    const error = { code: "handler_error", type: "KeyError", message: "no group 'x'" };
    comm.broadcast({ kind: "nsdl.answer", id, ok: false, error });
    const e = await pending.catch((x: unknown) => x);
    expect(e).toBeInstanceOf(RequestError);
    expect(e).toMatchObject({ code: "handler_error", errorType: "KeyError" });
    expect((e as Error).message).toBe("no group 'x'");
  });

  it("rejects after the timeout and ignores the late answer", async () => {
    vi.useFakeTimers();
    const comm = new Comm();
    const view = new Channel<ToKernel, ToBrowser>(comm.model(), noHandlers(), 1000);
    const pending = view.request("echo", { text: "slow" });
    const caught = pending.catch((x: unknown) => x);
    vi.advanceTimersByTime(999);
    comm.broadcast({ kind: "nsdl.event", name: "fit", payload: {} }); // not an answer
    vi.advanceTimersByTime(1);
    const e = await caught;
    expect(e).toMatchObject({ code: "timeout" });
    expect((e as Error).message).toContain('"echo" within 1 s');
    comm.broadcast(answerOk(comm.toKernel[0].msg.id, { text: "late" })); // no throw, no effect
    const quick = view.request("echo", { text: "quick" }, 50);
    comm.broadcast(answerOk(comm.toKernel[1].msg.id, { text: "quick" }));
    expect((await quick).value).toEqual({ text: "quick" });
  });

  it("fails waiting requests and stops listening on close", async () => {
    const comm = new Comm();
    const view = new Channel<ToKernel, ToBrowser>(comm.model(), noHandlers());
    expect(comm.listening).toBe(1);
    const pending = view.request("echo", { text: "x" }).catch((x: unknown) => x);
    view.close();
    expect(await pending).toMatchObject({ code: "closed" });
    expect(comm.listening).toBe(0);
  });

  it("sends events without an id and expects no answer", () => {
    const comm = new Comm();
    const view = new Channel<ToKernel, ToBrowser>(comm.model(), noHandlers());
    view.notify("note", { n: 3 });
    expect(comm.toKernel[0].msg).toEqual({ kind: "nsdl.event", name: "note", payload: { n: 3 } });
  });

  it("answers the kernel's requests with the same id, buffers and typed errors", async () => {
    const comm = new Comm();
    const fits: number[] = [];
    let fail = false;
    new Channel<ToKernel, ToBrowser>(comm.model(), {
      picture: async ({ scale }) => {
        if (fail) throw new TypeError("no canvas");
        return { value: { mime: `image/png;scale=${scale}` }, buffers: [new ArrayBuffer(4)] };
      },
      fit: () => fits.push(1),
    });
    const flush = () => new Promise((r) => setTimeout(r, 0));
    comm.broadcast({
      kind: "nsdl.request",
      id: "kernel-1:1",
      name: "picture",
      payload: { scale: 2 },
    });
    await flush();
    expect(comm.toKernel[0].msg).toEqual({
      kind: "nsdl.answer",
      id: "kernel-1:1",
      ok: true,
      value: { mime: "image/png;scale=2" },
    });
    expect(comm.toKernel[0].buffers[0].byteLength).toBe(4);
    fail = true;
    comm.broadcast({
      kind: "nsdl.request",
      id: "kernel-1:2",
      name: "picture",
      payload: { scale: 1 },
    });
    comm.broadcast({ kind: "nsdl.request", id: "kernel-1:3", name: "nope", payload: {} });
    comm.broadcast({ kind: "nsdl.event", name: "fit", payload: {} });
    comm.broadcast({ kind: "nsdl.event", name: "toString", payload: {} }); // not a handler
    await flush();
    const answer = (id: string) => comm.toKernel.find((m) => m.msg.id === id)?.msg;
    const [failed, unknown] = [answer("kernel-1:2"), answer("kernel-1:3")];
    expect(failed).toMatchObject({
      id: "kernel-1:2",
      ok: false,
      error: { code: "handler_error", type: "TypeError", message: "no canvas" },
    });
    expect(unknown).toMatchObject({
      id: "kernel-1:3",
      ok: false,
      error: { code: "unknown_request" },
    });
    expect(comm.toKernel).toHaveLength(3); // events are never answered
    expect(fits).toEqual([1]);
  });
});
