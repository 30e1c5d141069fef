// Status badges (docs/api.md "Status badges"): an SVG per pipeline and branch, in the flat style
// shields.io popularised, readable without sign-in only when the project allows it. Served with
// Cache-Control: no-cache and an ETag, so GitHub's image proxy (camo) revalidates on every view
// instead of keeping a stale badge (https://docs.github.com/en/authentication/keeping-your-account-and-data-secure/about-anonymized-urls).
import type { Executor } from "../db/client.ts";
import { one, num } from "../db/client.ts";
import { newestStatusArgs, newestStatusOfBranch } from "../builds/store.ts";

export type BadgeStatus = "passing" | "failing" | "running" | "unknown";

const COLOR: Record<BadgeStatus, string> = { passing: "#4c1", failing: "#e05d44", running: "#dfb317", unknown: "#9f9f9f" };

/** The newest build of the pipeline on the branch that was not canceled decides. */
export async function badgeStatus(db: Executor, pipelineId: string, branch: string): Promise<BadgeStatus> {
  const decides = ["queued", "running", "succeeded", "failed"] as const;
  const row = await one(db, `SELECT ${newestStatusOfBranch(decides, "+?", "+?")} AS status`, newestStatusArgs(decides, [pipelineId, branch]));
  switch (row?.status) {
    case "succeeded":
      return "passing";
    case "failed":
      return "failing";
    case "queued":
    case "running":
      return "running";
    default:
      return "unknown";
  }
}

export async function badgesArePublic(db: Executor, projectId: string): Promise<boolean> {
  const row = await one(db, "SELECT public_badges FROM project_operation_settings WHERE project_id = ?", [projectId]);
  return row !== null && num(row, "public_badges") === 1;
}

export async function setBadgesPublic(db: Executor, projectId: string, value: boolean, now: number): Promise<void> {
  await db.execute({
    sql: `INSERT INTO project_operation_settings (project_id, public_badges, updated_at) VALUES (?, ?, ?)
          ON CONFLICT (project_id) DO UPDATE SET public_badges = excluded.public_badges, updated_at = excluded.updated_at`,
    args: [projectId, value ? 1 : 0, now],
  });
}

const escape = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
/** Verdana 11px averages about 6.5 px a character; a little slack keeps long labels inside. */
const width = (s: string) => Math.round(s.length * 6.5 + 10);

export function badgeSvg(label: string, status: BadgeStatus): string {
  const l = width(label);
  const r = width(status);
  const total = l + r;
  const text = `${escape(label)}: ${status}`;
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${total}" height="20" role="img" aria-label="${text}"><title>${text}</title>` +
    `<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>` +
    `<clipPath id="r"><rect width="${total}" height="20" rx="3" fill="#fff"/></clipPath>` +
    `<g clip-path="url(#r)"><rect width="${l}" height="20" fill="#555"/><rect x="${l}" width="${r}" height="20" fill="${COLOR[status]}"/><rect width="${total}" height="20" fill="url(#s)"/></g>` +
    `<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">` +
    `<text x="${l / 2}" y="14">${escape(label)}</text><text x="${l + r / 2}" y="14">${status}</text></g></svg>`
  );
}
