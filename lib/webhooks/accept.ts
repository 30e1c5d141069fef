// What happens to a delivery once its signature or token has been checked: deduplicated,
// matched against the pipelines of the one project that builds the repository, recorded with a
// reason for every decision, and its builds created, all in one write, so a delivery is either
// recorded with its builds or not at all (a retry after a crash then acts normally).
//
// On a remote libSQL server every statement is a round trip, and those of a write transaction hold
// the server's write lock, which every daemon queues for (docs/operations.md "Several hosts"). So
// what a delivery acts on is read first, outside any transaction (its project, pipelines,
// pipeline files), its decisions are made from that, and everything it writes goes in one write
// batch: one request, the lock held only while it runs there. Each write of the batch is guarded
// by what was read (the project and pipelines as read), so the batch writes nothing if the state
// moved meanwhile, and the delivery is read and decided again; its dedupe keys are read in the
// batch itself, and one held makes the batch record the delivery as a duplicate instead. What the
// batch cannot say (a pipeline the file names for the first time, file schedules to change) takes
// the write transaction instead, as every delivery once did.
// Only the dedupe key's own conflict makes a delivery a duplicate; any other error while acting
// on it is recorded as a failed delivery, logged, and answered 5xx so the host redelivers it.
//
// The dedupe keys are in dedupe-keys.ts, what a delivery builds in what-triggers.ts, and the record
// and incident of a delivery that failed in failed-deliveries.ts.
import type { Db, Executor, SqlCondition } from "../db/client.ts";
import { allOf, inTransaction, one } from "../db/client.ts";
import { isDatabaseUnreachable, isRead } from "../db/database.ts";
import { timeOrderedId } from "./ordered-id.ts";
import type { Clock } from "../http/context.ts";
import type { EventBus } from "../daemon/events.ts";
import type { Logger } from "../daemon/log.ts";
import type { TriggerEvent } from "../forges/event.ts";
import type { ForgeDeps } from "../forges/forge.ts";
import type { ForgeName } from "../forges/registry.ts";
import type { Repository } from "../integrations/repositories.ts";
import { findIntegration, type Integration } from "../integrations/store.ts";
import { listPipelinesOfRepository, pipelinesState, type Pipeline } from "../pipelines/store.ts";
import { buildsForkPullRequests, buildsRepositoryAsRead, findProjectOfRepositoryAsRead, type Project } from "../projects/store.ts";
import { cancelsPrevious, createBuildsStatements, plannedBuildNumber, publishCreated, type CreatedBuild, type PlannedBuild } from "../builds/create.ts";
import { fileSchedulesState } from "../schedules/schedules.ts";
import { deliveryLevelReason } from "./triggers.ts";
import { bodyExpiry, insertDelivery, insertDeliveryStatement, type DeliveryResult, type NewDelivery } from "./deliveries.ts";
import { INLINE_BODY_BYTES, NO_BODY, discardBody, storeBody, type StoredBody } from "./delivery-bodies.ts";
import { Duplicate, dedupeKeyHolder, dedupeKeysOf, heldDedupeKey, takeDedupeKeys } from "./dedupe-keys.ts";
import {
  buildWhatTriggers,
  pipelineCandidates,
  readPipelineFiles,
  summarize,
  touchesFileSchedules,
  type Acting,
  type Created,
  type PipelineFiles,
} from "./what-triggers.ts";
import { recordFailed } from "./failed-deliveries.ts";
import { mergedPushes } from "./merged-writes.ts";

export interface Deps extends ForgeDeps {
  db: Db;
  clock: Clock;
  events: EventBus;
  log: Logger;
}

