/**
 * Copies `text` to the clipboard; without the clipboard API (an insecure context) it selects the
 * field showing it and asks the browser to copy the selection.
 */
export async function copyText(text: string, field: HTMLInputElement | null): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    field?.select();
    document.execCommand("copy");
  }
}
