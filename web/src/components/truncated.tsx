/**
 * Text that may be very long (a 256-character model name): cut to its box with an ellipsis, the
 * whole value on hover (title) and on keyboard focus (the box grows while focused). In a legend
 * or bar list the list is the one tab stop instead (`focusable={false}`), and shows every name whole.
 */
export function Truncated({ text, class: className = "", focusable = true }: { text: string; class?: string; focusable?: boolean }) {
  return (
    <span class={`truncate ${className}`} title={text} tabIndex={focusable ? 0 : undefined}>
      {text}
    </span>
  );
}
