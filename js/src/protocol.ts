// The browser end of the one request/answer protocol between a widget and the kernel (kernel
// end and envelope: nsdl_jupyter/widgets/_protocol.py; message kinds: ./messages.ts, generated
// from nsdl_jupyter/widgets/_messages.py). Every widget bundle inlines this module.
//
// The comm hands every kernel message to every view of a widget, so request ids are unique
// per view (a random view id and a counter) and a view resolves only the answers to its own
// requests. Modelled on anywidget's experimental `invoke`, which has no error answer (a
// failing command leaves the browser waiting for the timeout) and no kernel-to-browser
// requests (GraphView's PNG export needs one).
import type { AnyModel } from "@anywidget/types";

const REQUEST = "nsdl.request";
const ANSWER = "nsdl.answer";
const EVENT = "nsdl.event";

/** How long a view waits for the kernel's answer before its request fails. */
export const DEFAULT_TIMEOUT_MS = 30_000;

export interface Kind {
  payload: object;
  answer: object | null; // null: an event, never answered
}

type Catalog<C> = { [K in keyof C]: Kind };
export type RequestName<C> = {
  [K in keyof C]: C[K] extends { answer: null } ? never : K;
}[keyof C] &
  string;
export type EventName<C> = {
  [K in keyof C]: C[K] extends { answer: null } ? K : never;
}[keyof C] &
  string;
type PayloadOf<C extends Catalog<C>, K extends keyof C> = C[K]["payload"];
type AnswerOf<C extends Catalog<C>, K extends keyof C> = C[K]["answer"];

export interface Reply<A> {
  value: A;
  buffers: DataView[];
}

/** What a view answers to one of the kernel's requests. */
export interface Outgoing<A> {
  value: A;
  buffers?: ArrayBuffer[];
}

/** One handler per message kind the kernel sends; the compiler checks none is missing. */
export type Handlers<In extends Catalog<In>> = {
  [K in keyof In]: (
    payload: PayloadOf<In, K>,
    buffers: DataView[],
  ) => In[K] extends { answer: null } ? void : Promise<Outgoing<AnswerOf<In, K>>>;
};

export type ErrorCode =
  | "timeout" // no answer in time
  | "closed" // the view was closed before the answer came
  | "unknown_request" // the receiver declares no such request
  | "invalid_payload" // the payload does not match the declared kind
  | "handler_error"; // the receiver's handler raised; `errorType` names the exception

export class RequestError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly errorType = "",
  ) {
    super(message);
    this.name = "RequestError";
  }
}

interface Envelope {
  kind?: unknown;
  id?: unknown;
  name?: unknown;
  payload?: unknown;
  ok?: unknown;
  value?: unknown;
  error?: { code?: ErrorCode; type?: string; message?: string };
}

interface Pending {
  resolve: (reply: Reply<unknown>) => void;
  reject: (error: RequestError) => void;
  timer: ReturnType<typeof setTimeout>;
}

/** A random id for one view: `crypto.randomUUID` needs a secure context, this does not. */
export function newViewId(): string {
  const bytes = new Uint8Array(6);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** One view's end of the protocol: `Out` are the kinds it sends, `In` those it receives. */
export class Channel<Out extends Catalog<Out>, In extends Catalog<In>> {
  readonly viewId = newViewId();
  private count = 0;
  private readonly pending = new Map<string, Pending>();
  private readonly listener = (msg: unknown, buffers: DataView[]) => this.receive(msg, buffers);

  constructor(
    private readonly model: AnyModel,
    private readonly handlers: Handlers<In>,
    private readonly timeoutMs = DEFAULT_TIMEOUT_MS,
  ) {
    model.on("msg:custom", this.listener);
  }

  /** Ask the kernel; resolves with its answer, rejects with a RequestError. */
  request<K extends RequestName<Out>>(
    name: K,
    payload: PayloadOf<Out, K>,
    timeoutMs = this.timeoutMs,
  ): Promise<Reply<AnswerOf<Out, K>>> {
    const id = `${this.viewId}:${++this.count}`;
    return new Promise<Reply<unknown>>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(
          new RequestError(
            "timeout",
            `the kernel did not answer "${name}" within ${timeoutMs / 1000} s: ` +
              "it may be busy running a cell",
          ),
        );
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.model.send({ kind: REQUEST, id, name, payload });
    }) as Promise<Reply<AnswerOf<Out, K>>>;
  }

  /** Tell the kernel something; nothing comes back. */
  notify<K extends EventName<Out>>(name: K, payload: PayloadOf<Out, K>): void {
    this.model.send({ kind: EVENT, name, payload });
  }

  /** Stop listening and fail the requests still waiting. */
  close(): void {
    this.model.off("msg:custom", this.listener);
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(new RequestError("closed", "the view was closed before the kernel answered"));
    }
    this.pending.clear();
  }

  private receive(msg: unknown, buffers: DataView[]): void {
    if (typeof msg !== "object" || msg === null) return;
    const m = msg as Envelope;
    if (m.kind === ANSWER) this.resolve(m, buffers);
    else if (m.kind === REQUEST || m.kind === EVENT) void this.dispatch(m, buffers);
  }

  private resolve(m: Envelope, buffers: DataView[]): void {
    const id = String(m.id);
    const p = this.pending.get(id);
    if (!p) return; // another view's request, or one that timed out
    this.pending.delete(id);
    clearTimeout(p.timer);
    if (m.ok) p.resolve({ value: m.value, buffers });
    else {
      const e = m.error ?? {};
      p.reject(new RequestError(e.code ?? "handler_error", e.message ?? "failed", e.type ?? ""));
    }
  }

  private async dispatch(m: Envelope, buffers: DataView[]): Promise<void> {
    const name = String(m.name);
    const handler = Object.hasOwn(this.handlers, name)
      ? (this.handlers[name as keyof In] as (p: unknown, b: DataView[]) => unknown)
      : undefined;
    if (m.kind === EVENT) {
      handler?.(m.payload ?? {}, buffers);
      return;
    }
    const answer = (body: object, out?: ArrayBuffer[]) =>
      this.model.send({ kind: ANSWER, id: m.id, ...body }, undefined, out);
    if (!handler) {
      answer({ ok: false, error: { code: "unknown_request", type: "", message: name } });
      return;
    }
    try {
      const reply = (await handler(m.payload ?? {}, buffers)) as Outgoing<unknown>;
      answer({ ok: true, value: reply.value }, reply.buffers);
    } catch (e) {
      const error = e instanceof Error ? e : new Error(String(e));
      answer({
        ok: false,
        error: { code: "handler_error", type: error.name, message: error.message },
      });
    }
  }
}
