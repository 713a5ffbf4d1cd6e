import { promisify } from "node:util";
import { gunzip } from "node:zlib";
import { bodyInvalid, payloadTooLarge, unsupportedEncoding } from "../ingest/ingest-errors.js";

const gunzipAsync = promisify(gunzip);

/**
 * The body as sent, undone from its Content-Encoding (gzip, as OTLP exporters send it). The limit
 * applies to the inflated size, and inflating stops as soon as it is passed (zlib's
 * maxOutputLength), so a gzip bomb costs at most one limit's worth of memory and work.
 */
export async function decodedBody(raw: Buffer, contentEncoding: string | undefined, limit: number): Promise<Buffer> {
  const encoding = contentEncoding?.trim().toLowerCase();
  if (encoding === undefined || encoding === "" || encoding === "identity") return raw;
  if (encoding !== "gzip" && encoding !== "x-gzip") throw unsupportedEncoding(contentEncoding!);
  try {
    return await gunzipAsync(raw, { maxOutputLength: limit });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") throw payloadTooLarge(limit);
    throw bodyInvalid(`request body is not valid gzip (${(error as Error).message})`);
  }
}