export interface AcceptInput {
  forge: ForgeName;
  /** X-GitHub-Delivery / X-Gitlab-Event-UUID, for the log. */
  deliveryId: string;
  /** The host's delivery identities: one already acted on (within the 30 days keys are kept) makes this a duplicate. */
  dedupeKeys: string[];
  /**
   * A digest of the body, only where the host guarantees that distinct events have distinct
   * bodies (GitHub); a duplicate within CONTENT_KEY_WINDOW_SECONDS. Never for GitLab, which sends
   * identical bytes for distinct events.
   */
  contentKey?: string | null;
  event: TriggerEvent;
  /** The one catalogue entry the verified delivery is for, or null with the reason nothing matched. */
  repository: Repository | null;
  /**
   * The repository's integration as the verification read it (one whose secret verified the body),
   * when it did: the write batch's reads then need not read it again.
   */
  integration?: Integration;
  /**
   * Set when the verification used what this daemon last read of the catalogue (Sender.asRead):
   * the delivery is written only if it holds, and whatever else would become of it (nothing
   * written, the transaction, a failure) throws VerifyAfresh instead, to be verified from the database.
   */
  asRead?: SqlCondition;
  unroutedReason?: string;
  body: string;
}

export interface AcceptResult {
  deliveryId: string;
  duplicate: boolean;
  result: DeliveryResult;
  reason: string;
  builds: CreatedBuild[];
}

/** The delivery's record before what it did is known. */
type Received = Omit<NewDelivery, "result" | "reason" | "repository_id" | "project_id" | "decisions" | "duplicate_of" | "body">;

/** What acting on a delivery did: its result, its one-line reason, and the builds it created. */
interface Outcome {
  result: DeliveryResult;
  reason: string;
  created: Created[];
}

export async function acceptDelivery(deps: Deps, input: AcceptInput): Promise<AcceptResult> {
  const now = deps.clock.now();
  const id = timeOrderedId();
  const { event } = input;
  const base: Received = {
    id,
    host: input.forge,
    delivery_id: input.deliveryId,
    event: event.event,
    action: event.action,
    verified: true,
    repository_external_id: event.repository.externalId,
    repository_full_name: event.repository.fullName,
    commit_sha: event.commitSha,
    received_at: now,
  };
  // The body is stored once, when the delivery is to be recorded with it (a large one in pieces
  // before its record: lib/webhooks/delivery-bodies.ts); a duplicate keeps none.
  let stored: Promise<StoredBody> | undefined;
  const body = () => (stored ??= storeBody(deps.db, id, input.body, bodyExpiry(now)));
  try {
    const tried = await acceptInOneBatch(deps, input, base, body);
    if ("duplicateOf" in tried) {
      // Stored before the batch found the key held: no record points at those pieces.
      if (stored) await discardBody(deps.db, id, await stored);
      return { deliveryId: id, duplicate: true, result: "duplicate", reason: duplicateReason(tried.duplicateOf), builds: [] };
    }
    const outcome = "created" in tried ? tried : await acceptInTransaction(deps, input, base, tried.files, body);
    for (const c of outcome.created) publishCreated(deps, c);
    return { deliveryId: id, duplicate: false, result: outcome.result, reason: outcome.reason, builds: outcome.created.map((c) => c.build) };
  } catch (error) {
    // The database server down: nothing can be recorded, and the receiver's 503 makes the host redeliver.
    if (isDatabaseUnreachable(error)) throw error;
    // Verified as last read: nothing is recorded before the verification is made from the database.
    if (input.asRead) throw error instanceof VerifyAfresh ? error : new VerifyAfresh();
    if (!(error instanceof Duplicate)) return recordFailed(deps, { ...base, repository: input.repository, body }, error);
    // Stored before another delivery took the key: no record points at those pieces.
    if (stored) await discardBody(deps.db, id, await stored);
    const of = error.of;
    const reason = duplicateReason(of);
    await insertDelivery(deps.db, {
      ...base,
      result: "duplicate",
      reason,
      repository_id: input.repository?.id ?? null,
      project_id: null,
      decisions: [],
      duplicate_of: of,
      body: NO_BODY,
    });
    return { deliveryId: id, duplicate: true, result: "duplicate", reason, builds: [] };
  }
}

/** A duplicate's reason, as its record says it (insertDeliveryStatement writes the same in a batch). */
function duplicateReason(of: string): string {
  return `duplicate of delivery ${of}`;
}

/** How often a delivery is read and decided again after its batch found the state moved, before it takes the transaction. */
const BATCH_ATTEMPTS = 3;

