// Links from a test's file and line to the file on the forge, at the build's commit, so a stack
// trace on the build page opens the line that failed. The template keeps `{path}` and `{line}` for
// the web app to fill in; each forge says its URL shape (lib/forges/<forge>/index.ts fileLink), and a
// plain git remote has no web view, so no link.
import type { Repository } from "../integrations/repositories.ts";
import { forgeNamed } from "../forges/registry.ts";

export function sourceFileUrl(repo: Pick<Repository, "provider" | "host_url" | "full_name"> | null, commitSha: string): string | null {
  const link = repo && forgeNamed(repo.provider)?.fileLink;
  if (!repo || !link || !/^https?:\/\//.test(repo.host_url)) return null;
  return link(`${repo.host_url.replace(/\/+$/, "")}/${repo.full_name.split("/").map(encodeURIComponent).join("/")}`, commitSha);
}
