/** Emails compare case-insensitively. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

const local = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const label = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const topLevel = /^([a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;

/**
 * Whether a normalized email looks deliverable on the internet: a plain local part, and a
 * domain of at least two labels ending in a top-level domain of letters. Refuses what the
 * contract's syntax check lets through (`a@b`, `root@localhost`, `x@127.0.0.1`).
 */
export function isDeliverableEmail(email: string): boolean {
  if (email.length > 254) return false;
  const at = email.lastIndexOf("@");
  if (at < 1 || at > 64) return false;
  const labels = email.slice(at + 1).split(".");
  return (
    local.test(email.slice(0, at)) && labels.length >= 2 && labels.every((l) => label.test(l)) && topLevel.test(labels[labels.length - 1]!)
  );
}