/**
 * The delivery as one write batch, planned from what was read before it (see the top of this
 * file), or its record as a duplicate when one of its dedupe keys is held (the delivery that holds
 * it); or, when it needs the transaction (acceptInTransaction), the pipeline files it read.
 */
async function acceptInOneBatch(
  deps: Deps,
  input: AcceptInput,
  base: Received,
  body: () => Promise<StoredBody>,
): Promise<Outcome | { duplicateOf: string } | { files: PipelineFiles }> {
  const now = base.received_at;
  const keys = dedupeKeysOf(input);
  const { repository } = input;
  let files: PipelineFiles | undefined;
  for (let attempt = 0; attempt < BATCH_ATTEMPTS; attempt++) {
    // The project and its pipelines as this daemon last read them, on a first attempt: every write
    // of the batch is guarded by them, so one that moved since makes the batch write nothing and
    // the next attempt reads them again. The dedupe keys are read under the write lock, in the
    // batch: a key held makes it record the delivery as its duplicate (one statement fewer a push
    // than reading them first).
    // A body too large for its record is stored in pieces before the batch, many requests: its
    // keys are read first, so a duplicate stores none.
    const verified = input.integration?.id === repository?.integration_id ? input.integration : undefined;
    const [held, route] = await Promise.all([
      attempt === 0 && input.body.length * 3 > INLINE_BODY_BYTES ? heldDedupeKey(deps.db, input, keys, now) : null,
      routeAsLastRead(deps.db, input, verified, attempt > 0),
    ]);
    if (held !== null) throw new Duplicate(held);
    files = await readPipelineFiles(deps, input, route);
    const guards: SqlCondition[] = [];
    if (repository) guards.push(buildsRepositoryAsRead(repository.id, route.project));
    if (repository) {
      const state = pipelinesState(repository.id);
      guards.push({ sql: `${state.sql} IS ?`, args: [...state.args, route.pipelinesVersion] });
    }
    if (route.project) {
      // A push to the default branch keeps the file schedules in step with the file: planned from them as read now.
      if (touchesFileSchedules(input.event, files)) {
        const state = fileSchedulesState(route.project.id);
        const seen = (await one(deps.db, `SELECT ${state.sql} AS state`, state.args))?.state ?? null;
        guards.push({ sql: `${state.sql} IS ?`, args: [...state.args, seen] });
      }
    }
    const planned: PlannedBuild[] = [];
    const acting = startActing(readsOnly(deps.db), input, files, base, planned);
    let decided: { result: DeliveryResult; reason: string };
    try {
      decided = await decide(acting, route);
    } catch (error) {
      if (error instanceof NeedsTransaction) {
        // The transaction may write the repository's pipelines (a file that defines them): what
        // this daemon last read of them is then stale, and would cost the next push a batch that
        // writes nothing.
        if (repository) lastRead.get(deps.db)?.delete(repository.id);
        // The transaction is not guarded by the catalogue as last read: verified from the database first.
        if (input.asRead) throw new VerifyAfresh();
        return { files };
      }
      throw error;
    }
    const numbers = new Map<number, SqlCondition>();
    planned.forEach((b, k) =>
      numbers.set(
        acting.decisions.findIndex((d) => d.build_id === b.id),
        plannedBuildNumber(b.pipeline.project_id, k),
      ),
    );
    const record = {
      ...base,
      ...decided,
      repository_id: repository?.id ?? null,
      project_id: route.project?.id ?? null,
      decisions: acting.decisions,
      duplicate_of: null,
      body: await body(),
    };
    // `+?`: bound bare, a statement under this guard may be compiled again on every call
    // (17 against 3 µs of CPU alone for an INSERT ... SELECT FROM json_each(?); bound-parameters.test.ts).
    const written: SqlCondition = { sql: "EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = +? AND duplicate_of IS NULL)", args: [base.id] };
    // The delivery takes its keys as it is written (a trigger of its INSERT, schema.sql migration 44).
    // Without guards (no repository): the statement's own default, unguarded.
    let holder = dedupeKeyHolder(input, keys, now) ?? undefined;
    // Verified as this daemon last read the catalogue: written, as the delivery or as its duplicate,
    // only if the catalogue is unchanged since (no key holder counts otherwise, so the guard decides).
    if (input.asRead) {
      guards.push(input.asRead);
      if (holder) holder = { sql: `(CASE WHEN ${input.asRead.sql} THEN ${holder.sql} END)`, args: [...input.asRead.args, ...holder.args] };
    }
    const guard = guards.length ? allOf(guards) : undefined;
    const statements = [insertDeliveryStatement({ ...record, dedupeKeys: keys }, guard, numbers, holder)];
    const builds = route.project ? createBuildsStatements(now, route.project.id, planned, written) : null;
    // Merged with the batches of the pushes waiting with it (merged-writes.ts), unless it cancels older builds.
    const merge = planned.some((b) => cancelsPrevious(b.input, b.pipeline))
      ? undefined
      : { kind: mergedPushes, item: { record: { ...record, dedupeKeys: keys }, contentKey: input.contentKey ?? null, guard, builds: planned } };
    const results = await deps.db.batch([...statements, ...(builds?.statements ?? [])], "write", merge);
    // Not written: the project or its pipelines moved since they were read; read again (or, when
    // verified as last read, the catalogue may have: verified again from the database).
    if (results[0]!.rowsAffected === 0) {
      if (repository) lastRead.get(deps.db)?.delete(repository.id);
      if (input.asRead) throw new VerifyAfresh();
      continue;
    }
    const duplicateOf = results[0]!.rows[0]?.duplicate_of;
    if (typeof duplicateOf === "string") return { duplicateOf };
    return { ...decided, created: builds?.created(results.slice(statements.length)) ?? [] };
  }
  return { files: files! };
}

