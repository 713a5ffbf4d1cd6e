/**
 * Text that may be very long (a 256-character model name): cut to its box with an ellipsis, the
 * whole value on hover (title) and on keyboard focus (the box grows while focused).
 */
export function Truncated({ text, class: className = "" }: { text: string; class?: string }) {
  return (
    <span class={`truncate ${className}`} title={text} tabIndex={0}>
      {text}
    </span>
  );
}
