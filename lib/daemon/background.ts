// Periodic work of a daemon process: commit statuses to the hosts (as builds change, lib/forges/commit-statuses.ts),
// GitHub check runs (every 2 s), polls of plain git
// remotes (lib/forges/git/poll.ts), scheduled builds (every 15 s), notifications and host releases (every 2 s), retention of
// build logs and artifacts (lib/retention/retention.ts, a batch every 10 s), finished logs moved to an S3
// object store (lib/logs/archive.ts, every 10 s), objects no row refers to deleted (lib/object-store/sweep.ts,
// a page of the store's listing a minute) and housekeeping
// (every 10 minutes: expired sessions and OIDC authorizations, webhook bodies and records past
// retention, shared dependency caches unused for days, the data directory's size). Every task
// works from the database, so several processes can run them side by side.
import type { AppContext } from "../http/context.ts";
import { pruneCommitStatuses, startCommitStatusReporter } from "../forges/commit-statuses.ts";
import { newId } from "../auth/secrets.ts";
import { dueScheduleRows } from "../schedules/due.ts";

// Each task's module is imported when the task first runs (seconds after the start), not when the
// daemon starts: they hold the pipeline file's, the publishers' and the runner protocol's schemas,
// which a start need not build before it is ready (issue 20). A task's first pass finds its work
// with the database alone; what doing the work needs (a forge's client, the pipeline file's YAML
// parser, build creation, the publishers' schemas) is imported by the pass that finds some, so an
// idle daemon never loads it (docs/benchmarks.md, "idle RSS").
const checkRuns = () => import("../test-results/check-runs.ts");
const deliveries = () => import("../webhooks/deliveries.ts");
const sessions = () => import("../auth/sessions.ts");
const oidcPending = () => import("../auth/oidc-pending.ts");
const jobReaper = () => import("../runners/reaper.ts");
const gitPoll = () => import("../forges/git/poll.ts");
const schedules = () => import("../schedules/schedules.ts");
const notifications = () => import("../notifications/notifications.ts");
const retention = () => import("../retention/retention.ts");
const deploymentReaper = () => import("../publishing/reaper.ts");
const hostReleases = () => import("../publishing/host-release-claim.ts");
const logArchive = () => import("../logs/archive.ts");
const objectSweep = () => import("../object-store/sweep.ts");
const caches = () => import("../caches/store.ts");

export function startBackgroundWork(ctx: AppContext, baseUrl: string): () => Promise<void> {
  let running = true;
  let current: Promise<unknown> = Promise.resolve();
  /** The passes of the tasks on chains of their own, while one runs. */
  const inFlight = new Set<Promise<unknown>>();
  // This daemon's name in the leases it takes (git polls, the object sweep's cursor).
  const leaseOwner = newId();
  const every = (ms: number, task: () => Promise<unknown>) =>
    setInterval(() => {
      if (!running) return;
      current = current.then(task).catch((error) => ctx.log.error("background task failed", { error }));
    }, ms);
  /**
   * A task on a chain of its own, so a slow pass (a remote, a receiver, an upload) delays no other
   * task: a period that finds its previous pass still running is skipped.
   */
  const ownChain = (what: string, ms: number, task: () => Promise<unknown>) => {
    let pass: Promise<unknown> | null = null;
    return setInterval(() => {
      if (!running || pass) return;
      const started = task()
        .catch((error) => ctx.log.error(`${what} pass failed`, { error }))
        .finally(() => inFlight.delete(started))
        .finally(() => (pass = null));
      inFlight.add((pass = started));
    }, ms);
  };
  const stopStatuses = startCommitStatusReporter(ctx, baseUrl);
  const timers = [
    // GitHub check runs of finished builds with test reports (docs/github.md "Check runs").
    every(2000, async () =>
      (await checkRuns()).reportCheckRuns({
        db: ctx.db,
        secrets: ctx.secrets,
        config: ctx.config,
        clock: ctx.clock,
        log: ctx.log,
        now: ctx.clock.now(),
        baseUrl,
      }),
    ),
    // A lost runner is noticed within its lease plus this period.
    every(Math.min(5000, ctx.config.runners.leaseSeconds * 500), async () => {
      await (await jobReaper()).reapLostJobs(ctx);
      await (await deploymentReaper()).reapLostDeployments(ctx);
    }),
    every(10_000, async () => (await jobReaper()).flagUnroutableBuilds(ctx)),
    // A build past its timeout that its runner did not stop fails within this period (docs/runners.md "Timeouts").
    every(5000, async () => (await jobReaper()).reapTimedOutBuilds(ctx)),
    // Plain git remotes: a repository is due every ROOST_GIT_POLL_INTERVAL_SECONDS.
    ownChain("git poll", Math.min(5000, ctx.config.integrations.gitPollIntervalSeconds * 500), async () => (await gitPoll()).pollGitRemotes(ctx, leaseOwner)),
    // Schedules have minute resolution; a slot fires within this period of its time.
    every(15_000, async () => (await dueScheduleRows(ctx.db, ctx.clock.now(), 1)).length > 0 && (await schedules()).runDueSchedules(ctx)),
    // Notifications leave within this period of a build's finish (docs/notifications.md); a slow
    // receiver holds its chain up to its send timeout.
    ownChain("notification", 2000, async () => (await notifications()).dispatchNotifications(ctx, baseUrl)),
    // Retention: one bounded batch (one transaction, at most 500 builds) per period, so a first
    // pass over years of history catches up at up to 180,000 builds an hour.
    ownChain("retention", 10_000, async () => (await retention()).enforceRetention(ctx)),
    // Host releases (docs/publishing.md "Host releases"): the daemon makes them with the host's
    // credentials; a large upload holds only its chain.
    ownChain("host release", 2000, async () => (await hostReleases()).publishHostReleases(ctx)),
    // Finished logs to the object store (an S3-compatible one only): a pass writes up to 20 logs.
    ownChain("log archive", 10_000, async () => ctx.objects.kind === "s3" && (await logArchive()).archiveFinishedLogs(ctx, leaseOwner)),
    // Objects no row refers to: one page of the store's keys a pass; the daemons on one database
    // take turns with one cursor.
    ownChain("object sweep", 60_000, async () => (await objectSweep()).sweepNextPage(ctx, leaseOwner)),
    every(600_000, async () => {
      await (await sessions()).deleteExpiredSessions(ctx.db, ctx.clock.now());
      await (await oidcPending()).evictExpiredPending(ctx.db, ctx.clock.now());
      await (await deliveries()).pruneDeliveries(ctx.db, ctx.clock.now());
      await pruneCommitStatuses(ctx.db, ctx.clock.now());
      // Check runs sent more than a day ago, a piece at a time (each its own short write).
      const { pruneCheckRunReports, PRUNE_PIECE } = await checkRuns();
      while ((await pruneCheckRunReports(ctx.db, ctx.clock.now())) === PRUNE_PIECE);
      await (await retention()).checkDataDirGrowth(ctx);
      // Shared dependency caches no build restored for ROOST_SHARED_CACHE_DAYS (docs/runners.md "Shared caches").
      const unusedBefore = ctx.clock.now() - ctx.config.sharedCaches.unusedDays * 86_400;
      let evicted: number;
      do evicted = await (await caches()).evictCaches(ctx.db, ctx.objects, ctx.log, { unusedBefore });
      while (evicted === 500);
    }),
  ];
  return async () => {
    running = false;
    await stopStatuses();
    timers.forEach(clearInterval);
    await current;
    await Promise.all(inFlight);
  };
}
