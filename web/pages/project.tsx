// One project: its builds (with filters, a manual build, cancel and re-run on the build page), its
// pipelines (web/pages/project-pipelines.tsx: from the pipeline file or configured here), and for
// maintainers the webhook URL and token, members, and the webhook deliveries with each pipeline's
// decision ("why didn't my push build?").
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiFailure, del, get, patch, post, put, query } from "../api.ts";
import {
  CopyButton,
  Field,
  FilterSelect,
  FormError,
  LoadState,
  Notice,
  PageTitle,
  SecretOnce,
  showingError,
  TextField,
  useField,
  useForm,
  useLoad,
} from "../components.tsx";
import { location, navigate } from "../router.ts";
import type { Build, Member, Pipeline, Project, User } from "../types.ts";
import { isAdmin } from "../session.ts";
import { BuildTable } from "./dashboard.tsx";
import { useBuildEvents } from "../live.ts";
import { PipelinesTab } from "./project-pipelines.tsx";
import { DeliveryLog } from "./delivery-log.tsx";
import { VariablesTab } from "./project-variables.tsx";
import { SchedulesTab } from "./project-schedules.tsx";
import { NotificationsTab } from "./project-notifications.tsx";
import { BadgesRetentionTab } from "./project-badges-retention.tsx";
import { DeploymentsTab } from "./deployments.tsx";

const ROLE_RANK = { viewer: 0, developer: 1, maintainer: 2 } as const;
type ProjectRole = keyof typeof ROLE_RANK;
const may = (project: Project, minimum: ProjectRole) => ROLE_RANK[project.current_user_role] >= ROLE_RANK[minimum];

export function ProjectPage({ project_id }: Record<string, string>) {
  const state = useLoad(() => get<{ project: Project }>(`/v1/projects/${encodeURIComponent(project_id!)}`), [project_id]);
  const pipelines = useLoad(() => get<{ pipelines: Pipeline[] }>(`/v1/projects/${encodeURIComponent(project_id!)}/pipelines`), [project_id]);
  const tab = new URLSearchParams(location.value.search).get("tab") ?? "builds";
  const project = state.data?.project;
  if (!project) return <LoadState state={state} what="the project" />;
  const tabs: Array<[string, string, boolean]> = [
    ["builds", "Builds", true],
    ["pipelines", "Pipelines", true],
    ["deployments", "Deployments", true],
    ["deliveries", "Webhook deliveries", may(project, "maintainer")],
    ["schedules", "Schedules", true],
    ["variables", "Variables and secrets", may(project, "maintainer")],
    ["notifications", "Notifications", may(project, "maintainer")],
    ["badges", "Badges and retention", true],
    ["settings", "Settings", may(project, "maintainer")],
  ];
  return (
    <section>
      <PageTitle title={project.name} />
      <p class="muted">
        {project.repository_full_name} · default branch <span class="branch">{project.default_branch}</span> · your role: {project.current_user_role}
      </p>
      <nav class="tabs" aria-label="Project sections">
        {tabs
          .filter(([, , shown]) => shown)
          .map(([key, label]) => (
            <a key={key} href={`?tab=${key}`} aria-current={tab === key ? "page" : undefined}>
              {label}
            </a>
          ))}
      </nav>
      {tab === "builds" && <Builds project={project} pipelines={pipelines.data?.pipelines ?? []} />}
      {tab === "pipelines" && (
        <PipelinesTab project={project} pipelines={pipelines.data?.pipelines ?? []} reload={pipelines.reload} maintainer={may(project, "maintainer")} />
      )}
      {tab === "deployments" && <DeploymentsTab project={project} />}
      {tab === "deliveries" && may(project, "maintainer") && <Deliveries project={project} />}
      {tab === "schedules" && <SchedulesTab project={project} pipelines={pipelines.data?.pipelines ?? []} maintainer={may(project, "maintainer")} />}
      {tab === "variables" && may(project, "maintainer") && <VariablesTab project={project} pipelines={pipelines.data?.pipelines ?? []} />}
      {tab === "notifications" && may(project, "maintainer") && <NotificationsTab project={project} />}
      {tab === "badges" && <BadgesRetentionTab project={project} maintainer={may(project, "maintainer")} />}
      {tab === "settings" && may(project, "maintainer") && <Settings project={project} reload={state.reload} />}
    </section>
  );
}

