import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "../log/logger.js";

/**
 * Logs what a dashboard call failed on when it was not a refusal (a ConnectError) but a fault,
 * such as a store error, with the request id the response carries and the cause; the caller gets
 * INTERNAL naming that request id, never the cause itself. Without it, connect-es answers
 * "internal error" and nothing says why.
 */
export function unexpectedErrors(logger: Logger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (error) {
      if (error instanceof ConnectError) throw error;
      const reqId = req.header.get("x-request-id") ?? "";
      logger.error({ err: error, reqId, procedure: `${req.service.typeName}/${req.method.name}` }, "dashboard call failed");
      throw new ConnectError(`internal error; request id ${reqId}`, Code.Internal);
    }
  };
}
