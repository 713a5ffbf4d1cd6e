import type { ProviderCall } from "./provider-call.js";

/**
 * Wraps a stream's async iterator so that its call is traced when the stream
 * ends, when the consumer stops early (`break`, `return()`: traced with what
 * was seen so far) or when it throws (traced as an error, then rethrown
 * unchanged). `observe` sees every item and returns `false` to hide one from
 * the consumer.
 */
export async function* tracedIterator<T>(
  source: AsyncIterator<T>,
  call: ProviderCall,
  observe: (item: T) => boolean,
): AsyncGenerator<T, void, undefined> {
  let finished = false;
  try {
    for (;;) {
      const step = await source.next();
      if (step.done) break;
      let visible = true;
      try {
        visible = observe(step.value);
      } catch {
        // A reader that trips on an unexpected event must not break the stream.
      }
      if (visible) yield step.value;
    }
    finished = true;
    call.succeed();
  } catch (error) {
    finished = true;
    call.fail(error);
    throw error;
  } finally {
    if (!finished) {
      call.succeed();
      // Let the source abort its request, as it would without us.
      await source.return?.();
    }
  }
}
