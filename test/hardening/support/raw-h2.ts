import { connect, type Socket } from "node:net";

/** HTTP/2 frame types this client sends or reads. */
export const FrameType = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8 } as const;
export const ErrorCode = { NO_ERROR: 0, PROTOCOL_ERROR: 1, INTERNAL_ERROR: 2, REFUSED_STREAM: 7, CANCEL: 8, ENHANCE_YOUR_CALM: 11 } as const;

export interface Frame {
  type: number;
  flags: number;
  stream: number;
  payload: Buffer;
}

const preface = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/**
 * A deliberately naive HTTP/2 client that writes frames as told, ignoring the server's
 * SETTINGS (concurrency, flow control): what a hostile client does, and what Node's own client
 * would refuse to do.
 */
export class RawH2 {
  readonly frames: Frame[] = [];
  /** Server SETTINGS values seen so far, by identifier. */
  readonly settings = new Map<number, number>();
  closed = false;
  private buffered = Buffer.alloc(0);
  private nextStream = 1;
  private waiters: (() => void)[] = [];

  private constructor(readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => this.receive(chunk));
    socket.on("close", () => {
      this.closed = true;
      this.wake();
    });
    socket.on("error", () => {});
  }

  static async open(port: number): Promise<RawH2> {
    const socket = connect(port, "127.0.0.1");
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    const client = new RawH2(socket);
    socket.write(preface);
    client.frame(FrameType.SETTINGS, 0, 0, Buffer.alloc(0));
    // A large connection window, so the server is never blocked on this client's account.
    const increment = Buffer.alloc(4);
    increment.writeUInt32BE(1 << 30);
    client.frame(FrameType.WINDOW_UPDATE, 0, 0, increment);
    return client;
  }

  frame(type: number, flags: number, stream: number, payload: Buffer): boolean {
    if (this.socket.destroyed) return false;
    const head = Buffer.alloc(9);
    head.writeUIntBE(payload.length, 0, 3);
    head[3] = type;
    head[4] = flags;
    head.writeUInt32BE(stream & 0x7fffffff, 5);
    return this.socket.write(Buffer.concat([head, payload]));
  }

  /** Opens a stream with a HEADERS frame; END_STREAM when `end`. Returns its id. */
  headers(headers: [string, string][], end: boolean): number {
    const stream = this.nextStream;
    this.nextStream += 2;
    this.frame(FrameType.HEADERS, 0x4 | (end ? 0x1 : 0), stream, hpack(headers));
    return stream;
  }

  data(stream: number, payload: Buffer, end: boolean): boolean {
    return this.frame(FrameType.DATA, end ? 0x1 : 0, stream, payload);
  }

  reset(stream: number, code: number = ErrorCode.CANCEL): void {
    const payload = Buffer.alloc(4);
    payload.writeUInt32BE(code);
    this.frame(FrameType.RST_STREAM, 0, stream, payload);
  }

  /** Frames of one type (and stream) received so far. */
  received(type: number, stream?: number): Frame[] {
    return this.frames.filter((f) => f.type === type && (stream === undefined || f.stream === stream));
  }

  /** Waits until `done()` holds or the connection closes, for at most `ms`. */
  async until(done: () => boolean, ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (!done() && !this.closed && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(100, Math.max(1, deadline - Date.now())));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return done();
  }

  close(): void {
    this.socket.destroy();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  private receive(chunk: Buffer): void {
    this.buffered = Buffer.concat([this.buffered, chunk]);
    while (this.buffered.length >= 9) {
      const length = this.buffered.readUIntBE(0, 3);
      if (this.buffered.length < 9 + length) break;
      const frame: Frame = {
        type: this.buffered[3]!,
        flags: this.buffered[4]!,
        stream: this.buffered.readUInt32BE(5) & 0x7fffffff,
        payload: Buffer.from(this.buffered.subarray(9, 9 + length)),
      };
      this.buffered = this.buffered.subarray(9 + length);
      this.frames.push(frame);
      if (frame.type === FrameType.SETTINGS && !(frame.flags & 0x1)) {
        for (let i = 0; i + 6 <= frame.payload.length; i += 6)
          this.settings.set(frame.payload.readUInt16BE(i), frame.payload.readUInt32BE(i + 2));
        this.frame(FrameType.SETTINGS, 0x1, 0, Buffer.alloc(0));
      }
      if (frame.type === FrameType.PING && !(frame.flags & 0x1)) this.frame(FrameType.PING, 0x1, 0, frame.payload);
    }
    this.wake();
  }
}

/** HPACK: every header as a literal without indexing, no Huffman coding. */
export function hpack(headers: [string, string][]): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of headers) {
    parts.push(Buffer.from([0x00]), hpackString(name), hpackString(value));
  }
  return Buffer.concat(parts);
}

function hpackString(text: string): Buffer {
  const bytes = Buffer.from(text, "latin1");
  return Buffer.concat([hpackInteger(bytes.length, 7), bytes]);
}

function hpackInteger(n: number, prefixBits: number): Buffer {
  const max = (1 << prefixBits) - 1;
  if (n < max) return Buffer.from([n]);
  const out = [max];
  let rest = n - max;
  while (rest >= 128) {
    out.push((rest % 128) + 128);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return Buffer.from(out);
}

/** The error code of a RST_STREAM or GOAWAY frame. */
export function errorCodeOf(frame: Frame): number {
  return frame.type === FrameType.GOAWAY ? frame.payload.readUInt32BE(4) : frame.payload.readUInt32BE(0);
}

/** A gRPC message envelope: flags, length, bytes. */
export function grpcEnvelope(message: Uint8Array, announcedLength = message.length, flags = 0): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(announcedLength >>> 0, 1);
  return Buffer.concat([head, message]);
}
