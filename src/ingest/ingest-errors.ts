import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema, ErrorInfoSchema, RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { describeProblems, type FieldProblem, inContractOrder } from "./trace-validation.js";

/** Why a request was refused; travels as a google.rpc.ErrorInfo detail so every protocol edge can map it. */
export type RefusalReason =
  | "INVALID_API_KEY"
  | "AUTH_RATE_LIMITED"
  | "RATE_LIMITED"
  | "PAYLOAD_TOO_LARGE"
  | "UNSUPPORTED_MEDIA_TYPE"
  | "VALIDATION_FAILED"
  | "QUOTA_EXCEEDED"
  | "STORE_UNAVAILABLE";

const errorDomain = "calltrace.dev";

/** The spec's texts: the ConnectError message equals the REST body's `message` or `details` (D17). */
export const refusalText = {
  invalidApiKey: "Invalid API key",
  rateLimited: "Rate limit exceeded",
  quotaExceeded: "Monthly quota exceeded",
  unavailable: "Service unavailable",
} as const;

function refusal(
  code: Code,
  reason: RefusalReason,
  message: string,
  headers?: HeadersInit,
  retryAfter?: number,
  badRequest?: FieldProblem[],
): ConnectError {
  const details = [{ desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason, domain: errorDomain }) }];
  if (badRequest?.length) {
    const fieldViolations = badRequest.map((p) => ({ field: p.field, description: p.problem }));
    details.push({ desc: BadRequestSchema, value: create(BadRequestSchema, { fieldViolations }) } as never);
  }
  const metadata = new Headers(headers);
  if (retryAfter !== undefined) {
    details.push({ desc: RetryInfoSchema, value: create(RetryInfoSchema, { retryDelay: { seconds: BigInt(retryAfter) } }) } as never);
    metadata.set("retry-after", String(retryAfter));
  }
  return new ConnectError(message, code, metadata, details);
}

export const invalidApiKey = () => refusal(Code.Unauthenticated, "INVALID_API_KEY", refusalText.invalidApiKey);

export const authRateLimited = (retryAfter: number) =>
  refusal(Code.ResourceExhausted, "AUTH_RATE_LIMITED", refusalText.rateLimited, undefined, retryAfter);

export const rateLimited = (retryAfter: number, headers: HeadersInit) =>
  refusal(Code.ResourceExhausted, "RATE_LIMITED", refusalText.rateLimited, headers, retryAfter);

// Refusals after admission carry no rate-limit headers: the edge already has them from the Admission.
// A quota refusal carries the X-Quota-* headers (D11).

export const quotaExceeded = (retryAfter: number, quotaHeaders: HeadersInit) =>
  refusal(Code.ResourceExhausted, "QUOTA_EXCEEDED", refusalText.quotaExceeded, quotaHeaders, retryAfter);

export const payloadTooLarge = (limit: number) =>
  refusal(Code.ResourceExhausted, "PAYLOAD_TOO_LARGE", `request body exceeds the limit of ${limit} bytes`);

export const unsupportedMediaType = (contentType: string | undefined) =>
  refusal(
    Code.InvalidArgument,
    "UNSUPPORTED_MEDIA_TYPE",
    `Content-Type must be application/json, got ${contentType ? JSON.stringify(contentType) : "none"}`,
  );

/**
 * D7: every problem in one message, in the contract's field order; over gRPC and Connect also as a
 * google.rpc.BadRequest with one field violation per named field (fields named as in the Trace).
 */
export function validationFailed(problems: FieldProblem[]): ConnectError {
  const ordered = inContractOrder(problems);
  const named = ordered.filter((p) => p.field !== "");
  return refusal(Code.InvalidArgument, "VALIDATION_FAILED", describeProblems(ordered), undefined, undefined, named);
}

/** D3: the body's api_key is not the key that authenticated the request. */
export const keyMismatch = () => {
  const problem = { field: "api_key", problem: "does not match the API key in the Authorization header" };
  return refusal(Code.InvalidArgument, "VALIDATION_FAILED", `${problem.field} ${problem.problem}`, undefined, undefined, [problem]);
};

/** A problem with the request body as a whole (empty, not JSON), which names no field. */
export const bodyInvalid = (problem: string) => validationFailed([{ field: "", problem }]);

export const unsupportedEncoding = (encoding: string) =>
  refusal(Code.InvalidArgument, "UNSUPPORTED_MEDIA_TYPE", `Content-Encoding must be gzip or identity, got ${JSON.stringify(encoding)}`);

export const storeUnavailable = (retryAfter: number) =>
  refusal(Code.Unavailable, "STORE_UNAVAILABLE", refusalText.unavailable, undefined, retryAfter);

/** The reason a refusal was built with, or undefined for any other error. */
export function refusalReason(error: ConnectError): RefusalReason | undefined {
  const info = error.findDetails(ErrorInfoSchema).find((d) => d.domain === errorDomain);
  return info?.reason as RefusalReason | undefined;
}

/** The RetryInfo delay in whole seconds, when the refusal carries one. */
export function retryAfterOf(error: ConnectError): number | undefined {
  const delay = error.findDetails(RetryInfoSchema)[0]?.retryDelay;
  return delay ? Number(delay.seconds) : undefined;
}
