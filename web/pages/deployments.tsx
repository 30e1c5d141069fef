// Publishing in the web app (docs/web-app.md "Publishing", docs/publishing.md): a build's
// deployments on its page, each with its state in words, who asked and who decided and when, and
// the store's answer; Approve and Reject on a waiting one for those the approve route takes; a
// project's Deployments tab with what each environment's tracks hold now and the history; and
// promotion of a successful build to another environment (POST /v1/builds/{id}/publish).
import { useState } from "preact/hooks";
import { ApiFailure, get, post, query } from "../api.ts";
import { FormError, LoadState, Notice, StatusBadge, Table, useLoad, useForm } from "../components.tsx";
import { ago, dateTime, shortSha } from "../format.ts";
import { location, navigate } from "../router.ts";
import { me } from "../session.ts";
import type { Build, Deployment, Environment, Project } from "../types.ts";

/** Each state as words: the badge's symbol is only decoration. */
export const DEPLOYMENT_LABEL: Record<Deployment["status"], string> = {
  waiting_approval: "waiting for approval",
  approved: "approved, waiting for a runner",
  rejected: "rejected",
  running: "publishing",
  succeeded: "published",
  failed: "failed",
};
const TRIGGER: Record<Deployment["trigger"], string> = { build: "After the build", promotion: "Promoted", retry: "Retried" };

type Publisher = { name?: unknown; type: string; environment: string };

/** A publisher's name as the API gives it (lib/publishing/publishers.ts publisherName). */
export function publisherName(p: Publisher): string {
  return typeof p.name === "string" ? p.name : `${p.type === "github_release" ? "host_release" : p.type}-${p.environment}`;
}

/**
 * The approve route's rule, so the buttons show only where it would answer yes: a maintainer of
 * the project and, when the environment lists its approvers, one of them (lib/publishing/decide.ts).
 */
export function mayDecide(project: Project | undefined, env: Environment | undefined): boolean {
  if (project?.current_user_role !== "maintainer") return false;
  return !env || env.approvers.length === 0 || env.approvers.some((a) => a.id === me.value?.user.id);
}

function whoMayApprove(env: Environment | undefined): string {
  return env && env.approvers.length > 0 ? env.approvers.map((a) => a.email).join(", ") : "a maintainer of the project";
}

function When({ at }: { at: number | null }) {
  if (at == null) return null;
  return (
    <time dateTime={new Date(at * 1000).toISOString()} title={dateTime(at)}>
      {ago(at)}
    </time>
  );
}

/** Approve and Reject, each naming what it decides for a screen reader. */
function DecisionButtons({ d, onDecided }: { d: Deployment; onDecided: () => void }) {
  const [error, setError] = useState<ApiFailure | null>(null);
  const [busy, setBusy] = useState(false);
  const decide = async (decision: "approve" | "reject") => {
    setBusy(true);
    setError(null);
    try {
      await post(`/v1/deployments/${encodeURIComponent(d.id)}/${decision}`);
      onDecided();
    } catch (err) {
      setError(err as ApiFailure);
    } finally {
      setBusy(false);
    }
  };
  const what = `${d.publisher} of build #${d.build_number} to ${d.environment}`;
  return (
    <div class="decision">
      <button type="button" class="small" disabled={busy} aria-label={`Approve ${what}`} onClick={() => decide("approve")}>
        Approve
      </button>
      <button type="button" class="small danger" disabled={busy} aria-label={`Reject ${what}`} onClick={() => decide("reject")}>
        Reject
      </button>
      <FormError error={error} />
    </div>
  );
}

