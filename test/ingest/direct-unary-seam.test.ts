import { create } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createClient,
  createContextValues,
  type HandlerContext,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IngestResponseSchema, TraceService } from "../../gen/calltrace/v1/trace_service_pb.js";
import { resolveConfig } from "../../src/config/config.js";
import { unaryRoute } from "../../src/server/direct-unary.js";
import { listen } from "../../src/server/listen.js";
import { rpcAdapter } from "../../src/server/rpc-adapter.js";
import { refusal } from "../support/rpc-refusal.js";

// What connect-es's handler gives an implementation beyond its request, held on the direct unary
// path as on connect-es's (issue #27 item 7): router interceptors, maxTimeoutMs, the abort signal
// (client gone, deadline, shutdown). Each case runs with the direct path on and off, over gRPC and
// over the Connect protocol in protobuf (the two the direct path answers), on a real socket.

const maxTimeoutMs = 10_000;

/** What the implementation saw: the calls that began to wait on their signal, and the code of each one's abort reason. */
interface Seen {
  waiting: number;
  aborts: Code[];
}

/** Answers ok at once, or, for a trace whose model is "wait", when its signal aborts (then with the reason). */
function ingest(seen: Seen) {
  return async (request: { trace?: { model: string } }, context: HandlerContext) => {
    if (request.trace?.model !== "wait") return create(IngestResponseSchema, { status: "ok" });
    seen.waiting++;
    await new Promise<void>((resolve) => {
      const done = () => {
        seen.aborts.push(ConnectError.from(context.signal.reason).code);
        resolve();
      };
      if (context.signal.aborted) done();
      else context.signal.addEventListener("abort", done, { once: true });
    });
    throw ConnectError.from(context.signal.reason);
  };
}

async function startServer(direct: boolean, interceptors: Interceptor[] = []) {
  const seen: Seen = { waiting: 0, aborts: [] };
  const shutdown = new AbortController();
  const impl = ingest(seen);
  const rpc = rpcAdapter({
    routes: (router) => router.service(TraceService, { ingest: impl }),
    contextValues: () => createContextValues(),
    fallback: (_req, res) => {
      res.statusCode = 404;
      res.end();
    },
    fastUnary: direct ? [unaryRoute(TraceService.method.ingest, impl)] : [],
    maxTimeoutMs,
    shutdownSignal: shutdown.signal,
    interceptors,
  });
  const takeStream = (
    stream: Parameters<NonNullable<ReturnType<typeof rpc.grpcCall>>>[0],
    headers: Record<string, string | string[] | undefined>,
  ) => {
    const call = rpc.grpcCall(headers);
    if (!call) return undefined;
    call(stream, headers, {}, undefined, { report: () => {}, onError: () => {} });
    return {};
  };
  const listener = await listen(Object.assign(rpc.serve, { takeStream }), { port: 0, host: "127.0.0.1", limits: resolveConfig({}, {}) });
  return { listener, seen, shutdown };
}

/** Each transport with the header that sets a call's deadline of 300 ms. */
const transports: [string, (baseUrl: string) => Transport, Record<string, string>][] = [
  ["gRPC", (baseUrl) => createGrpcTransport({ baseUrl }), { "grpc-timeout": "300m" }],
  [
    "Connect (protobuf) over HTTP/1.1",
    (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
    { "connect-timeout-ms": "300" },
  ],
  [
    "Connect (protobuf) over h2c",
    (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true }),
    { "connect-timeout-ms": "300" },
  ],
];

const waitFor = (check: () => boolean) => expect.poll(check).toBe(true);

describe.each([
  ["direct path on", true],
  ["direct path off", false],
])("%s", (_name, direct) => {
  let server: Awaited<ReturnType<typeof startServer>>;
  beforeAll(async () => {
    server = await startServer(direct);
  });
  afterAll(() => server.listener.close(0));

  describe.each(transports)("%s", (_transport, makeTransport, deadline) => {
    const client = () => createClient(TraceService, makeTransport(server.listener.url));

    it("answers a call", async () => {
      expect((await client().ingest({ trace: { model: "m" } })).status).toBe("ok");
    });

    it("refuses a timeout over the router's maxTimeoutMs with INVALID_ARGUMENT", async () => {
      const error = await refusal(client().ingest({ trace: { model: "m" } }, { timeoutMs: maxTimeoutMs * 2 }));
      expect(error.code).toBe(Code.InvalidArgument);
      expect(error.rawMessage).toMatch(/timeout/);
    });

    // The deadline is sent as a header, not set on the client, which would give up at the same moment.
    it("aborts the call's signal at its deadline with DEADLINE_EXCEEDED", async () => {
      const before = server.seen.aborts.length;
      const error = await refusal(client().ingest({ trace: { model: "wait" } }, { headers: deadline }));
      expect(error.code).toBe(Code.DeadlineExceeded);
      await waitFor(() => server.seen.aborts.length > before);
      expect(server.seen.aborts[before]).toBe(Code.DeadlineExceeded);
    });

    it("aborts the call's signal when the client goes away", async () => {
      const before = server.seen.aborts.length;
      const waitingBefore = server.seen.waiting;
      const gone = new AbortController();
      const call = refusal(client().ingest({ trace: { model: "wait" } }, { signal: gone.signal }));
      await waitFor(() => server.seen.waiting > waitingBefore);
      gone.abort();
      expect((await call).code).toBe(Code.Canceled);
      await waitFor(() => server.seen.aborts.length > before);
      expect(server.seen.aborts[before]).not.toBe(Code.DeadlineExceeded);
    });
  });

  it("aborts every call's signal when the router's shutdown signal aborts", async () => {
    const own = await startServer(direct);
    try {
      const calls = transports.map(([, makeTransport]) =>
        refusal(createClient(TraceService, makeTransport(own.listener.url)).ingest({ trace: { model: "wait" } })),
      );
      await waitFor(() => own.seen.waiting === calls.length);
      own.shutdown.abort(new ConnectError("shutting down", Code.Unavailable));
      for (const call of calls) expect((await call).code).toBe(Code.Unavailable);
      expect(own.seen.aborts).toEqual([Code.Unavailable, Code.Unavailable, Code.Unavailable]);
    } finally {
      await own.listener.close(0);
    }
  });

  it("runs router interceptors on every call (with any, the direct path stands aside)", async () => {
    const paths: string[] = [];
    const interceptor: Interceptor = (next) => async (req) => {
      paths.push(`${req.method.name} ${req.requestMethod}`);
      const res = await next(req);
      res.header.set("x-intercepted", "yes");
      return res;
    };
    const own = await startServer(direct, [interceptor]);
    try {
      for (const [, makeTransport] of transports) {
        let header: string | null = null;
        const response = await createClient(TraceService, makeTransport(own.listener.url)).ingest(
          { trace: { model: "m" } },
          { onHeader: (h) => (header = h.get("x-intercepted")) },
        );
        expect([response.status, header]).toEqual(["ok", "yes"]);
      }
      expect(paths).toEqual(["Ingest POST", "Ingest POST", "Ingest POST"]);
    } finally {
      await own.listener.close(0);
    }
  });
});