/** The delivery in one write transaction, everything read and decided inside it: what the batch cannot say. */
async function acceptInTransaction(deps: Deps, input: AcceptInput, base: Received, files: PipelineFiles, body: () => Promise<StoredBody>): Promise<Outcome> {
  // The pipeline files were read before the write transaction (a host call must not hold it), and
  // the body stored (its pieces are many requests).
  const stored = await body();
  // Everything the work collects lives inside it: the write queue may run it again from its start
  // (lib/db/write-queue.ts), and only the run that committed made builds.
  return inTransaction(deps.db, async (tx) => {
    const created: Created[] = [];
    await takeDedupeKeys(tx, input, base.id, base.received_at);
    const route = await readRoute(tx, input);
    const acting = startActing(tx, input, files, base, null, created);
    const decided = await decide(acting, route);
    await insertDelivery(tx, {
      ...base,
      ...decided,
      repository_id: input.repository?.id ?? null,
      project_id: route.project?.id ?? null,
      decisions: acting.decisions,
      duplicate_of: null,
      body: stored,
    });
    return { ...decided, created };
  });
}

/** Acting on the delivery from its start: `planned` for a batch, null in the transaction (see Acting). */
function startActing(tx: Executor, input: AcceptInput, files: PipelineFiles, base: Received, planned: PlannedBuild[] | null, created: Created[] = []): Acting {
  return { tx, input, files, now: base.received_at, deliveryId: base.id, created, planned, decisions: [], fileReasons: [], scheduleNotes: [] };
}

/** The project that builds the delivery's repository (by the repository's one project, schema.sql migration 7), its pipelines, and the repository's integration. */
export interface Route {
  project: Project | null;
  /**
   * The project's pipelines' state (pipelinesState) as of its read, which comes before the
   * pipelines' read, so a change between the two shows under the write lock.
   */
  pipelinesVersion: number | null;
  pipelines: Pipeline[];
  integration: Integration | null;
}

/**
 * The project and pipelines of each repository as this daemon last read them for a write batch,
 * by database, with the project's pipelines' state as read with them. What a batch decides from
 * them is guarded by exactly that (the project, its repository, default branch and fork setting;
 * the pipelines' state, which every change of a pipeline moves), so a stale entry costs one batch
 * that writes nothing, never a build decided on what no longer holds; and a push reads two
 * statements fewer, the pipelines' whole configuration among them (docs/benchmarks.md, "Webhook
 * pushes on sqld").
 */
const lastRead = new WeakMap<Executor, Map<string, Omit<Route, "integration">>>();
/** Repositories whose reads are kept per database at most; the oldest is forgotten first. */
const LAST_READ_KEPT = 1_000;

