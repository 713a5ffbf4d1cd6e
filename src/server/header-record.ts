import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http2";

/** An HTTP header name (RFC 9110 token). */
const token = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * Names already found to be tokens: the implementations set the same few names on every call.
 * Bounded, as a client's own names could reach it (error metadata).
 */
const checkedNames = new Set<string>();
const maxCheckedNames = 256;

/** A value fetch Headers would trim (leading or trailing whitespace) or refuse (CR, LF, NUL). */
const untidy = /^[\t\n\r ]|[\t\n\r ]$|[\r\n\0]/;

/**
 * The Headers an RPC implementation reads and writes, kept in a plain record of lowercase names,
 * the form Node takes and gives HTTP/2 headers in: the request's own header object is read in
 * place (pseudo-headers hidden), and the response's is handed to `stream.respond` as it is. The
 * fetch API's Headers validates, lowercases and sorts on every access, which cost a direct gRPC
 * call several copies in and out of records like these (D38). What is set is checked as the fetch
 * API checks it, so an implementation's bad header still fails where it is set.
 */
export class HeaderRecord implements Headers {
  constructor(readonly record: IncomingHttpHeaders | OutgoingHttpHeaders = {}) {}

  get(name: string): string | null {
    const key = name.toLowerCase();
    const value = key.startsWith(":") || !Object.hasOwn(this.record, key) ? undefined : this.record[key];
    return value === undefined ? null : Array.isArray(value) ? value.join(", ") : String(value);
  }

  has(name: string): boolean {
    return this.get(name) !== null;
  }

  set(name: string, value: string): void {
    if (!checkedNames.has(name)) {
      if (!token.test(name)) throw new TypeError(`invalid header name: ${JSON.stringify(name)}`);
      if (checkedNames.size < maxCheckedNames) checkedNames.add(name);
    }
    let text = String(value);
    // Most values need neither trimming nor refusing: one test instead of a replace and a test.
    if (untidy.test(text)) {
      text = text.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, "");
      if (/[\r\n\0]/.test(text)) throw new TypeError(`invalid value for header ${name}`);
    }
    this.record[name.toLowerCase()] = text;
  }

  append(name: string, value: string): void {
    const existing = this.get(name);
    this.set(name, existing === null ? value : `${existing}, ${value}`);
  }

  delete(name: string): void {
    delete this.record[name.toLowerCase()];
  }

  getSetCookie(): string[] {
    const value = this.record["set-cookie"];
    return value === undefined ? [] : Array.isArray(value) ? value.map(String) : [String(value)];
  }

  forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void {
    for (const [key, value] of this) callback.call(thisArg, value, key, this);
  }

  *entries(): HeadersIterator<[string, string]> {
    for (const key of Object.keys(this.record)) {
      const value = this.get(key);
      if (value !== null) yield [key, value];
    }
  }

  *keys(): HeadersIterator<string> {
    for (const [key] of this) yield key;
  }

  *values(): HeadersIterator<string> {
    for (const [, value] of this) yield value;
  }

  [Symbol.iterator](): HeadersIterator<[string, string]> {
    return this.entries();
  }
}
