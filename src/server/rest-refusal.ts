import { ConnectError } from "@connectrpc/connect";
import { refusalReason, retryAfterOf, type RefusalReason } from "../ingest/ingest-errors.js";

/** A refusal as the spec's REST edge answers it: status, JSON body and headers. */
export interface RestRefusal {
  status: number;
  body: Record<string, string | number>;
  headers: Headers;
}

const shapes: Record<RefusalReason, { status: number; error: string; carries: "message" | "details" | "retry_after" }> = {
  INVALID_API_KEY: { status: 401, error: "Unauthorized", carries: "message" },
  AUTH_RATE_LIMITED: { status: 429, error: "Rate limit exceeded", carries: "retry_after" },
  RATE_LIMITED: { status: 429, error: "Rate limit exceeded", carries: "retry_after" },
  PAYLOAD_TOO_LARGE: { status: 413, error: "Payload too large", carries: "details" },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, error: "Unsupported media type", carries: "details" },
  VALIDATION_FAILED: { status: 400, error: "Validation error", carries: "details" },
  QUOTA_EXCEEDED: { status: 429, error: "Monthly quota exceeded", carries: "retry_after" },
  STORE_UNAVAILABLE: { status: 503, error: "Service unavailable", carries: "retry_after" },
};

/** Maps an error thrown by the ingest pipeline to the spec's status and body; anything unforeseen is a 500. */
export function restRefusal(error: unknown): RestRefusal {
  const reason = error instanceof ConnectError ? refusalReason(error) : undefined;
  if (!reason || !(error instanceof ConnectError)) {
    return { status: 500, body: { error: "Internal error" }, headers: new Headers() };
  }
  const shape = shapes[reason];
  const headers = new Headers(error.metadata);
  const body: Record<string, string | number> = { error: shape.error };
  if (shape.carries === "retry_after") body.retry_after = retryAfterOf(error) ?? 1;
  else body[shape.carries] = error.rawMessage;
  if (shape.status === 401) headers.set("www-authenticate", "Bearer");
  return { status: shape.status, body, headers };
}
