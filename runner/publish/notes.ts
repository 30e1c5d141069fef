// Release notes as the store gets them (docs/publishing.md "Release notes"): resolved when the
// deployment was made (given text, commits), or read here from the notes file the build uploaded
// (lib/publishing/notes.ts reads it, for the daemon's host releases too).
import { readFileSync } from "node:fs";
import type { Publisher } from "../../lib/publishing/publishers.ts";
import { NotesFileProblem, parseNotesFile } from "../../lib/publishing/notes.ts";
import { PublishFailure, type LocalArtifact } from "./context.ts";

export function resolveNotes(p: Publisher, resolved: Record<string, string>, artifacts: LocalArtifact[]): Record<string, string> {
  const file = artifacts.find((a) => a.role === "notes");
  if (!file) return resolved;
  try {
    return parseNotesFile(file.path, readFileSync(file.file, "utf8"), p.notes?.language ?? "en-US");
  } catch (error) {
    if (error instanceof NotesFileProblem) throw new PublishFailure(error.message);
    throw error;
  }
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