/** A failed deployment asked for again (POST /v1/deployments/{id}/retry): nothing the store has is sent twice. */
function RetryButton({ d, onRetried }: { d: Deployment; onRetried: () => void }) {
  const [error, setError] = useState<ApiFailure | null>(null);
  return (
    <>
      <button
        type="button"
        class="secondary small"
        aria-label={`Retry ${d.publisher} of build #${d.build_number} to ${d.environment}`}
        onClick={async () => {
          setError(null);
          try {
            await post(`/v1/deployments/${encodeURIComponent(d.id)}/retry`);
            onRetried();
          } catch (err) {
            setError(err as ApiFailure);
          }
        }}
      >
        Retry
      </button>
      <FormError error={error} />
    </>
  );
}

const mayAct = (project: Project | undefined) => project?.current_user_role === "developer" || project?.current_user_role === "maintainer";

/** Who decided and when, or who may; the buttons for those who may. */
function Decision({ d, env, project, onDecided }: { d: Deployment; env: Environment | undefined; project: Project | undefined; onDecided: () => void }) {
  if (d.decided_by)
    return (
      <span>
        {d.status === "rejected" ? "Rejected" : "Approved"} by {d.decided_by} <When at={d.decided_at} />
      </span>
    );
  if (d.status !== "waiting_approval") return <span class="muted">no approval needed</span>;
  return (
    <>
      <span>Waits for {whoMayApprove(env)}.</span>
      {mayDecide(project, env) && <DecisionButtons d={d} onDecided={onDecided} />}
    </>
  );
}

function StoreAnswer({ d }: { d: Deployment }) {
  if (d.store_answer)
    return (
      <span>
        {d.store_answer.summary}
        {d.store_answer.version && <> (version {d.store_answer.version})</>}
        {d.store_answer.url && (
          <>
            {" "}
            <a href={d.store_answer.url} rel="noreferrer" target="_blank">
              Open<span class="sr-only"> {d.target} in the store</span>
            </a>
          </>
        )}
      </span>
    );
  if (d.failure_reason) return <span class="field-error">{d.failure_reason}</span>;
  return <span class="muted">{d.status === "running" ? "publishing now" : "not sent"}</span>;
}

/** One deployment on a build's page. */
function DeploymentItem({ d, env, project, onChanged }: { d: Deployment; env: Environment | undefined; project: Project | undefined; onChanged: () => void }) {
  return (
    <li class={`deployment deployment-${d.status}`}>
      <p class="deployment-head">
        <StatusBadge status={d.status} label={DEPLOYMENT_LABEL[d.status]} /> <strong>{d.publisher}</strong> to <strong>{d.environment}</strong>{" "}
        <span class="muted">({d.target})</span>
      </p>
      <dl class="deployment-facts">
        <div>
          <dt>Asked for</dt>
          <dd>
            {TRIGGER[d.trigger]}
            {d.trigger === "build" ? "" : ` by ${d.requested_by}`} <When at={d.created_at} />
          </dd>
        </div>
        <div>
          <dt>Decision</dt>
          <dd>
            <Decision d={d} env={env} project={project} onDecided={onChanged} />
          </dd>
        </div>
        <div>
          <dt>The store said</dt>
          <dd>
            <StoreAnswer d={d} />
            {d.status === "failed" && mayAct(project) && (
              <div class="decision">
                <RetryButton d={d} onRetried={onChanged} />
              </div>
            )}
          </dd>
        </div>
      </dl>
    </li>
  );
}

