import { useLayoutEffect, useRef, useState } from "preact/hooks";

/**
 * The rendered width of an element in CSS pixels, kept up to date: charts draw in a viewBox of
 * that width, so one SVG unit is one pixel and their text keeps its CSS size at every width.
 */
export function useWidth<T extends Element>(initial: number) {
  const ref = useRef<T>(null);
  const [width, setWidth] = useState(initial);
  useLayoutEffect(() => {
    const element = ref.current;
    if (!element) return;
    const measure = () => setWidth(Math.max(1, Math.round(element.getBoundingClientRect().width)) || initial);
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  return { ref, width };
}
