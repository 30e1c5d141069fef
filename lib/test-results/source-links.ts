// Links from a test's file and line to the file on the source host, at the build's commit, so a
// stack trace on the build page opens the line that failed. The template keeps `{path}` and
// `{line}` for the web app to fill in; a plain git remote has no web view, so no link.
// URL shapes: GitHub https://docs.github.com/en/repositories/working-with-files/using-files/getting-permanent-links-to-files,
// GitLab https://docs.gitlab.com/ee/user/project/repository/files/#link-to-specific-lines,
// Gitea/Forgejo /{owner}/{repo}/src/commit/{sha}/{path}#L{line}, Bitbucket Cloud /src/{sha}/{path}#lines-{line}.
import type { Repository } from "../db/repositories.ts";

export function sourceFileUrl(repo: Pick<Repository, "provider" | "host_url" | "full_name"> | null, commitSha: string): string | null {
  if (!repo || !/^https?:\/\//.test(repo.host_url)) return null;
  const base = `${repo.host_url.replace(/\/+$/, "")}/${repo.full_name.split("/").map(encodeURIComponent).join("/")}`;
  switch (repo.provider) {
    case "github":
      return `${base}/blob/${commitSha}/{path}#L{line}`;
    case "gitlab":
      return `${base}/-/blob/${commitSha}/{path}#L{line}`;
    case "gitea":
      return `${base}/src/commit/${commitSha}/{path}#L{line}`;
    case "bitbucket":
      return `${base}/src/${commitSha}/{path}#lines-{line}`;
    default:
      return null;
  }
}
