import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { connect, constants } from "node:http2";
import { promisify } from "node:util";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus as Serving } from "../../gen/grpc/health/v1/health_pb.js";
import { ServerReflection } from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { dirname } from "node:path";
import { grpcurl } from "../support/go-tools.js";
import { startTestService, type TestService } from "../support/test-service.js";

const run = promisify(execFile);
let service: TestService;
let address: string;

beforeAll(async () => {
  // The README's commands cannot retry a 503: a commit may take long on a loaded machine.
  service = await startTestService({
    plans: { free: { per_minute: 2, per_month: 50_000 }, pro: { per_minute: 1000, per_month: 500_000 } },
    writeTimeoutMs: 60_000,
  });
  address = new URL(service.url).host;
});

/** One gRPC call over a raw HTTP/2 stream, to see what goes out as headers and what as trailers. */
function rawCall(path: string, headers: Record<string, string>, message: Uint8Array, contentType = "application/grpc") {
  return new Promise<{ headers: Record<string, unknown>; trailers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
    const session = connect(service.url);
    session.on("error", reject);
    const stream = session.request({ ":method": "POST", ":path": path, "content-type": contentType, te: "trailers", ...headers });
    const frame = Buffer.alloc(5 + message.length);
    frame.writeUInt32BE(message.length, 1);
    frame.set(message, 5);
    let responseHeaders: Record<string, unknown> = {};
    let trailers: Record<string, unknown> = {};
    const chunks: Buffer[] = [];
    stream.on("response", (h) => (responseHeaders = h));
    stream.on("trailers", (t) => (trailers = t));
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("error", reject);
    stream.on("close", () => {
      session.close();
      resolve({ headers: responseHeaders, trailers, body: Buffer.concat(chunks) });
    });
    stream.end(frame);
  });
}

describe("a gRPC call to a method the server does not have", () => {
  it("gets grpc-status UNIMPLEMENTED over gRPC, not an HTTP 404", async () => {
    const answer = await rawCall("/foo.v1.Bar/Baz", {}, new Uint8Array());
    expect(answer.headers[constants.HTTP2_HEADER_STATUS]).toBe(200);
    expect(answer.headers["content-type"]).toBe("application/grpc");
    expect({ ...answer.headers, ...answer.trailers }["grpc-status"]).toBe(String(Code.Unimplemented));
    expect(answer.body.length).toBe(0);
  });

  it("and over gRPC-Web, as a trailer frame", async () => {
    const response = await fetch(`${service.url}/calltrace.v1.TraceService/Nope`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto" },
      body: new Uint8Array(5),
    });
    expect(response.status).toBe(200);
    const body = Buffer.from(await response.arrayBuffer());
    expect(body[0]).toBe(0x80);
    expect(body.subarray(5).toString()).toMatch(/^grpc-status: 12\r\n/);
  });

  it("and over gRPC-Web text, as a base64 trailer frame", async () => {
    const response = await fetch(`${service.url}/foo.v1.Bar/Baz`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web-text" },
      body: Buffer.alloc(5).toString("base64"),
    });
    expect(response.headers.get("content-type")).toBe("application/grpc-web-text");
    const frame = Buffer.from(await response.text(), "base64");
    expect(frame[0]).toBe(0x80);
    expect(frame.subarray(5).toString()).toMatch(/^grpc-status: 12\r\ngrpc-message: unknown%20method%20%2Ffoo.v1.Bar%2FBaz\r\n$/);
  });

  it("while other requests to unknown paths stay a JSON 404", async () => {
    const response = await fetch(`${service.url}/foo.v1.Bar/Baz`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ error: "Not found" });
  });
});

