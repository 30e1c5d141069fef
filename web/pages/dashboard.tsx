// The dashboard: builds running and queued across the projects this person can see, recent
// failures, runners online/offline and open incidents (admins). Builds update as the daemon pushes
// their changes (web/live.ts); everything is reloaded every 5 seconds while the push is down.
import { get } from "../api.ts";
import { LoadState, PageTitle, StatusBadge, Table, useLoad } from "../components.tsx";
import { ago, buildDurationText, shortSha } from "../format.ts";
import { isAdmin } from "../session.ts";
import type { Build, Incident, Project, Runner, TestSummary } from "../types.ts";
import { runnerOnline } from "./runners.tsx";
import { useBuildEvents } from "../live.ts";
import { useRef } from "preact/hooks";

interface Overview {
  projects: Project[];
  active: Array<Build & { project: Project }>;
  failures: Array<Build & { project: Project }>;
  runners: Runner[] | null;
  incidents: Incident[] | null;
}

async function loadOverview(admin: boolean): Promise<Overview> {
  const { projects } = await get<{ projects: Project[] }>("/v1/projects?limit=200");
  const per = await Promise.all(
    projects.map(async (project) => {
      const [running, queued, failed] = await Promise.all(
        (["running", "queued", "failed"] as const).map((status) =>
          get<{ builds: Build[] }>(`/v1/projects/${encodeURIComponent(project.id)}/builds?status=${status}&limit=10`),
        ),
      );
      const tag = (b: Build) => ({ ...b, project });
      return { active: [...running!.builds, ...queued!.builds].map(tag), failures: failed!.builds.map(tag) };
    }),
  );
  const [runners, incidents] = admin
    ? await Promise.all([
        get<{ runners: Runner[] }>("/v1/runners").then((r) => r.runners),
        get<{ incidents: Incident[] }>("/v1/operator-incidents").then((r) => r.incidents.filter((i) => i.status === "open")),
      ])
    : [null, null];
  return {
    projects,
    active: per.flatMap((p) => p.active).sort((a, b) => b.queued_at - a.queued_at),
    failures: per
      .flatMap((p) => p.failures)
      .sort((a, b) => (b.finished_at ?? 0) - (a.finished_at ?? 0))
      .slice(0, 10),
    runners,
    incidents,
  };
}

export function BuildTable({
  builds,
  showProject = true,
  caption,
}: {
  builds: Array<Build & { project?: Project; test_summary?: TestSummary | null }>;
  showProject?: boolean;
  caption: string;
}) {
  if (builds.length === 0) return <p class="muted">None.</p>;
  // Build lists of the API carry each build's tests in a line ("123 passed, 2 failed").
  const showTests = builds.some((b) => b.test_summary !== undefined);
  return (
    <Table
      caption={caption}
      columns={["Build", "Status", showProject && "Project", "Pipeline", "Branch", "Commit", "Trigger", "Duration", showTests && "Tests", "Queued"]}
    >
      {builds.map((b) => (
        <tr key={b.id}>
          <td>
            <a href={`/projects/${encodeURIComponent(b.project_id)}/builds/${encodeURIComponent(b.id)}`}>#{b.build_number}</a>
          </td>
          <td>
            <StatusBadge status={b.status} />
          </td>
          {showProject && <td>{b.project?.name}</td>}
          <td>{b.config_snapshot.pipeline_name}</td>
          <td class="branch">{b.branch}</td>
          <td>
            <code>{shortSha(b.commit_sha)}</code>
          </td>
          <td>
            {b.trigger_type}
            {b.trigger_actor ? ` by ${b.trigger_actor}` : ""}
          </td>
          <td>{buildDurationText(b)}</td>
          {showTests && (
            <td>
              {b.test_summary && b.test_summary.total > 0 && (
                <a
                  class={b.test_summary.failed + b.test_summary.errored ? "tests-failing" : "tests-passing"}
                  href={`/projects/${encodeURIComponent(b.project_id)}/builds/${encodeURIComponent(b.id)}?tab=tests`}
                >
                  <span aria-hidden="true">{b.test_summary.failed + b.test_summary.errored ? "✕ " : "✓ "}</span>
                  {b.test_summary.text}
                </a>
              )}
            </td>
          )}
          <td>{ago(b.queued_at)}</td>
        </tr>
      ))}
    </Table>
  );
}

