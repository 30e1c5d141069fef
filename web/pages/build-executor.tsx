// Where a build ran (docs/runners.md "Executors"), for the build page's list of facts: the
// executor, and for a container its engine, image by digest, network and limits; and why its
// container could not start, when that is not already the build's failure reason.
import { Notice } from "../components.tsx";
import type { Build } from "../types.ts";

type Executor = NonNullable<Build["executor"]>;

/** "cpus 2, memory 4 GiB, pids 4096, disk unlimited" */
export function describeLimits(l: NonNullable<Executor["limits"]>): string {
  const size = (mb: number | null) => (mb === null ? "unlimited" : mb >= 1024 ? `${Number((mb / 1024).toFixed(1))} GiB` : `${mb} MiB`);
  return `cpus ${l.cpus ?? "unlimited"}, memory ${size(l.memory_mb)}, pids ${l.pids ?? "unlimited"}, disk ${size(l.disk_mb)}`;
}

export function ExecutorFacts({ build }: { build: Build }) {
  const e = build.executor;
  // Until the runner reports where the build ran: the image its pipeline asks for, if any.
  const asked = build.config_snapshot.execution_config.image;
  if (!e) {
    return asked ? (
      <div>
        <dt>Image</dt>
        <dd class="build-image">
          <code>{asked}</code> (asked by the pipeline; on a container runner)
        </dd>
      </div>
    ) : null;
  }
  if (e.kind === "host") {
    return (
      <div>
        <dt>Executor</dt>
        <dd class="build-executor">host: the runner's own machine and user</dd>
      </div>
    );
  }
  const digest = e.image_digest?.split("@")[1] ?? null;
  return (
    <>
      <div>
        <dt>Executor</dt>
        <dd class="build-executor">
          a fresh container{e.engine ? ` (${e.engine})` : ""}
          {e.network === "none" ? ", no network" : ""}
        </dd>
      </div>
      {e.image && (
        <div>
          <dt>Image</dt>
          <dd class="build-image">
            <code>{e.image}</code>
            {digest && (
              <>
                {" "}
                at <code title={e.image_digest ?? undefined}>{digest.slice(0, 19)}…</code> (a re-run runs this one)
              </>
            )}
          </dd>
        </div>
      )}
      {e.limits && (
        <div>
          <dt>Limits</dt>
          <dd class="build-limits">{describeLimits(e.limits)}</dd>
        </div>
      )}
    </>
  );
}

/** The container's error, unless the failure reason already says it. */
export function ContainerErrorNotice({ build }: { build: Build }) {
  const error = build.executor?.error;
  if (!error || error === build.failure_reason) return null;
  return <Notice kind="error">{`The build's container: ${error}`}</Notice>;
}
