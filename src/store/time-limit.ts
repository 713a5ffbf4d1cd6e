/**
 * `work`, or a rejection with `timeoutError()` once `ms` have passed, whichever comes first. For
 * store calls on a request's path: a driver's own timeout does not cover every wait (the MongoDB
 * driver let a key lookup run to nearly twice its timeoutMS while the server stalled).
 */
export async function withTimeLimit<T>(work: Promise<T>, ms: number, timeoutError: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([work, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(timeoutError()), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