/** Publish a successful build again, to an environment, with a track and rollout for Google Play. */
export function PromoteForm({
  build,
  environments,
  initialPublisher,
  exclude,
  onDone,
}: {
  build: Build;
  environments: Environment[];
  initialPublisher?: string;
  exclude?: string;
  onDone: (d: Deployment) => void;
}) {
  const publishers = (build.config_snapshot.execution_config.publish ?? []) as Publisher[];
  const [publisher, setPublisher] = useState(initialPublisher ?? publisherName(publishers[0]!));
  const targets = environments.filter((e) => e.name !== exclude);
  const [environment, setEnvironment] = useState(targets[0]?.name ?? "");
  const [track, setTrack] = useState("");
  const [rollout, setRollout] = useState("");
  const { error, submit } = useForm();
  const [done, setDone] = useState<Deployment | null>(null);
  const chosen = publishers.find((p) => publisherName(p) === publisher);
  const id = `promote-${build.id}`;
  if (targets.length === 0) return <p class="muted">This project has no other environment to publish to; a maintainer adds one through the API.</p>;
  const publish = submit(async () => {
    setDone(null);
    const overrides: Record<string, unknown> = {};
    if (chosen?.type === "google_play" && track.trim()) overrides.track = track.trim();
    if (chosen?.type === "google_play" && rollout.trim()) overrides.user_fraction = Number(rollout) / 100;
    const { deployment } = await post<{ deployment: Deployment }>(`/v1/builds/${encodeURIComponent(build.id)}/publish`, {
      publisher,
      environment,
      overrides,
    });
    setDone(deployment);
    onDone(deployment);
  });
  return (
    <form class="promote" aria-label={`Publish build #${build.build_number} to another environment`} onSubmit={publish}>
      <div class="row">
        {publishers.length > 1 && (
          <div class="field">
            <label for={`${id}-publisher`}>Publisher</label>
            <select id={`${id}-publisher`} value={publisher} onChange={(e) => setPublisher(e.currentTarget.value)}>
              {publishers.map((p) => (
                <option value={publisherName(p)}>
                  {publisherName(p)} ({p.type})
                </option>
              ))}
            </select>
          </div>
        )}
        <div class="field">
          <label for={`${id}-environment`}>Environment</label>
          <select id={`${id}-environment`} value={environment} onChange={(e) => setEnvironment(e.currentTarget.value)}>
            <EnvironmentOptions environments={targets} />
          </select>
        </div>
        {chosen?.type === "google_play" && (
          <>
            <div class="field">
              <label for={`${id}-track`}>Track</label>
              <input
                id={`${id}-track`}
                type="text"
                value={track}
                placeholder={String((chosen as { track?: string }).track ?? "internal")}
                onInput={(e) => setTrack(e.currentTarget.value)}
              />
            </div>
            <div class="field">
              <label for={`${id}-rollout`}>Rollout (% of users)</label>
              <input
                id={`${id}-rollout`}
                type="number"
                min="0.01"
                max="100"
                step="any"
                value={rollout}
                placeholder="100"
                onInput={(e) => setRollout(e.currentTarget.value)}
              />
            </div>
          </>
        )}
        <div class="field field-button">
          <button type="submit">Publish to {environment}</button>
        </div>
      </div>
      <p class="hint">The same files go out again, checked by their SHA-256; nothing is rebuilt. The environment's approval applies.</p>
      <FormError error={error} />
      {done && (
        <Notice kind="success">
          {done.publisher} of build #{done.build_number} to {done.environment}: {DEPLOYMENT_LABEL[done.status]}.
        </Notice>
      )}
    </form>
  );
}

function useEnvironments(projectId: string) {
  return useLoad(() => get<{ environments: Environment[] }>(`/v1/projects/${encodeURIComponent(projectId)}/environments`), [projectId]);
}