/** A page of GET /v1/projects/{id}/builds or /v1/pipelines/{id}/builds. */
interface BuildPage {
  builds: Build[];
  next_cursor: string | null;
}

function Builds({ project, pipelines }: { project: Project; pipelines: Pipeline[] }) {
  const [status, setStatus] = useState("");
  const [branch, setBranch] = useState("");
  const [trigger, setTrigger] = useState("");
  const [pipelineId, setPipelineId] = useState("");
  const base = pipelineId ? `/v1/pipelines/${encodeURIComponent(pipelineId)}/builds` : `/v1/projects/${encodeURIComponent(project.id)}/builds`;
  // Keyset pages (docs/api.md "Builds"): the cursors of the pages walked so far, the last one
  // shown. A page below the newest stays the same while builds are created, so it is kept live too.
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  useEffect(() => setCursors([]), [base, status, branch, trigger]);
  const builds = useLoad(
    () => get<BuildPage>(base + query({ status, branch, trigger_type: trigger, limit: 50, cursor })),
    [base, status, branch, trigger, cursor],
    5000,
    () => events.live(),
  );
  // A pushed change of this project's builds reloads the filtered page (one request, at most every half second).
  const pending = useRef<ReturnType<typeof setTimeout> | null>(null);
  const events = useBuildEvents(
    (build) => {
      if (build.project_id !== project.id || pending.current) return;
      pending.current = setTimeout(() => {
        pending.current = null;
        void builds.reload();
      }, 500);
    },
    () => void builds.reload(),
  );
  useEffect(() => () => clearTimeout(pending.current ?? undefined), []);
  return (
    <>
      {may(project, "developer") && pipelines.length > 0 && <ManualBuild project={project} pipelines={pipelines} />}
      {pipelines.length === 0 && (
        <Notice>This project has no pipeline yet. {may(project, "maintainer") ? <a href="?tab=pipelines">Create one</a> : "A maintainer creates one."}</Notice>
      )}
      <form class="filters" aria-label="Filter builds" onSubmit={(e) => e.preventDefault()}>
        <FilterSelect id="filter-pipeline" label="Pipeline" value={pipelineId} set={setPipelineId} options={pipelines.map((p) => [p.id, p.name])} />
        <FilterSelect id="filter-status" label="Status" value={status} set={setStatus} options={["queued", "running", "succeeded", "failed", "canceled"]} />
        <FilterSelect id="filter-trigger" label="Trigger" value={trigger} set={setTrigger} options={["webhook", "manual", "rerun", "schedule"]} />
        <div class="field">
          <label for="filter-branch">Branch</label>
          <input id="filter-branch" type="search" value={branch} onChange={(e) => setBranch(e.currentTarget.value)} />
        </div>
      </form>
      <LoadState state={builds} what="builds" />
      {builds.data && (
        <>
          {builds.data.builds.length === 0 && builds.data.next_cursor ? (
            // A page reads a bounded number of builds; with several filters it may find none there.
            <p class="muted">None among the builds searched on this page; older ones may match.</p>
          ) : (
            <BuildTable builds={builds.data.builds} showProject={false} caption="Builds" />
          )}
          {(cursor || builds.data.next_cursor) && (
            <p class="page-actions">
              {cursor && (
                <button type="button" class="secondary" onClick={() => setCursors((c) => c.slice(0, -1))}>
                  Newer builds
                </button>
              )}
              {builds.data.next_cursor && (
                <button type="button" class="secondary" onClick={() => setCursors((c) => [...c, builds.data!.next_cursor!])}>
                  Older builds
                </button>
              )}
            </p>
          )}
        </>
      )}
    </>
  );
}

