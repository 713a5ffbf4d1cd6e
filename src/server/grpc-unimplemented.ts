import { Code } from "@connectrpc/connect";
import type { NodeResponse } from "./node-types.js";

/**
 * The gRPC answer to a method this server does not have: status UNIMPLEMENTED, as grpc-go and
 * grpc-java give it, instead of an HTTP 404 that gRPC clients report as a transport failure.
 * gRPC gets it as headers and trailers with no message; gRPC-Web as a trailer frame in the body
 * (base64 for grpc-web-text).
 */
export function answerUnimplemented(res: NodeResponse, contentType: string, path: string): void {
  if (res.headersSent || res.destroyed) return;
  const status = String(Code.Unimplemented);
  const message = `unknown method ${path}`;
  if (!contentType.startsWith("application/grpc-web")) {
    res.writeHead(200, { "content-type": "application/grpc" });
    res.addTrailers({ "grpc-status": status, "grpc-message": encodeURIComponent(message) });
    res.end();
    return;
  }
  const trailer = Buffer.from(`grpc-status: ${status}\r\ngrpc-message: ${encodeURIComponent(message)}\r\n`, "latin1");
  const head = Buffer.alloc(5);
  head[0] = 0x80;
  head.writeUInt32BE(trailer.length, 1);
  const frame = Buffer.concat([head, trailer]);
  const text = contentType.startsWith("application/grpc-web-text");
  res.writeHead(200, { "content-type": text ? "application/grpc-web-text" : "application/grpc-web+proto" });
  res.end(text ? frame.toString("base64") : frame);
}
