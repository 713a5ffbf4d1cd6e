import type { ProviderCall } from "./provider-call.js";

/**
 * Wraps a stream's async iterator so that its call is traced when the stream
 * ends, when the consumer stops early (`break`, `return()`: traced with what
 * was seen so far), when it throws (traced as an error, then rethrown
 * unchanged), or when the consumer drops it unfinished (see
 * ProviderCall.watch()). `observe` sees every item and returns `false` to
 * hide one from the consumer.
 */
export function tracedIterator<T>(
  source: AsyncIterator<T>,
  call: ProviderCall,
  observe: (item: T) => boolean,
): AsyncGenerator<T, void, undefined> {
  const iterator = iterate(source, call, observe);
  call.watch(iterator);
  return iterator;
}

async function* iterate<T>(
  source: AsyncIterator<T>,
  call: ProviderCall,
  observe: (item: T) => boolean,
): AsyncGenerator<T, void, undefined> {
  let finished = false;
  try {
    for (;;) {
      const step = await source.next();
      if (step.done) break;
      call.touch();
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
