// Client-side routes on the History API: links inside the app change the page without a reload,
// and every path is also a deep link (the daemon answers any non-API path with the app).
import { signal } from "@preact/signals";

export const location = signal({ path: window.location.pathname, search: window.location.search, hash: window.location.hash });

function sync(): void {
  location.value = { path: window.location.pathname, search: window.location.search, hash: window.location.hash };
}

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (options.replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  sync();
  if (!to.includes("#")) window.scrollTo(0, 0);
}

window.addEventListener("popstate", sync);
window.addEventListener("hashchange", sync);

// Plain <a href="/…"> links navigate inside the app (not downloads, new tabs or the API).
document.addEventListener("click", (event) => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const anchor = (event.target as Element | null)?.closest?.("a");
  if (!anchor || anchor.target || anchor.hasAttribute("download")) return;
  const url = new URL(anchor.href, window.location.href);
  if (url.origin !== window.location.origin || url.pathname.startsWith("/v1/")) return;
  event.preventDefault();
  if (url.pathname === window.location.pathname && url.search === window.location.search && url.hash) {
    history.pushState(null, "", url.hash);
    sync();
    return;
  }
  navigate(url.pathname + url.search + url.hash);
});

/** Matches "/projects/:project_id" against a path; the decoded parameters, or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const a = pattern.split("/").filter(Boolean);
  const b = path.split("/").filter(Boolean);
  if (a.length !== b.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    const p = a[i]!;
    if (p.startsWith(":")) params[p.slice(1)] = decodeURIComponent(b[i]!);
    else if (p !== b[i]) return null;
  }
  return params;
}

export function queryParam(name: string): string | null {
  return new URLSearchParams(location.value.search).get(name);
}
