// A build: live status, steps with durations and exit codes, the log (a finished build's read in
// pages; a running build's followed over SSE with a stream token, resumed from the last line seen
// with a new token when the stream drops), artifacts with size and SHA-256, cancel and re-run; and
// the Tests tab (build-tests.tsx, `?tab=tests`) with what the build's test reports said.
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiFailure, get, post, query, sessionExpired } from "../api.ts";
import { FormError, LoadState, Notice, PageTitle, showingError, StatusBadge, Table, useLoad } from "../components.tsx";
import { ago, buildDurationText, bytes, dateTime, duration } from "../format.ts";
import { LogStore, LogView } from "../log-view.tsx";
import { location, navigate } from "../router.ts";
import type { Artifact, Build, BuildTests, LogLine, Project } from "../types.ts";
import { BuildOriginFacts, RetentionNotice } from "./build-origin.tsx";
import { TestsTab } from "./build-tests.tsx";
import { ContainerErrorNotice, ExecutorFacts } from "./build-executor.tsx";
import { BuildDeployments } from "./deployments.tsx";

const FINISHED = new Set(["succeeded", "failed", "canceled"]);
const PAGE = 5000;

function useBuildLog(buildId: string, initial: Build | undefined, onStatus: () => void) {
  const store = useRef(new LogStore());
  const [version, setVersion] = useState(0);
  const [complete, setComplete] = useState(false);
  const [connection, setConnection] = useState<"idle" | "live" | "reconnecting" | "revoked">("idle");
  const [revoked, setRevoked] = useState<string | null>(null);
  const started = useRef(false);

  useEffect(() => {
    store.current = new LogStore();
    started.current = false;
    setVersion(0);
    setComplete(false);
  }, [buildId]);

  useEffect(() => {
    if (!initial || started.current) return;
    started.current = true;
    let stopped = false;
    let source: EventSource | null = null;
    let pending: LogLine[] = [];
    let frame = 0;
    const flush = () => {
      frame = 0;
      if (store.current.append(pending) > 0) setVersion((v) => v + 1);
      pending = [];
    };
    const push = (line: LogLine) => {
      pending.push(line);
      if (!frame) frame = requestAnimationFrame(flush);
    };

    /** A finished build: its log read page by page, each page shown as it arrives. */
    const readAll = async () => {
      for (;;) {
        const page = await get<LogLine[]>(`/v1/builds/${encodeURIComponent(buildId)}/logs${query({ after_seq: store.current.lastSeq, limit: PAGE })}`);
        if (stopped) return;
        if (store.current.append(page) > 0) setVersion((v) => v + 1);
        if (page.filter((l) => l.seq !== null).length < PAGE) break;
        await new Promise((r) => setTimeout(r, 0));
      }
      setComplete(true);
    };

    /** A running build: SSE from the last line seen. A dropped stream comes back with a new token and last_event_id. */
    const connect = async () => {
      if (stopped) return;
      try {
        const { token } = await post<{ token: string }>(`/v1/builds/${encodeURIComponent(buildId)}/stream-token`);
        if (stopped) return;
        source = new EventSource(`/v1/builds/${encodeURIComponent(buildId)}/logs/stream${query({ token, last_event_id: store.current.lastSeq || undefined })}`);
      } catch {
        setConnection("reconnecting");
        setTimeout(connect, 2000);
        return;
      }
      let ended = false;
      source.addEventListener("open", () => setConnection("live"));
      source.addEventListener("log", (e) => push(JSON.parse((e as MessageEvent).data) as LogLine));
      source.addEventListener("truncated", (e) => {
        const cut = JSON.parse((e as MessageEvent).data) as { text: string };
        push({ seq: null, step: "", stream: "system", ts: Date.now() / 1000, text: cut.text });
      });
      source.addEventListener("status", () => onStatus());
      // The session or token that opened the stream ended, or its user lost access to the project
      // (docs/api.md "Streams end with their credential"): asking for another stream would only be
      // refused again, so the page says why and stops following.
      source.addEventListener("revoked", (e) => {
        ended = true;
        source?.close();
        flush();
        const why = JSON.parse((e as MessageEvent<string>).data) as { code: string; message: string };
        if (why.code === "invalid_session") sessionExpired.value = true;
        setRevoked(why.message);
        setConnection("revoked");
      });
      source.addEventListener("end", () => {
        ended = true;
        source?.close();
        flush();
        setComplete(true);
        setConnection("idle");
        onStatus();
      });
      source.addEventListener("error", async () => {
        if (ended || stopped) return;
        // CONNECTING: the browser retries by itself with Last-Event-ID. CLOSED: the token expired
        // (401) or the build ended (204): ask again with a new token from the last line seen.
        if (source?.readyState !== EventSource.CLOSED) {
          setConnection("reconnecting");
          return;
        }
        setConnection("reconnecting");
        flush();
        const build = await get<{ build: Build }>(`/v1/builds/${encodeURIComponent(buildId)}`).catch(() => null);
        if (build && FINISHED.has(build.build.status)) {
          await readAll().catch(() => setTimeout(connect, 2000));
          setConnection("idle");
          onStatus();
        } else setTimeout(connect, 1000);
      });
    };

    if (FINISHED.has(initial.status)) void readAll();
    else void connect();
    return () => {
      stopped = true;
      source?.close();
      if (frame) cancelAnimationFrame(frame);
    };
  }, [buildId, initial !== undefined]);

  return { store: store.current, version, complete, connection, revoked };
}

