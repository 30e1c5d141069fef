// A forge is a source host Roost builds from: GitHub, GitLab, Gitea (and Forgejo), Bitbucket
// Cloud, or a plain git remote. Each lives in its own folder under lib/forges/.

/** gitea covers Forgejo (the same API and webhooks); git is a plain remote read with git ls-remote. */
export type ForgeName = "github" | "gitlab" | "gitea" | "git" | "bitbucket";