/** A list filter: "All" (the empty value) or one of `options` (a value, or a value and its text). */
function ManualBuild({ project, pipelines }: { project: Project; pipelines: Pipeline[] }) {
  const [pipelineId, setPipelineId] = useState(pipelines[0]?.id ?? "");
  const form = useForm();
  const { error, busy, submit } = form;
  const branch = useField(form, "branch");
  const sha = useField(form, "commit_sha");
  const start = submit(async () => {
    const { build } = await post<{ build: Build }>(`/v1/projects/${encodeURIComponent(project.id)}/builds`, {
      pipeline_id: pipelineId,
      branch: branch.value || undefined,
      commit_sha: sha.value || undefined,
    });
    navigate(`/projects/${encodeURIComponent(project.id)}/builds/${encodeURIComponent(build.id)}`);
  });
  return (
    <details class="panel">
      <summary>Start a build</summary>
      <form aria-label="Start a build" onSubmit={start}>
        <Field label="Pipeline" name="pipeline_id" error={error}>
          {(id, describedBy) => (
            <select id={id} aria-describedby={describedBy} value={pipelineId} onChange={(e) => setPipelineId(e.currentTarget.value)}>
              {pipelines.map((p) => (
                <option value={p.id}>{p.name}</option>
              ))}
            </select>
          )}
        </Field>
        <TextField label="Branch" {...branch} placeholder={project.default_branch} />
        <TextField label="Commit (full id; empty: the branch's head)" {...sha} />
        <FormError error={error} fields={["pipeline_id", "branch", "commit_sha"]} />
        <button type="submit" disabled={busy}>
          Start build
        </button>
      </form>
    </details>
  );
}

function Deliveries({ project }: { project: Project }) {
  return <DeliveryLog path={`/v1/projects/${encodeURIComponent(project.id)}/webhook-deliveries`} limit={50} />;
}

function Settings({ project, reload }: { project: Project; reload: () => Promise<void> }) {
  const form = useForm();
  const { error, submit } = form;
  const name = useField(form, "name", project.name);
  const description = useField(form, "description", project.description);
  const branch = useField(form, "default_branch", project.default_branch);
  const [saved, setSaved] = useState(false);
  const [hook, setHook] = useState<{ token: string; webhook_url: string } | null>(null);
  const [hookError, setHookError] = useState<ApiFailure | null>(null);
  const githubUrl = `${window.location.origin}/v1/webhooks/github`;
  const save = submit(async () => {
    setSaved(false);
    await patch(`/v1/projects/${encodeURIComponent(project.id)}`, {
      name: name.value,
      description: description.value,
      default_branch: branch.value,
    });
    setSaved(true);
    await reload();
  });
  return (
    <>
      <form class="panel" aria-label="Project settings" onSubmit={save}>
        <h2>Settings</h2>
        <TextField label="Name" {...name} />
        <TextField label="Description" {...description} />
        <TextField label="Default branch" {...branch} />
        <FormError error={error} fields={["name", "description", "default_branch"]} />
        {saved && <Notice kind="success">Saved.</Notice>}
        <button type="submit">Save settings</button>
      </form>
      <section class="panel" aria-labelledby="h-webhook">
        <h2 id="h-webhook">Webhook</h2>
        {project.repository_provider === "github" ? (
          <p>
            GitHub: the integration's app delivers to <code>{githubUrl}</code> <CopyButton text={githubUrl} />, signed with the app's webhook secret.
          </p>
        ) : (
          <>
            <p>Paste the URL and the secret token into the repository's webhook settings (GitLab: Settings → Webhooks; push and merge request events).</p>
            {hook && (
              <SecretOnce title="Webhook secret token." secret={hook.token}>
                <p>
                  URL: <code>{hook.webhook_url}</code> <CopyButton text={hook.webhook_url} label="Copy URL" />
                </p>
              </SecretOnce>
            )}
            <FormError error={hookError} />
            <button
              type="button"
              class="secondary"
              onClick={() => showingError(setHookError, async () => setHook(await post(`/v1/projects/${encodeURIComponent(project.id)}/webhook-token`)))}
            >
              {hook ? "Rotate the token again" : "Create or rotate the webhook token"}
            </button>
          </>
        )}
      </section>
      <Members project={project} />
      <section class="panel" aria-labelledby="h-danger">
        <h2 id="h-danger">Delete project</h2>
        <button
          type="button"
          class="danger"
          onClick={async () => {
            if (!confirm(`Delete ${project.name} with all its pipelines and builds?`)) return;
            await del(`/v1/projects/${encodeURIComponent(project.id)}`);
            navigate("/projects");
          }}
        >
          Delete {project.name}
        </button>
      </section>
    </>
  );
}