describe("refusals over gRPC carry the x-ratelimit-* values as response headers (README)", () => {
  it("on INVALID_ARGUMENT and on RESOURCE_EXHAUSTED alike, never as trailers", async () => {
    const { key } = await service.createKey("free");
    const invalid = await rawCall("/calltrace.v1.TraceService/Ingest", { authorization: `Bearer ${key}` }, new Uint8Array());
    expect(invalid.trailers["grpc-status"]).toBe(String(Code.InvalidArgument));
    expect(invalid.headers["x-ratelimit-limit"]).toBe("2");
    expect(invalid.headers["x-ratelimit-remaining"]).toBe("1");
    expect(invalid.trailers["x-ratelimit-limit"]).toBeUndefined();
    await rawCall("/calltrace.v1.TraceService/Ingest", { authorization: `Bearer ${key}` }, new Uint8Array());
    const limited = await rawCall("/calltrace.v1.TraceService/Ingest", { authorization: `Bearer ${key}` }, new Uint8Array());
    expect(limited.trailers["grpc-status"]).toBe(String(Code.ResourceExhausted));
    expect(limited.headers["x-ratelimit-remaining"]).toBe("0");
    expect(Number(limited.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(limited.trailers["x-ratelimit-remaining"]).toBeUndefined();
    expect(limited.trailers["grpc-status-details-bin"]).toBeDefined();
  });
});

describe("grpc.health.v1.Health", () => {
  it("Check says SERVING for the server and for each service, NOT_FOUND for an unknown one", async () => {
    const health = createClient(Health, createGrpcTransport({ baseUrl: service.url }));
    expect((await health.check({})).status).toBe(Serving.SERVING);
    expect((await health.check({ service: "calltrace.v1.TraceService" })).status).toBe(Serving.SERVING);
    const unknown = await health.check({ service: "foo.v1.Bar" }).catch((e: unknown) => ConnectError.from(e));
    expect(unknown).toBeInstanceOf(ConnectError);
    expect((unknown as ConnectError).code).toBe(Code.NotFound);
  });

  it("List names every service; Watch sends the current status first", async () => {
    const health = createClient(Health, createGrpcTransport({ baseUrl: service.url }));
    const { statuses } = await health.list({});
    expect(Object.keys(statuses)).toEqual(expect.arrayContaining(["", "calltrace.v1.TraceService", "grpc.health.v1.Health"]));
    const watching = new AbortController();
    for await (const update of health.watch({ service: "calltrace.v1.TraceService" }, { signal: watching.signal })) {
      expect(update.status).toBe(Serving.SERVING);
      watching.abort();
      break;
    }
  });

  it("a Watch ends when the server shuts down, and does not hold the shutdown up", async () => {
    const own = await startTestService();
    const health = createClient(Health, createGrpcTransport({ baseUrl: own.url }));
    const updates: Serving[] = [];
    const watching = (async () => {
      for await (const update of health.watch({})) updates.push(update.status);
    })();
    await expect.poll(() => updates.length).toBe(1);
    const started = performance.now();
    await own.close(10_000);
    await watching;
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(updates).toEqual([Serving.SERVING]);
  });
});

describe("gRPC server reflection", () => {
  it("v1alpha lists the services and serves a file with its dependencies", async () => {
    const reflection = createClient(ServerReflection, createGrpcTransport({ baseUrl: service.url }));
    const answers = [];
    const requests = (async function* () {
      yield { messageRequest: { case: "listServices" as const, value: "" } };
      yield { messageRequest: { case: "fileContainingSymbol" as const, value: "calltrace.v1.TraceService.Ingest" } };
      yield { messageRequest: { case: "fileByFilename" as const, value: "no/such.proto" } };
    })();
    for await (const answer of reflection.serverReflectionInfo(requests)) answers.push(answer.messageResponse);
    const [list, file, missing] = answers;
    expect(list?.case === "listServicesResponse" && list.value.service.map((s) => s.name)).toEqual(
      expect.arrayContaining(["calltrace.v1.TraceService", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"]),
    );
    expect(file?.case).toBe("fileDescriptorResponse");
    // the file itself and what it imports: trace.proto, buf/validate/validate.proto, google/protobuf/…
    expect(file?.case === "fileDescriptorResponse" && file.value.fileDescriptorProto.length).toBeGreaterThan(3);
    expect(missing?.case === "errorResponse" && missing.value.errorCode).toBe(Code.NotFound);
  });

  it("grpcurl lists and describes the services with no schema of its own", async () => {
    const { stdout } = await run(grpcurl(), ["-plaintext", address, "list"]);
    expect(stdout.trim().split("\n")).toEqual(
      expect.arrayContaining(["calltrace.v1.TraceService", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"]),
    );
    const described = await run(grpcurl(), ["-plaintext", address, "describe", "calltrace.v1.Trace"]);
    expect(described.stdout).toContain("buf.validate.field");
  });
});

describe("the README's gRPC commands", () => {
  it("run verbatim (with this server's address) and store both traces", async () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const block = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? "").find((b) => b.includes("grpcurl"));
    expect(block).toBeDefined();
    const { key, id } = await service.createKey("pro");
    const script = `set -e\n${block!.replaceAll("127.0.0.1:8080", address)}`;
    const root = new URL("../..", import.meta.url).pathname;
    const { stdout } = await run("bash", ["-c", script], {
      cwd: root,
      env: { ...process.env, CALLTRACE_API_KEY: key, PATH: `${dirname(grpcurl())}:${process.env.PATH}` },
    });
    expect(stdout).toContain('"status": "ok"');
    expect(stdout).toContain("calltrace.v1.TraceService");
    expect(stdout).toContain('"status": "SERVING"');
    const stored = [];
    for await (const t of service.store.exportTraces({})) if (t.keyId === id) stored.push(t);
    expect(stored).toHaveLength(2);
  });
});
