// Release notes as the store gets them (docs/publishing.md "Release notes"): resolved when the
// deployment was made (given text, commits), or read here from the build's notes file: plain
// text in the publisher's language, or Codemagic's JSON form [{"language": "en-US", "text": "…"}].
import { readFileSync } from "node:fs";
import type { Publisher } from "../../lib/publishing/publishers.ts";
import { PublishFailure, type LocalArtifact } from "./context.ts";

export function resolveNotes(p: Publisher, resolved: Record<string, string>, artifacts: LocalArtifact[]): Record<string, string> {
  const file = artifacts.find((a) => a.role === "notes");
  if (!file) return resolved;
  const text = readFileSync(file.file, "utf8");
  if (!file.path.toLowerCase().endsWith(".json")) return { [p.notes?.language ?? "en-US"]: text.trim() };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new PublishFailure(`the release notes file ${file.path} is not valid JSON: ${(error as Error).message}`);
  }
  if (!Array.isArray(parsed) || !parsed.every((n) => n && typeof n.language === "string" && typeof n.text === "string")) {
    throw new PublishFailure(`the release notes file ${file.path} must be a JSON list of {"language": "en-US", "text": "…"}`);
  }
  return Object.fromEntries((parsed as { language: string; text: string }[]).map((n) => [n.language, n.text.trim()]));
}

/** Notes cut to a store's limit, with a line saying which were cut. */
export function limitNotes(notes: Record<string, string>, max: number, log: (text: string) => void, store: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [language, text] of Object.entries(notes)) {
    if ([...text].length <= max) out[language] = text;
    else {
      out[language] = `${[...text].slice(0, max - 1).join("")}…`;
      log(`[roost] the ${language} release notes are longer than ${store}'s ${max} characters; they were cut`);
    }
  }
  return out;
}