/** The build page's Publishing section: its deployments, and promotion for a successful build. */
export function BuildDeployments({ build, project }: { build: Build; project: Project | undefined }) {
  const deployments = useLoad(
    () => get<{ deployments: Deployment[] }>(`/v1/builds/${encodeURIComponent(build.id)}/deployments`),
    [build.id, build.status],
    5000,
  );
  const environments = useEnvironments(build.project_id);
  const publishers = (build.config_snapshot.execution_config.publish ?? []) as Publisher[];
  const list = deployments.data?.deployments ?? [];
  if (publishers.length === 0 && list.length === 0) return null;
  const envs = environments.data?.environments ?? [];
  const mayPromote = mayAct(project);
  return (
    <section aria-labelledby="h-publishing" class="publishing">
      <h2 id="h-publishing">Publishing</h2>
      <LoadState state={deployments} what="the deployments" />
      {deployments.data && list.length === 0 && (
        <p class="muted">
          {build.status === "succeeded" ? "Nothing was published from this build." : "When the build succeeds it publishes with "}
          {build.status !== "succeeded" && publishers.map((p) => `${publisherName(p)} to ${p.environment}`).join(", ")}
          {build.status !== "succeeded" && "."}
        </p>
      )}
      {list.length > 0 && (
        <ul class="deployments">
          {list.map((d) => (
            <DeploymentItem key={d.id} d={d} env={envs.find((e) => e.name === d.environment)} project={project} onChanged={() => void deployments.reload()} />
          ))}
        </ul>
      )}
      <p>
        <a href={`/projects/${encodeURIComponent(build.project_id)}?tab=deployments`}>All deployments of this project</a>
      </p>
      {mayPromote && build.status === "succeeded" && publishers.length > 0 && environments.data && (
        <details class="panel">
          <summary>Publish to another environment</summary>
          <PromoteForm build={build} environments={envs} onDone={() => void deployments.reload()} />
        </details>
      )}
    </section>
  );
}

/** Promotion from the Deployments tab: the build is loaded for its publishers. */
function PromoteFrom({ d, environments, onDone, onClose }: { d: Deployment; environments: Environment[]; onDone: () => void; onClose: () => void }) {
  const build = useLoad(() => get<{ build: Build }>(`/v1/builds/${encodeURIComponent(d.build_id)}`), [d.build_id]);
  return (
    <section class="panel" aria-labelledby="h-promote">
      <div class="page-head">
        <h3 id="h-promote">
          Promote build #{d.build_number} ({shortSha(d.commit_sha)}) from {d.environment}
        </h3>
        <button type="button" class="secondary small" onClick={onClose}>
          Close
        </button>
      </div>
      <LoadState state={build} what="the build" />
      {build.data && (
        <PromoteForm build={build.data.build} environments={environments} initialPublisher={d.publisher} exclude={d.environment} onDone={onDone} />
      )}
    </section>
  );
}

