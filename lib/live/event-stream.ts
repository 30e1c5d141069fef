// One client's stream of build changes (GET /v1/events, wire format in handlers/events/stream.ts):
// an SseStream (sse-stream.ts: framing, keepalive, the bounded queue, the credential guard,
// shutdown) fed by the application's build feed (build-feed.ts), which encodes each change once
// for all streams. Each stream only decides whether its caller may see the build's project (their
// project role, read once per project between two checks of the credential) and queues the frame.
// Nothing is replayed: a client that (re)connects reads the lists it shows once, then follows.
import type { RequestContext } from "../http/context.ts";
import type { Principal } from "../auth/principal.ts";
import type { ProjectRole } from "../projects/store.ts";
import { projectRoleOf } from "../auth/project-access.ts";
import { sseFrame } from "./sse-frame.ts";
import { SseStream } from "./sse-stream.ts";
import type { BuildChange } from "./build-feed.ts";

/**
 * A client with more than this queued and not taken is dropped: its connection ends and
 * EventSource reconnects, then reloads what it shows. The daemon never holds more per stream.
 */
const MAX_QUEUED_BYTES = 256 * 1024;

/** Opens the event stream of `opened`, the principal the request was authenticated as. */
export function openBuildEventStream(ctx: RequestContext, opened: Principal): Response {
  const visible = new VisibleProjects(ctx, opened);
  const stream = new SseStream(ctx, {
    gauge: { name: "roost_event_streams", help: "Open GET /v1/events streams in this process." },
    maxQueuedBytes: MAX_QUEUED_BYTES,
    guard: {
      principal: opened,
      async stillAllowed(now) {
        // Any signed-in user may follow the stream; which builds they see is decided per
        // project, read again after every check (a membership or role changed meanwhile).
        visible.reset(now);
        return null;
      },
    },
  });
  /** Deliveries in order: a role read for one build never lets a later frame overtake it. */
  let chain: Promise<void> = Promise.resolve();
  const deliver = (change: BuildChange) => {
    chain = chain.then(async () => {
      if (!stream.open) return;
      try {
        if (await visible.includes(change.project_id)) stream.send(change.frame);
      } catch {
        // A failed role read skips this change; the client reloads when it reconnects.
      }
    });
  };
  return stream.response({
    async start() {
      const subscription = ctx.live.builds.subscribe(deliver);
      stream.onClose(subscription.unsubscribe);
      await subscription.ready;
      // From here on every change reaches this stream: the client reads its lists now.
      stream.write(sseFrame("ready", {}));
    },
  });
}

/** The projects a principal may see, as of the last check of their credential. */
class VisibleProjects {
  #roles = new Map<string, ProjectRole | null>();

  constructor(
    readonly ctx: RequestContext,
    private principal: Principal,
  ) {}

  reset(principal: Principal): void {
    this.principal = principal;
    this.#roles = new Map();
  }

  async includes(projectId: string): Promise<boolean> {
    let role = this.#roles.get(projectId);
    if (role === undefined) {
      const cache = this.#roles;
      role = await projectRoleOf(this.ctx.db, this.principal, projectId);
      // Kept in the cache it was read for: a check that replaced that one meanwhile may postdate
      // this read, which then goes with the old cache.
      cache.set(projectId, role);
    }
    return role !== null;
  }
}