/**
 * readRoute, taking the project and pipelines from lastRead when this daemon read them before (with
 * `verified`, the integration as the receiver read it); `fresh`: read them again (a batch planned
 * from them wrote nothing), and keep what was read for the next push.
 */
async function routeAsLastRead(db: Executor, input: AcceptInput, verified: Integration | undefined, fresh: boolean): Promise<Route> {
  const { repository } = input;
  const kept = repository && verified && !fresh ? lastRead.get(db)?.get(repository.id) : undefined;
  if (kept) return { ...kept, integration: verified! };
  const route = await readRoute(db, input, verified);
  if (repository) {
    let byRepository = lastRead.get(db);
    if (!byRepository) lastRead.set(db, (byRepository = new Map()));
    if (byRepository.size >= LAST_READ_KEPT) byRepository.delete(byRepository.keys().next().value!);
    byRepository.set(repository.id, { project: route.project, pipelinesVersion: route.pipelinesVersion, pipelines: route.pipelines });
  }
  return route;
}

/**
 * Read side by side: on a remote server, in one request. `verified`: the repository's integration
 * as the verification read it, for reads before a write batch (inside a transaction, everything is
 * read again).
 */
async function readRoute(db: Executor, input: AcceptInput, verified?: Integration): Promise<Route> {
  const { repository } = input;
  if (!repository) return { project: null, pipelinesVersion: null, pipelines: [], integration: null };
  const [{ project, pipelinesVersion }, pipelines, integration] = await Promise.all([
    findProjectOfRepositoryAsRead(db, repository.id),
    listPipelinesOfRepository(db, repository.id),
    verified ?? findIntegration(db, repository.integration_id),
  ]);
  return { project, pipelinesVersion, pipelines: project ? pipelines.filter((p) => p.project_id === project.id) : [], integration };
}

/**
 * Decides for the delivery: why it builds nothing, or each pipeline's decision with its build
 * (created in the transaction, or planned for the batch).
 */
async function decide(acting: Acting, route: Route): Promise<{ result: DeliveryResult; reason: string }> {
  let reason = routeReason(acting.input, route);
  if (reason === null && route.project) {
    const candidates = await pipelineCandidates(acting, route.project.id, route.pipelines);
    await buildWhatTriggers(acting, candidates);
    if (candidates.length === 0 && acting.decisions.length === 0) reason = "the project has no pipeline";
  }
  const builtAny = acting.decisions.some((d) => d.build);
  return { result: builtAny ? "built" : "ignored", reason: reason ?? summarize(acting) };
}

/** Why the delivery builds nothing before any pipeline is asked; null when its project's pipelines decide. */
function routeReason(input: AcceptInput, route: Route): string | null {
  const { event } = input;
  const reason = deliveryLevelReason(event);
  if (reason !== null) return reason;
  if (!input.repository) return input.unroutedReason ?? `no catalogue repository has ${input.forge} id ${event.repository.externalId}`;
  if (!route.project) return `no project builds ${event.repository.fullName ?? event.repository.externalId}`;
  // As the hosts' own CI does by default: code from a fork does not run unless the project says so.
  if (event.fromFork === true && !buildsForkPullRequests(route.project))
    return "pull request from a fork: this project does not build them (project setting build_fork_pull_requests)";
  return null;
}

/**
 * A delivery verified as this daemon last read the catalogue (AcceptInput.asRead) was not written
 * under that guard: nothing of it was recorded, and the receiver verifies it again from the database.
 */
export class VerifyAfresh extends Error {
  constructor() {
    super("verify the delivery again from the database");
  }
}

/** Planning a batch, the delivery needed a write the batch cannot say: it takes the transaction. */
class NeedsTransaction extends Error {}

/** The database for planning a batch: reads outside any transaction; any write throws NeedsTransaction. */
function readsOnly(db: Db): Executor {
  return {
    execute(stmt, args) {
      if (!isRead(typeof stmt === "string" ? stmt : stmt.sql)) throw new NeedsTransaction("a write the batch cannot say");
      return db.execute(stmt, args);
    },
  };
}