/** The project's Deployments tab, of one environment or all (`?tab=deployments&environment=…`). */
export function DeploymentsTab({ project }: { project: Project }) {
  const environment = new URLSearchParams(location.value.search).get("environment") ?? "";
  const environments = useEnvironments(project.id);
  const deployments = useLoad(
    () => get<{ deployments: Deployment[] }>(`/v1/projects/${encodeURIComponent(project.id)}/deployments${query({ environment, limit: 100 })}`),
    [project.id, environment],
    10000,
  );
  const [promoting, setPromoting] = useState<Deployment | null>(null);
  const envs = environments.data?.environments ?? [];
  const shown = environment ? envs.filter((e) => e.name === environment) : envs;
  const current = shown.flatMap((e) => e.current);
  const list = deployments.data?.deployments ?? [];
  const mayPromote = mayAct(project);
  const reload = () => {
    void deployments.reload();
    void environments.reload();
  };
  const buildLink = (d: { build_id: string; build_number: number; commit_sha: string }) => (
    <>
      <a href={`/projects/${encodeURIComponent(project.id)}/builds/${encodeURIComponent(d.build_id)}`}>#{d.build_number}</a>{" "}
      <code>{shortSha(d.commit_sha)}</code>
    </>
  );
  return (
    <section aria-labelledby="h-deployments">
      <h2 id="h-deployments">Deployments</h2>
      <LoadState state={environments} what="the environments" />
      {environments.data && envs.length === 0 && (
        <Notice>
          This project has no environment yet. A maintainer creates one (<code>PUT /v1/projects/{project.id}/environments/NAME</code>), and a pipeline's{" "}
          <code>publish:</code> list names it; see the publishing guide in the docs.
        </Notice>
      )}
      {envs.length > 0 && (
        <form class="filters" aria-label="Filter deployments" onSubmit={(e) => e.preventDefault()}>
          <div class="field">
            <label for="deployments-environment">Environment</label>
            <select
              id="deployments-environment"
              value={environment}
              onChange={(e) =>
                navigate(`?tab=deployments${e.currentTarget.value ? `&environment=${encodeURIComponent(e.currentTarget.value)}` : ""}`, { replace: true })
              }
            >
              <option value="">All environments</option>
              <EnvironmentOptions environments={envs} />
            </select>
          </div>
        </form>
      )}
      {envs.length > 0 && (
        <>
          <h3>Now on each track</h3>
          {current.length === 0 ? (
            <p class="muted">Nothing was published {environment ? `to ${environment} ` : ""}yet.</p>
          ) : (
            <Table
              caption="What each environment's tracks and groups hold now"
              columns={["Environment", "Track or group", "Version", "Build", "Published"]}
              class="stack"
            >
              {current.map((c) => (
                <tr key={c.deployment_id}>
                  <td data-label="Environment">{c.environment}</td>
                  <td data-label="Track or group">
                    {c.target}
                    <span class="muted"> · {c.publisher}</span>
                  </td>
                  <td data-label="Version">{c.version ?? "–"}</td>
                  <td data-label="Build">{buildLink(c)}</td>
                  <td data-label="Published">
                    <When at={c.published_at} />
                  </td>
                </tr>
              ))}
            </Table>
          )}
        </>
      )}
      {promoting && (
        <PromoteFrom
          d={promoting}
          environments={envs}
          onDone={reload}
          onClose={() => {
            setPromoting(null);
          }}
        />
      )}
      <h3>History</h3>
      <LoadState state={deployments} what="the deployments" />
      {deployments.data && list.length === 0 && <p class="muted">No deployment {environment ? `to ${environment} ` : ""}yet.</p>}
      {list.length > 0 && (
        <Table
          caption={<>Deployments{environment ? ` to ${environment}` : ""}, newest first</>}
          columns={["When", "Status", "Where", "Build", "Asked for by", "Decision", "The store said", mayPromote && "Actions"]}
          class="deployment-history stack"
        >
          {list.map((d) => (
            <tr key={d.id}>
              <td data-label="When">
                <When at={d.finished_at ?? d.created_at} />
              </td>
              <td data-label="Status">
                <StatusBadge status={d.status} label={DEPLOYMENT_LABEL[d.status]} />
              </td>
              <td data-label="Where">
                <strong>{d.environment}</strong>: {d.target}
                <span class="muted"> · {d.publisher}</span>
              </td>
              <td data-label="Build">
                {buildLink(d)} <span class="branch">{d.branch}</span>
              </td>
              <td data-label="Asked for by">{d.trigger === "build" ? `the build (${d.requested_by})` : `${d.requested_by}, ${d.trigger}`}</td>
              <td data-label="Decision">
                <Decision d={d} env={envs.find((e) => e.name === d.environment)} project={project} onDecided={reload} />
              </td>
              <td data-label="The store said">
                <StoreAnswer d={d} />
              </td>
              {mayPromote && (
                <td data-label="Actions">
                  {d.status === "succeeded" && (
                    <button
                      type="button"
                      class="secondary small"
                      aria-label={`Promote build #${d.build_number} (${d.publisher}) to another environment`}
                      onClick={() => setPromoting(d)}
                    >
                      Promote…
                    </button>
                  )}
                  {d.status === "failed" && <RetryButton d={d} onRetried={reload} />}
                </td>
              )}
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}

/** An option per environment, saying which ones wait for an approver. */
function EnvironmentOptions({ environments }: { environments: Environment[] }) {
  return (
    <>
      {environments.map((e) => (
        <option value={e.name}>
          {e.name}
          {e.requires_approval ? " (needs approval)" : ""}
        </option>
      ))}
    </>
  );
}
