// In-process notifications between parts of one daemon (e.g. "build X changed" wakes SSE streams
// and long-polling runners at once). They carry ids, never payloads: a listener re-reads the
// database, which stays the source of truth, also for another daemon process on the same database
// (those notice changes by polling, documented where they do).
export type RoostEvent =
  | { type: "build.changed"; build_id: string; project_id: string; status: string }
  | { type: "build.queued"; build_id: string; project_id: string }
  | { type: "job.finished"; build_id: string; job_id: string }
  // A deployment was created or changed status (docs/publishing.md); "approved" wakes runners' claims.
  | { type: "deployment.changed"; deployment_id: string; build_id: string; project_id: string; status: string };

type Listener = (event: RoostEvent) => void;

export class EventBus {
  #listeners = new Set<Listener>();

  subscribe(listener: Listener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  publish(event: RoostEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // A failing listener must not stop the others or the publisher.
      }
    }
  }
}
