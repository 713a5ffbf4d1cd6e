import { connect, type Socket } from "node:net";
import { expect } from "vitest";
import { postTrace, traceBody } from "../../support/test-service.js";

/** A raw TCP connection to the service that records what the server sent and when it hung up. */
export interface RawConnection {
  socket: Socket;
  /** Everything the server sent, as latin1 text. */
  received(): string;
  /** Resolves when the server closes (or resets) the connection, or with false after `ms`. */
  closedWithin(ms: number): Promise<boolean>;
  isClosed(): boolean;
}

export async function openRaw(port: number): Promise<RawConnection> {
  const socket = connect(port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  let text = "";
  let closed = false;
  const closing = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")));
  socket.on("error", () => {});
  void closing.then(() => (closed = true));
  return {
    socket,
    received: () => text,
    isClosed: () => closed,
    async closedWithin(ms) {
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
      const result = await Promise.race([closing.then(() => true as const), timedOut]);
      clearTimeout(timer);
      return result;
    },
  };
}

/** Writes `bytes` one byte at a time every `everyMs`, until done or the server hangs up. Returns the bytes written. */
export async function trickle(connection: RawConnection, bytes: Buffer, everyMs: number): Promise<number> {
  for (let i = 0; i < bytes.length; i++) {
    if (connection.isClosed() || connection.socket.destroyed) return i;
    connection.socket.write(bytes.subarray(i, i + 1));
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  return bytes.length;
}

/** An honest client is still served: a valid trace gets 202 and /healthz answers. */
export async function expectServed(url: string, key: string): Promise<void> {
  const response = await postTrace(url, traceBody(key), { key });
  expect(response.status).toBe(202);
  expect(await response.json()).toEqual({ status: "ok" });
  expect((await fetch(`${url}/healthz`)).status).toBe(200);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