export function BuildPage({ project_id, build_id }: Record<string, string>) {
  const [build, setBuild] = useState<Build | undefined>(undefined);
  const [loadError, setLoadError] = useState<Error | null>(null);
  const [actionError, setActionError] = useState<ApiFailure | null>(null);
  const project = useLoad(() => get<{ project: Project }>(`/v1/projects/${encodeURIComponent(project_id!)}`), [project_id]);
  const refresh = async () => {
    try {
      setBuild((await get<{ build: Build }>(`/v1/builds/${encodeURIComponent(build_id!)}`)).build);
      setLoadError(null);
    } catch (err) {
      setLoadError(err as Error);
    }
  };
  useEffect(() => {
    setBuild(undefined);
    void refresh();
  }, [build_id]);
  // Status, steps and durations while the build is not finished.
  useEffect(() => {
    if (!build || FINISHED.has(build.status)) return;
    const timer = setInterval(refresh, 3000);
    return () => clearInterval(timer);
  }, [build?.id, build?.status]);

  const log = useBuildLog(build_id!, build, refresh);
  const artifacts = useLoad(() => get<{ artifacts: Artifact[] }>(`/v1/builds/${encodeURIComponent(build_id!)}/artifacts`), [build_id, build?.status]);
  const tests = useLoad(() => get<BuildTests>(`/v1/builds/${encodeURIComponent(build_id!)}/tests`), [build_id, build?.status]);
  const tab = new URLSearchParams(location.value.search).get("tab") === "tests" ? "tests" : "log";
  const hash = location.value.hash;
  const target = /^#L(\d+)$/.exec(hash)?.[1];

  if (!build) {
    return loadError ? <Notice kind="error">{`Could not load the build: ${loadError.message}`}</Notice> : <p role="status">Loading the build…</p>;
  }
  const role = project.data?.project.current_user_role;
  const mayAct = role === "developer" || role === "maintainer";
  const finished = FINISHED.has(build.status);
  return (
    <section class="build-page">
      <PageTitle title={`Build #${build.build_number}`}>
        {mayAct && !finished && (
          <button
            type="button"
            class="danger"
            onClick={() =>
              showingError(setActionError, async () => setBuild((await post<{ build: Build }>(`/v1/builds/${encodeURIComponent(build.id)}/cancel`)).build))
            }
          >
            Cancel build
          </button>
        )}
        {mayAct && finished && (
          <button
            type="button"
            onClick={() =>
              showingError(setActionError, async () => {
                const { build: next } = await post<{ build: Build }>(`/v1/builds/${encodeURIComponent(build.id)}/rerun`);
                navigate(`/projects/${encodeURIComponent(next.project_id)}/builds/${encodeURIComponent(next.id)}`);
              })
            }
          >
            Re-run
          </button>
        )}
      </PageTitle>
      <p class="crumbs">
        <a href={`/projects/${encodeURIComponent(build.project_id)}`}>{project.data?.project.name ?? "Project"}</a> › {build.config_snapshot.pipeline_name}
      </p>
      <FormError error={actionError} />
      <dl class="facts">
        <div>
          <dt>Status</dt>
          <dd aria-live="polite">
            <StatusBadge status={build.status} />
            {build.exit_code !== null && ` exit ${build.exit_code}`}
          </dd>
        </div>
        <div>
          <dt>Branch</dt>
          <dd class="branch">{build.branch}</dd>
        </div>
        <div>
          <dt>Commit</dt>
          <dd>
            <code>{build.commit_sha}</code>
          </dd>
        </div>
        <div>
          <dt>Trigger</dt>
          <dd>
            {build.trigger_type}
            {build.trigger_event ? ` (${build.trigger_event})` : ""}
            {build.trigger_actor ? ` by ${build.trigger_actor}` : ""}
            {build.source_build_id && (
              <>
                {" "}
                of <a href={`/projects/${encodeURIComponent(build.project_id)}/builds/${encodeURIComponent(build.source_build_id)}`}>the earlier build</a>
              </>
            )}
          </dd>
        </div>
        <div>
          <dt>Queued</dt>
          <dd title={dateTime(build.queued_at)}>{ago(build.queued_at)}</dd>
        </div>
        <div>
          <dt>Duration</dt>
          <dd>{buildDurationText(build) || "not started"}</dd>
        </div>
        <BuildOriginFacts build={build} />
        <ExecutorFacts build={build} />
        {build.flutter_sdk && (
          <div>
            <dt>Flutter</dt>
            <dd title={build.flutter_sdk.revision ?? undefined}>
              {build.flutter_sdk.version}
              {build.flutter_sdk.version !== build.flutter_sdk.requested ? ` (asked for ${build.flutter_sdk.requested})` : ""}
              {
                {
                  installed: ", installed for this build",
                  reused: ", installed earlier",
                  path: ", from PATH",
                  sdks_dir: ", from the runner's SDK directory",
                  image: ", the build image's own",
                }[build.flutter_sdk.source]
              }
            </dd>
          </div>
        )}
      </dl>
      {build.failure_reason && <Notice kind="error">{build.failure_reason}</Notice>}
      <ContainerErrorNotice build={build} />
      {build.runner_policy_block_reason && build.status === "queued" && <Notice kind="warning">{build.runner_policy_block_reason}</Notice>}
      {build.changelog && <pre class="changelog">{build.changelog}</pre>}
      <BuildDeployments build={build} project={project.data?.project} />
      <nav class="tabs" aria-label="Build sections">
        <a href="?tab=log" aria-current={tab === "log" ? "page" : undefined}>
          Log, steps and artifacts
        </a>
        <a href="?tab=tests" aria-current={tab === "tests" ? "page" : undefined}>
          Tests{testsLabel(tests.data)}
        </a>
      </nav>
      {tab === "tests" && <TestsTab build={build} tests={tests} />}
      {/* Hidden, not unmounted, on the Tests tab: a live log keeps streaming and keeps its place. */}
      <div hidden={tab !== "log"}>
        <section aria-labelledby="h-steps">
          <h2 id="h-steps">Steps</h2>
          {build.step_results.length === 0 ? (
            <p class="muted">{build.status === "queued" ? "Waiting for a runner." : "No step reported yet."}</p>
          ) : (
            <ol class="step-list">
              {build.step_results.map((s) => (
                <li key={s.name}>
                  <StatusBadge status={s.status} /> <strong>{s.name}</strong> <span class="muted">{duration(s.duration_ms)}</span>
                  {s.exit_code !== null && <span class="muted"> · exit code {s.exit_code}</span>}
                </li>
              ))}
            </ol>
          )}
        </section>
        <section aria-labelledby="h-log">
          <h2 id="h-log">
            Log{" "}
            {log.connection === "live" && (
              <span class="badge badge-running">
                <span aria-hidden="true">●</span> live
              </span>
            )}
            {log.connection === "reconnecting" && <span class="badge badge-queued">reconnecting…</span>}
          </h2>
          <RetentionNotice build={build} what="log" />
          {log.revoked && <Notice kind="warning">The live log stopped: {log.revoked}</Notice>}
          <LogView
            store={log.store}
            version={log.version}
            steps={build.step_results}
            live={!finished}
            target={target ? Number(target) : null}
            complete={log.complete}
          />
        </section>
        <section aria-labelledby="h-artifacts">
          <h2 id="h-artifacts">Artifacts</h2>
          <RetentionNotice build={build} what="artifacts" />
          <LoadState state={artifacts} what="artifacts" />
          {artifacts.data && artifacts.data.artifacts.length === 0 && (
            <p class="muted">{finished ? "No artifacts." : "Artifacts appear when the build uploads them."}</p>
          )}
          {artifacts.data && artifacts.data.artifacts.length > 0 && (
            <Table caption="Artifacts" columns={["File", "Size", "SHA-256"]}>
              {artifacts.data.artifacts.map((a) => (
                <tr key={a.id}>
                  <td>
                    <a href={`/v1/builds/${encodeURIComponent(build.id)}/artifacts/${encodeURIComponent(a.id)}`} download={a.path.split("/").pop()}>
                      {a.path}
                    </a>
                  </td>
                  <td>{bytes(a.size)}</td>
                  <td>
                    <code class="sha">{a.sha256}</code>
                  </td>
                </tr>
              ))}
            </Table>
          )}
        </section>
      </div>
    </section>
  );
}

/** " (2 failed)", " (125 passed)" beside the tab's name; nothing before reports arrive. */
function testsLabel(tests: BuildTests | undefined): string {
  const s = tests?.summary;
  if (!s || s.total === 0) return "";
  const failures = s.failed + s.errored;
  return failures ? ` (${failures} failed)` : ` (${s.passed} passed)`;
}
