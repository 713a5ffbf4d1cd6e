import { useEffect, useState } from "preact/hooks";

/** The app's routes live under /app/; the server answers index.html for all of them. */
export const base = "/app/";

/** A project's pages live under /app/p/<projectId>/, so a shared link opens the same project. */
const projectPath = /^\/app\/p\/([^/]+)(\/.*)?$/;

/** Where the current URL is: its project (empty outside one), the page's path within it, and its query. */
export interface Location {
  projectId: string;
  path: string;
  query: URLSearchParams;
}

function readLocation(): Location {
  const query = new URLSearchParams(location.search);
  const inProject = projectPath.exec(location.pathname);
  if (inProject) return { projectId: decodePart(inProject[1]!), path: inProject[2] || "/", query };
  return { projectId: "", path: location.pathname.slice(base.length - 1) || "/", query };
}

function decodePart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/** The project named by the current URL; "" outside one. */
export function currentProjectId(): string {
  return readLocation().projectId;
}

/** The root of a project's pages (the current one by default), ending in "/". */
export function projectBase(projectId = currentProjectId()): string {
  return `${base}p/${encodeURIComponent(projectId)}/`;
}

export function navigate(path: string, replace = false): void {
  if (location.pathname + location.search === path) return;
  if (replace) history.replaceState(null, "", path);
  else history.pushState(null, "", path);
  dispatchEvent(new PopStateEvent("popstate"));
}

/** The current location, re-rendering on navigation. */
export function useLocation(): Location {
  const [loc, setLoc] = useState(readLocation);
  useEffect(() => {
    const update = () => setLoc(readLocation());
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
