// Projects: the list (with a filter), and a new project from the source hosts' repository catalogue.
import { useState } from "preact/hooks";
import { ApiFailure, get, post, query } from "../api.ts";
import { FormError, LoadState, PageTitle, useLoad } from "../components.tsx";
import { navigate } from "../router.ts";
import { roleAtLeast, role } from "../session.ts";
import type { Project, Repository } from "../types.ts";
import { ago } from "../format.ts";

export function Projects() {
  const [filter, setFilter] = useState("");
  const state = useLoad(() => get<{ projects: Project[] }>("/v1/projects?limit=200"), []);
  const projects = (state.data?.projects ?? []).filter((p) => (p.name + " " + p.repository_full_name).toLowerCase().includes(filter.toLowerCase()));
  return (
    <section>
      <PageTitle title="Projects">
        {roleAtLeast(role.value, "maintainer") && (
          <a class="button" href="/projects/new">
            New project
          </a>
        )}
      </PageTitle>
      <div class="field inline-field">
        <label for="project-filter">Filter projects</label>
        <input id="project-filter" type="search" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} />
      </div>
      <LoadState state={state} what="projects" />
      {state.data && projects.length === 0 && <p class="muted">No projects{filter ? " match" : " yet"}.</p>}
      <ul class="cards">
        {projects.map((p) => (
          <li key={p.id} class="project-card">
            <a href={`/projects/${encodeURIComponent(p.id)}`}>
              <strong>{p.name}</strong>
            </a>
            <span class="muted">{p.repository_full_name}</span>
            <span class="muted">
              your role: {p.current_user_role} · created {ago(p.created_at)}
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}

export function NewProject() {
  const [q, setQ] = useState("");
  const [error, setError] = useState<ApiFailure | null>(null);
  const state = useLoad(() => get<{ repositories: Repository[]; total: number }>(`/v1/integration-repositories${query({ q, limit: 50 })}`), [q]);
  return (
    <section>
      <PageTitle title="New project" />
      <p>Pick the repository to build. Repositories come from the source-host integrations an admin has connected.</p>
      <div class="field inline-field">
        <label for="repo-search">Search repositories</label>
        <input id="repo-search" type="search" value={q} onInput={(e) => setQ(e.currentTarget.value)} placeholder="owner/name" />
      </div>
      <FormError error={error} />
      <LoadState state={state} what="repositories" />
      {state.data && state.data.repositories.length === 0 && (
        <p class="muted">No repository matches. An admin adds source hosts under Administration → Integrations.</p>
      )}
      <ul class="cards">
        {state.data?.repositories.map((r) => (
          <li key={r.id} class="project-card">
            <strong>{r.full_name}</strong>
            <span class="muted">
              {r.provider} · default branch {r.default_branch}
              {r.is_private ? " · private" : ""}
            </span>
            <button
              type="button"
              class="small"
              aria-label={`Create project for ${r.full_name}`}
              onClick={async () => {
                setError(null);
                try {
                  const { project } = await post<{ project: Project }>("/v1/projects", { repository_id: r.id });
                  navigate(`/projects/${encodeURIComponent(project.id)}?tab=pipelines`);
                } catch (err) {
                  setError(err as ApiFailure);
                }
              }}
            >
              Create project
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}
