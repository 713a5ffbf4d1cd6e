/** Says which parts of the address were ignored (and what was shown instead). */
export function UrlNotice({ problems }: { problems: string[] }) {
  if (problems.length === 0) return null;
  return (
    <p class="notice" role="status" data-url-notice>
      Part of this address was not understood and was ignored: {problems.join("; ")}. Showing the defaults instead.
    </p>
  );
}
