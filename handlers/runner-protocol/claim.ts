// POST /v1/runners/{runner_id}/jobs/claim (runner token): long poll for work. Answers 201 with a
// job as soon as a build this runner may run is queued (or, when it accepts publishes, with a
// deployment to publish: docs/publishing.md), or 204 after `wait_seconds`. Atomic across
// runners and daemon processes; a retried claim_id returns the same job.
import { created, defineEndpoint } from "../../lib/http/route.ts";
import type { RunnerContext } from "../../lib/http/context.ts";
import { claimJob } from "../../lib/runners/jobs.ts";
import { jobPayload, jobPayloadReads } from "../../lib/runners/protocol.ts";
import { ClaimAnswer, ClaimRequest, plainClaim } from "../../lib/runners/protocol-wire.ts";
import { claimDeployment, publishPayload } from "../../lib/publishing/claim.ts";
import { confirmRunner, runnerStillValid } from "../../lib/auth/authenticate.ts";

/** While waiting, the database is also re-read this often, for builds queued through another process. */
const RECHECK_MS = 1000;

export const endpoint = defineEndpoint({
  operationId: "runner_claim_job",
  summary: "Runner: claim a job (long poll)",
  body: ClaimRequest,
  plainBody: plainClaim,
  ...created(ClaimAnswer),
  runnerInWrite: true,
  async handle({ body }, ctx: RunnerContext) {
    ctx.setIdleTimeout(body.wait_seconds + 10);
    const deadline = Date.now() + body.wait_seconds * 1000;
    // The runner as this daemon remembers it, held in the claim's write batch (lib/auth/authenticate.ts
    // runnerStands); read (refused if its token no longer works) when that batch takes nothing.
    let runner = ctx.runner;
    let remembered = ctx.runnerStands && {
      stands: ctx.runnerStands,
      confirm: async () => (runner = await confirmRunner(ctx, runner.id)),
    };
    for (let waited = false; ; waited = true) {
      // After a wait, the runner is read again: a token revoked or rotated while its claim waited
      // (through any daemon) takes no build that was queued meanwhile, and is refused.
      if (waited) runner = await runnerStillValid(ctx, runner.id);
      const claimed = await claimJob(ctx.db, runner, body.claim_id, ctx.clock.now(), ctx.config.runners.leaseSeconds, jobPayloadReads, remembered);
      remembered = undefined;
      if (claimed) {
        ctx.events.publish({ type: "build.changed", build_id: claimed.build.id, project_id: claimed.build.project_id, status: claimed.build.status });
        return new Response(JSON.stringify({ job: await jobPayload(ctx, claimed.job, claimed.build, claimed.read) }), {
          status: 201,
          headers: { "content-type": "application/json" },
        });
      }
      const deployment = body.accepts.includes("publish")
        ? await claimDeployment(ctx.db, runner, body.claim_id, ctx.clock.now(), ctx.config.runners.leaseSeconds)
        : null;
      if (deployment) {
        ctx.events.publish({
          type: "deployment.changed",
          deployment_id: deployment.id,
          build_id: deployment.build_id,
          project_id: deployment.project_id,
          status: deployment.status,
        });
        return new Response(JSON.stringify({ publish: await publishPayload(ctx, deployment) }), {
          status: 201,
          headers: { "content-type": "application/json" },
        });
      }
      const left = deadline - Date.now();
      // A runner that hung up (it is stopping) is not handed a job it would never hear of.
      if (left <= 0 || ctx.shutdown.aborted || ctx.request.signal.aborted) return new Response(null, { status: 204, headers: { "x-roost-next-poll-ms": "0" } });
      // Wake at once when a build is queued in this process; re-read the database regardless.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.min(left, RECHECK_MS));
        const unsubscribe = ctx.events.subscribe((e) => (e.type === "build.queued" || (e.type === "deployment.changed" && e.status === "approved")) && done());
        const onAbort = () => done();
        ctx.shutdown.addEventListener("abort", onAbort);
        ctx.request.signal.addEventListener("abort", onAbort);
        function done() {
          clearTimeout(timer);
          unsubscribe();
          ctx.shutdown.removeEventListener("abort", onAbort);
          ctx.request.signal.removeEventListener("abort", onAbort);
          resolve();
        }
      });
    }
  },
});