function Members({ project }: { project: Project }) {
  const state = useLoad(() => get<{ members: Member[] }>(`/v1/projects/${encodeURIComponent(project.id)}/members`), [project.id]);
  const [error, setError] = useState<ApiFailure | null>(null);
  const userId = useField({ error }, "user_id");
  const [email, setEmail] = useState("");
  const [candidates, setCandidates] = useState<User[]>([]);
  const [role, setRole] = useState("developer");
  const admin = isAdmin.value;
  // Admins pick people by e-mail from GET /v1/users (admin only), searched as they type.
  useEffect(() => {
    if (!admin) return;
    const timer = setTimeout(() => {
      get<{ users: User[] }>(`/v1/users${query({ q: email.trim(), limit: 20 })}`)
        .then((r) => setCandidates(r.users))
        .catch(() => setCandidates([]));
    }, 150);
    return () => clearTimeout(timer);
  }, [email, admin]);
  const set = (id: string, r: string) =>
    showingError(setError, async () => {
      await put(`/v1/projects/${encodeURIComponent(project.id)}/members/${encodeURIComponent(id)}`, { role: r });
      await state.reload();
    });
  return (
    <section class="panel" aria-labelledby="h-members">
      <h2 id="h-members">Members</h2>
      <LoadState state={state} what="members" />
      <ul class="plain">
        {state.data?.members.map((m) => (
          <li key={m.user_id} class="row">
            <span>{m.email}</span>
            <label class="sr-only" for={`role-${m.user_id}`}>
              Role of {m.email}
            </label>
            <select id={`role-${m.user_id}`} value={m.role} onChange={(e) => void set(m.user_id, e.currentTarget.value)}>
              {["viewer", "developer", "maintainer"].map((r) => (
                <option value={r}>{r}</option>
              ))}
            </select>
            <button
              type="button"
              class="secondary small"
              onClick={async () => {
                await del(`/v1/projects/${encodeURIComponent(project.id)}/members/${encodeURIComponent(m.user_id)}`).catch((e: ApiFailure) => setError(e));
                await state.reload();
              }}
            >
              Remove
            </button>
          </li>
        ))}
      </ul>
      <form
        class="row"
        aria-label="Add a member"
        onSubmit={async (e) => {
          e.preventDefault();
          if (!admin) return void set(userId.value, role);
          // The picker names people by e-mail; the API takes the user's id.
          const wanted = email.trim().toLowerCase();
          try {
            const found = (await get<{ users: User[] }>(`/v1/users${query({ q: wanted, limit: 50 })}`)).users.find((u) => u.email.toLowerCase() === wanted);
            if (found) return void (await set(found.id, role));
            setError(
              new ApiFailure(0, "not_found", "No active user has this e-mail address; invite them under Administration → Users first.", [
                { path: "email", message: "No active user has this e-mail address; invite them under Administration → Users first." },
              ]),
            );
          } catch (err) {
            setError(err as ApiFailure);
          }
        }}
      >
        {admin ? (
          <Field label="Member's e-mail address" name="email" error={error} hint="Pick a user; invite new people under Administration → Users.">
            {(id, describedBy, invalid) => (
              <>
                <input
                  id={id}
                  name="email"
                  type="email"
                  list="member-candidates"
                  autoComplete="off"
                  value={email}
                  required
                  aria-describedby={describedBy}
                  aria-invalid={invalid || undefined}
                  onInput={(e) => setEmail(e.currentTarget.value)}
                />
                <datalist id="member-candidates">
                  {candidates.map((u) => (
                    <option key={u.id} value={u.email}>
                      {u.role}
                    </option>
                  ))}
                </datalist>
              </>
            )}
          </Field>
        ) : (
          <TextField label="User id" {...userId} hint="Only admins can look people up by e-mail; ask one for the id." />
        )}
        <div class="field">
          <label for="member-role">Role</label>
          <select id="member-role" value={role} onChange={(e) => setRole(e.currentTarget.value)}>
            {["viewer", "developer", "maintainer"].map((r) => (
              <option value={r}>{r}</option>
            ))}
          </select>
        </div>
        <button type="submit">Add</button>
      </form>
      <FormError error={error} fields={["user_id", "email", "role"]} />
    </section>
  );
}
