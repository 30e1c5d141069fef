// The webhook delivery log, a project's (its Webhook deliveries tab) and the admin's (Deliveries):
// the newest page, read again every 10 s, and older pages appended on "Load older", following the
// API's cursor (docs/webhooks.md "The delivery log") as GitHub's "Recent Deliveries" does. A filter
// starts the log again from its newest page. The admin's log reads at most 5,000 deliveries for a
// page filtered by result; such a page says where it stopped, and so does the log.
import { useEffect, useRef, useState } from "preact/hooks";
import { get, query } from "../api.ts";
import { FilterSelect, Notice, StatusBadge } from "../components.tsx";
import { ago, dateTime, shortSha } from "../format.ts";
import type { Delivery } from "../types.ts";

const RESULTS = ["built", "ignored", "duplicate", "rejected", "failed"];

interface DeliveryPage {
  deliveries: Delivery[];
  next_cursor: string | null;
  /** The admin log only: where a page filtered by result stopped reading. */
  searched_back_to?: number | null;
}

/** What the log shows: the deliveries of the pages read so far, newest first, and where the next older page starts. */
interface Shown {
  /** The listing and filter these pages are of, so a page of another filter, answered late, is not mixed in. */
  url: string;
  deliveries: Delivery[];
  next: string | null;
  searchedBackTo: number | null;
  pages: number;
}

function fromPage(url: string, page: DeliveryPage): Shown {
  return { url, deliveries: page.deliveries, next: page.next_cursor, searchedBackTo: page.searched_back_to ?? null, pages: 1 };
}

/**
 * The newest page read again, over what is shown. While only that page is shown it replaces it.
 * With older pages below, its new deliveries go on top when it reaches what is shown: it holds one
 * of them, or it is short of `limit` (it read to the end of its stretch of the log, which begins
 * where the shown log began, unless 5,000 deliveries arrived in between). When it does not, more
 * deliveries may lie between, so the log starts again from the newest page rather than show a gap.
 */
function withNewest(shown: Shown | null, url: string, limit: number, page: DeliveryPage): Shown {
  if (!shown || shown.url !== url || shown.pages === 1 || page.next_cursor === null) return fromPage(url, page);
  const ids = new Set(shown.deliveries.map((d) => d.id));
  const reaches = page.deliveries.length < limit || page.deliveries.some((d) => ids.has(d.id));
  if (!reaches) return fromPage(url, page);
  return { ...shown, deliveries: [...page.deliveries.filter((d) => !ids.has(d.id)), ...shown.deliveries] };
}

export function DeliveryLog({ path, limit }: { path: string; limit: number }) {
  const [result, setResult] = useState("");
  const url = path + query({ result, limit });
  const [shown, setShown] = useState<Shown | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [loadingOlder, setLoadingOlder] = useState(false);
  const currentUrl = useRef(url);
  currentUrl.current = url;

  useEffect(() => {
    setShown(null);
    setError(null);
    let current = true;
    const readNewest = async () => {
      try {
        const page = await get<DeliveryPage>(url);
        if (!current) return;
        setShown((s) => withNewest(s, url, limit, page));
        setError(null);
      } catch (e) {
        if (current) setError(e as Error);
      }
    };
    void readNewest();
    const timer = setInterval(() => {
      if (document.visibilityState === "visible") void readNewest();
    }, 10_000);
    return () => {
      current = false;
      clearInterval(timer);
    };
  }, [url]);

  const loadOlder = async (from: Shown) => {
    setLoadingOlder(true);
    try {
      const page = await get<DeliveryPage>(path + query({ result, limit, cursor: from.next }));
      if (currentUrl.current !== from.url) return;
      // Appended only below the page it continues (the newest page, read again, may have started the log over).
      setShown((s) => {
        if (!s || s.url !== from.url || s.next !== from.next) return s;
        const ids = new Set(s.deliveries.map((d) => d.id));
        return {
          ...s,
          deliveries: [...s.deliveries, ...page.deliveries.filter((d) => !ids.has(d.id))],
          next: page.next_cursor,
          searchedBackTo: page.searched_back_to ?? null,
          pages: s.pages + 1,
        };
      });
      setError(null);
    } catch (e) {
      setError(e as Error);
    } finally {
      setLoadingOlder(false);
    }
  };

  return (
    <>
      <FilterSelect id="delivery-result" label="Result" inline value={result} set={setResult} options={RESULTS} />
      {error && <Notice kind="error">{`Could not load deliveries: ${error.message}`}</Notice>}
      {!shown && !error && (
        <p class="muted" role="status">
          Loading deliveries…
        </p>
      )}
      {shown && (
        <>
          {shown.deliveries.length === 0 && !shown.searchedBackTo && <p class="muted">No deliveries.</p>}
          <DeliveryList deliveries={shown.deliveries} />
          {shown.next && shown.searchedBackTo !== null && (
            <p class="muted searched-back" role="status">
              {shown.deliveries.length === 0 ? `No ${result} deliveries found yet: searched` : "Searched"} back to{" "}
              <time dateTime={new Date(shown.searchedBackTo * 1000).toISOString()}>{dateTime(shown.searchedBackTo)}</time>; load older to search further.
            </p>
          )}
          {shown.next ? (
            <button type="button" class="secondary" disabled={loadingOlder} onClick={() => void loadOlder(shown)}>
              {loadingOlder ? "Loading older…" : "Load older"}
            </button>
          ) : (
            shown.pages > 1 && <p class="muted">No older deliveries.</p>
          )}
        </>
      )}
    </>
  );
}

export function DeliveryList({ deliveries }: { deliveries: Delivery[] }) {
  if (deliveries.length === 0) return null;
  return (
    <ul class="deliveries">
      {deliveries.map((d) => (
        <li key={d.id} class="panel">
          <div>
            <StatusBadge status={d.result} /> <strong>{d.event}</strong>
            {d.action ? ` (${d.action})` : ""} from {d.host} · {d.repository_full_name ?? "unknown repository"} ·{" "}
            {d.commit_sha ? <code>{shortSha(d.commit_sha)}</code> : "no commit"} · <span title={dateTime(d.received_at)}>{ago(d.received_at)}</span>
          </div>
          <p>{d.reason}</p>
          {d.decisions.length > 0 && (
            <ul>
              {d.decisions.map((c) => (
                <li>
                  {c.pipeline_name}: {c.build ? "built" : "not built"} — {c.reason}
                  {c.build_id && d.project_id && (
                    <>
                      {" "}
                      <a href={`/projects/${encodeURIComponent(d.project_id)}/builds/${encodeURIComponent(c.build_id)}`}>build #{c.build_number}</a>
                    </>
                  )}
                </li>
              ))}
            </ul>
          )}
        </li>
      ))}
    </ul>
  );
}
