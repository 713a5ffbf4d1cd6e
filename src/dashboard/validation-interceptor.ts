import type { DescField } from "@bufbuild/protobuf";
import { createValidator } from "@bufbuild/protovalidate";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

const validator = createValidator();

/** Refuses a request that breaks its message's protovalidate rules, naming each field and why. */
export function validationInterceptor(): Interceptor {
  return (next) => async (req) => {
    if (!req.stream) {
      const result = validator.validate(req.method.input, req.message);
      if (result.kind === "error") throw result.error;
      if (result.kind === "invalid") {
        const problems = result.violations.map((v) => `${v.field.map((f) => (f as DescField).name ?? String(f)).join(".")}: ${v.message}`);
        throw new ConnectError(problems.join("; "), Code.InvalidArgument);
      }
    }
    return next(req);
  };
}