/** The overview with one pushed build change applied; null when it needs a reload (a project it does not know). */
export function applyBuild(overview: Overview, build: Build): Overview | null {
  const project = overview.projects.find((p) => p.id === build.project_id);
  if (!project) return null;
  const tagged = { ...build, project };
  const active = overview.active.filter((b) => b.id !== build.id);
  if (build.status === "running" || build.status === "queued") active.push(tagged);
  const failures = overview.failures.filter((b) => b.id !== build.id);
  if (build.status === "failed") failures.push(tagged);
  return {
    ...overview,
    active: active.sort((a, b) => b.queued_at - a.queued_at),
    failures: failures.sort((a, b) => (b.finished_at ?? 0) - (a.finished_at ?? 0)).slice(0, 10),
  };
}

export function Dashboard() {
  const admin = isAdmin.value;
  // Pushed build changes update the lists in place. While the push is up, the whole overview
  // (runners, incidents) is reloaded every 30 seconds instead of every 5.
  const skipped = useRef(0);
  const state = useLoad(
    () => loadOverview(admin),
    [admin],
    5000,
    () => events.live() && ++skipped.current % 6 !== 0,
  );
  const events = useBuildEvents(
    (build) => {
      if (state.data && !state.data.projects.some((p) => p.id === build.project_id)) void state.reload();
      else state.update((overview) => applyBuild(overview, build) ?? overview);
    },
    () => void state.reload(),
  );
  const data = state.data;
  return (
    <section>
      <PageTitle title="Dashboard" />
      <LoadState state={state} what="the dashboard" />
      {data && data.projects.length === 0 && (
        <div class="notice notice-info" role="status">
          <p>
            No projects yet. <a href="/projects/new">Create a project</a> from a repository of your source host
            {admin ? (
              <>
                , and <a href="/runners">register a runner</a> to run its builds
              </>
            ) : (
              ""
            )}
            .
          </p>
        </div>
      )}
      {data && (
        <div class="grid">
          <section class="panel wide" aria-labelledby="h-active">
            <h2 id="h-active">Running and queued ({data.active.length})</h2>
            <BuildTable builds={data.active} caption="Running and queued builds" />
          </section>
          <section class="panel wide" aria-labelledby="h-failed">
            <h2 id="h-failed">Recent failures</h2>
            <BuildTable builds={data.failures} caption="Recently failed builds" />
          </section>
          {data.runners && (
            <section class="panel" aria-labelledby="h-runners">
              <h2 id="h-runners">Runners</h2>
              <p>
                {data.runners.filter((r) => !r.revoked_at && runnerOnline(r)).length} online,{" "}
                {data.runners.filter((r) => !r.revoked_at && !runnerOnline(r)).length} offline. <a href="/runners">Manage runners</a>
              </p>
              <ul class="plain">
                {data.runners
                  .filter((r) => !r.revoked_at)
                  .map((r) => (
                    <li key={r.id}>
                      <StatusBadge status={runnerOnline(r) ? "online" : "offline"} /> {r.name} <span class="muted">seen {ago(r.last_seen_at)}</span>
                    </li>
                  ))}
              </ul>
            </section>
          )}
          {data.incidents && (
            <section class="panel" aria-labelledby="h-incidents">
              <h2 id="h-incidents">Open incidents</h2>
              {data.incidents.length === 0 ? (
                <p class="muted">None.</p>
              ) : (
                <ul class="plain">
                  {data.incidents.map((i) => (
                    <li key={i.id}>
                      <strong>{i.severity}</strong>: {i.message} <a href="/admin?tab=incidents">Details</a>
                    </li>
                  ))}
                </ul>
              )}
            </section>
          )}
        </div>
      )}
    </section>
  );
}
