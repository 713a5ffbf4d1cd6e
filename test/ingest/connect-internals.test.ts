import { gzipSync } from "node:zlib";
import { Code, ConnectError } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import {
  codeToHttpStatus,
  compressionNegotiate,
  envelopeDecompress,
  errorToJsonBytes,
  parseConnectTimeout,
  parseGrpcTimeout,
  readAllBytes,
  setTrailerStatus,
  trailerMux,
} from "../../src/server/connect-internals.js";

// The direct unary path answers with connect-es's own @private functions (outside semver), all
// imported through src/server/connect-internals.ts. These pin what the direct path relies on, so
// that a connect-es upgrade which changes one fails here, loudly, before it changes the wire.
const accepted = [compressionGzip, compressionBrotli];

async function* chunks(...parts: string[]) {
  for (const part of parts) yield new TextEncoder().encode(part);
}

describe("connect-es internals the direct unary path uses", () => {
  it("compressionNegotiate: picks the request's and the response's encoding, refuses an unknown one", () => {
    const both = compressionNegotiate(accepted, "gzip", "br, gzip", "grpc-accept-encoding");
    expect([both.request?.name, both.response?.name, both.error]).toEqual(["gzip", "br", undefined]);
    const identity = compressionNegotiate(accepted, null, null, "grpc-accept-encoding");
    expect([identity.request, identity.response, identity.error]).toEqual([null, null, undefined]);
    const unknown = compressionNegotiate(accepted, "zstd", null, "grpc-accept-encoding");
    expect(unknown.error?.code).toBe(Code.Unimplemented);
    expect(unknown.error?.rawMessage).toBe('unknown compression "zstd": supported encodings are gzip,br');
    expect(unknown.error?.metadata.get("grpc-accept-encoding")).toBe("gzip,br");
  });

  it("envelopeDecompress: undoes a compressed envelope, refuses one past readMaxBytes", async () => {
    const data = gzipSync("hello");
    const plain = await envelopeDecompress({ flags: 1, data }, compressionGzip, 100);
    expect([plain.flags, Buffer.from(plain.data).toString()]).toEqual([0, "hello"]);
    const tooBig = await envelopeDecompress({ flags: 1, data }, compressionGzip, 3).catch((e: unknown) => e);
    expect(ConnectError.from(tooBig).code).toBe(Code.ResourceExhausted);
    const noEncoding = await envelopeDecompress({ flags: 1, data }, null, 100).catch((e: unknown) => e);
    expect(ConnectError.from(noEncoding).code).toBe(Code.Internal);
    expect(ConnectError.from(noEncoding).rawMessage).toMatch(/^received compressed envelope, but do not know how to decompress/);
  });

  it("readAllBytes: reads a body whole, refuses one past readMaxBytes or shorter than its Content-Length", async () => {
    expect(Buffer.from(await readAllBytes(chunks("ab", "cd"), 10, "4")).toString()).toBe("abcd");
    const tooBig = await readAllBytes(chunks("abc", "def"), 5, null).catch((e: unknown) => e);
    expect(ConnectError.from(tooBig).code).toBe(Code.ResourceExhausted);
    const declaredTooBig = await readAllBytes(chunks("a"), 5, "6").catch((e: unknown) => e);
    expect(ConnectError.from(declaredTooBig).code).toBe(Code.ResourceExhausted);
    const short = await readAllBytes(chunks("ab"), 10, "3").catch((e: unknown) => e);
    expect(ConnectError.from(short).code).toBe(Code.InvalidArgument);
  });

  it("codeToHttpStatus: the Connect protocol's HTTP status of each code", () => {
    const statuses = [
      Code.InvalidArgument,
      Code.Unauthenticated,
      Code.PermissionDenied,
      Code.ResourceExhausted,
      Code.Unavailable,
      Code.Internal,
    ];
    expect(statuses.map(codeToHttpStatus)).toEqual([400, 401, 403, 429, 503, 500]);
  });

  it("errorToJsonBytes: a Connect error body", () => {
    const body = errorToJsonBytes(new ConnectError("bad trace", Code.InvalidArgument), {});
    expect(JSON.parse(Buffer.from(body).toString())).toEqual({ code: "invalid_argument", message: "bad trace" });
  });

  it("parseConnectTimeout and parseGrpcTimeout: a deadline in ms, refusing a malformed one and one over the maximum", () => {
    expect(parseConnectTimeout("250", 1000)).toEqual({ timeoutMs: 250 });
    expect(parseConnectTimeout(null, 1000)).toEqual({});
    expect(parseConnectTimeout("abc", 1000).error?.code).toBe(Code.InvalidArgument);
    expect(parseConnectTimeout("2000", 1000).error?.code).toBe(Code.InvalidArgument);
    expect(parseGrpcTimeout("2S", Number.MAX_SAFE_INTEGER)).toEqual({ timeoutMs: 2000 });
    expect(parseGrpcTimeout("15m", Number.MAX_SAFE_INTEGER)).toEqual({ timeoutMs: 15 });
    expect(parseGrpcTimeout(null, 1000)).toEqual({});
    expect(parseGrpcTimeout("2X", 1000).error?.code).toBe(Code.InvalidArgument);
    expect(parseGrpcTimeout("2S", 1000).error?.code).toBe(Code.InvalidArgument);
  });

  it("trailerMux: Connect unary trailers become trailer-prefixed headers", () => {
    const merged = trailerMux(new Headers({ "x-a": "1" }), new Headers({ "x-b": "2" }));
    expect([...merged]).toEqual([
      ["trailer-x-b", "2"],
      ["x-a", "1"],
    ]);
  });

  it("setTrailerStatus: a gRPC status, its percent-encoded message and its metadata in trailers", () => {
    const trailer = new Headers();
    const error = new ConnectError("too big: 100%", Code.ResourceExhausted, { "x-quota": "0" });
    setTrailerStatus(trailer, error);
    expect(trailer.get("grpc-status")).toBe(String(Code.ResourceExhausted));
    expect(trailer.get("grpc-message")).toBe("too%20big%3A%20100%25");
    expect(trailer.get("x-quota")).toBe("0");
  });
});
