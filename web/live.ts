// Build changes pushed by the daemon (GET /v1/events, Server-Sent Events; docs/web-app.md
// "Live updates"). EventSource sends the session cookie same-origin and reconnects by itself.
// While the stream is open the pages skip their polls; when it fails (a proxy that buffers or cuts
// it, a daemon too old to have it) they poll every 5 seconds as before.
import { useEffect, useRef } from "preact/hooks";
import type { Build } from "./types.ts";

export interface BuildEvents {
  /** True while the stream delivers changes: polls may be skipped. */
  live: () => boolean;
}

/**
 * Follows the build changes the caller may see: `onBuild` for each, `onReady` when the stream
 * (re)opened and nothing before it was replayed (reload what is shown).
 */
export function useBuildEvents(onBuild: (build: Build) => void, onReady: () => void): BuildEvents {
  const live = useRef(false);
  const handlers = useRef({ onBuild, onReady });
  handlers.current = { onBuild, onReady };
  useEffect(() => {
    if (typeof EventSource === "undefined") return;
    const source = new EventSource("/v1/events");
    source.addEventListener("ready", () => {
      live.current = true;
      // Changes before this point are not replayed: the page's load may have raced them.
      handlers.current.onReady();
    });
    source.addEventListener("build", (e) => {
      try {
        handlers.current.onBuild(JSON.parse((e as MessageEvent<string>).data) as Build);
      } catch {
        // A malformed event is skipped; the next poll or reconnect catches up.
      }
    });
    // The session or token behind the stream ended, or its user's role was lowered: reconnecting
    // would be refused, so the page goes back to polling, whose 401 leads to sign-in.
    source.addEventListener("revoked", () => {
      live.current = false;
      source.close();
    });
    source.onerror = () => {
      live.current = false;
    };
    return () => {
      live.current = false;
      source.close();
    };
  }, []);
  return { live: () => live.current };
}
