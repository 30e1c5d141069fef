// Where a build's definition came from (the pipeline file at a commit, or the pipeline configured
// through the API), the schedule that started it, and what retention removed: shown on the build
// page (web/pages/build.tsx).
import { get } from "../api.ts";
import { Notice, useLoad } from "../components.tsx";
import { dateTime, shortSha } from "../format.ts";
import type { Build } from "../types.ts";
import type { Schedule } from "../settings-types.ts";

/** Facts for the build page's list: the definition and, for a scheduled build, its schedule. */
export function BuildOriginFacts({ build }: { build: Build }) {
  const d = build.definition_source;
  return (
    <>
      <div>
        <dt>Definition</dt>
        <dd class="definition-source">
          {d.source === "file" ? (
            <>
              pipeline file <code>{d.path}</code> at commit <code title={d.commit_sha}>{shortSha(d.commit_sha)}</code>
              {d.branch ? ` (the target branch ${d.branch}'s file)` : ""}
            </>
          ) : (
            "the pipeline as configured in Roost (API)"
          )}
        </dd>
      </div>
      {build.schedule_id && <ScheduleFact build={build} scheduleId={build.schedule_id} />}
    </>
  );
}

function ScheduleFact({ build, scheduleId }: { build: Build; scheduleId: string }) {
  const state = useLoad(
    () => get<{ schedule: Schedule }>(`/v1/pipelines/${encodeURIComponent(build.pipeline_id)}/schedules/${encodeURIComponent(scheduleId)}`),
    [build.pipeline_id, scheduleId],
  );
  const s = state.data?.schedule;
  return (
    <div>
      <dt>Schedule</dt>
      <dd class="build-schedule">
        <a href={`/projects/${encodeURIComponent(build.project_id)}?tab=schedules`}>
          {s ? `${s.cron} (${s.timezone}) on ${s.branch}` : state.error ? "a deleted schedule" : "a schedule"}
        </a>
      </dd>
    </div>
  );
}

/** "Log removed by retention on …" and the same for artifacts. */
export function RetentionNotice({ build, what }: { build: Build; what: "log" | "artifacts" }) {
  const at = what === "log" ? build.logs_deleted_at : build.artifacts_deleted_at;
  if (at === null) return null;
  return <Notice kind="info">{`${what === "log" ? "Log" : "Artifacts"} removed by retention on ${dateTime(at)}.`}</Notice>;
}
