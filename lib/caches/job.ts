// The build a runner's cache request is for, from the job it holds: the scope comes from the
// build the daemon recorded, never from the runner, so a pull request's job cannot write (or read
// beyond) what its scope allows (lib/runners/cache-scope.ts).
import type { RunnerContext } from "../http/context.ts";
import { fail } from "../http/errors.ts";
import { findBuild } from "../builds/store.ts";
import { findProject } from "../projects/store.ts";
import { ownedRunningJob } from "../runners/protocol.ts";
import { cacheScope } from "../runners/cache-scope.ts";
import type { CacheReader } from "./store.ts";

/** The cache reader of a job this runner holds and is running (409 job_not_assigned, 410 job_finished otherwise). */
export async function jobCacheReader(ctx: RunnerContext, jobId: string): Promise<CacheReader> {
  const job = await ownedRunningJob(ctx, jobId);
  const build = await findBuild(ctx.db, job.build_id);
  if (!build) fail("job_finished", "This job's build no longer exists; stop working on it.");
  const project = await findProject(ctx.db, build.project_id);
  return { projectId: build.project_id, pipelineId: build.pipeline_id, scope: cacheScope(build), defaultBranch: project?.default_branch ?? "" };
}
