import { ConnectError } from "@connectrpc/connect";

/** The error an RPC that must fail failed with; throws when it succeeded. */
export async function refusal(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error("expected the call to fail");
}
