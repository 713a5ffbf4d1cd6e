import { useEffect, useState } from "preact/hooks";

/** The app's routes live under /app/; the server answers index.html for all of them. */
export const base = "/app/";

export function navigate(path: string): void {
  if (location.pathname + location.search === path) return;
  history.pushState(null, "", path);
  dispatchEvent(new PopStateEvent("popstate"));
}

/** The current location, re-rendering on navigation. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const read = () => ({ path: location.pathname.slice(base.length - 1) || "/", query: new URLSearchParams(location.search) });
  const [loc, setLoc] = useState(read);
  useEffect(() => {
    const update = () => setLoc(read());
    addEventListener("popstate", update);
    return () => removeEventListener("popstate", update);
  }, []);
  return loc;
}

/** A same-app link that navigates without reloading. */
export function onLinkClick(event: MouseEvent): void {
  const anchor = (event.target as Element).closest("a");
  if (!anchor || anchor.target || anchor.hasAttribute("download") || event.metaKey || event.ctrlKey || event.shiftKey) return;
  const url = new URL(anchor.href);
  if (url.origin !== location.origin || !url.pathname.startsWith(base)) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
}
