// Release notes as every publisher sends them (docs/publishing.md "Release notes"), one text per
// language. Three sources, one per publisher: `text` given in roost.yaml, `from_commits` (both
// resolved when the deployment is made, lib/publishing/plan.ts), or `file`: a file of the
// repository or one the build wrote, uploaded with the build's artifacts (the daemon adds its path
// to the patterns the runner uploads, lib/runners/protocol.ts) and read when the publish runs, by
// the runner (runner/publish/notes.ts) or by the daemon for a host release. A notes file is plain
// text in the publisher's language, or Codemagic's JSON form [{"language": "en-US", "text": "…"}].

/** Why a notes file cannot be used, as the deployment's failure says it. */
export class NotesFileProblem extends Error {}

/** A notes file's text per language: JSON (a `.json` path) or plain text in `language`. Throws NotesFileProblem. */
export function parseNotesFile(path: string, text: string, language: string): Record<string, string> {
  if (!path.toLowerCase().endsWith(".json")) {
    const trimmed = text.trim();
    return trimmed ? { [language]: trimmed } : {};
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new NotesFileProblem(`the release notes file ${path} is not valid JSON: ${(error as Error).message}`);
  }
  if (!Array.isArray(parsed) || !parsed.every((n) => n && typeof n.language === "string" && typeof n.text === "string")) {
    throw new NotesFileProblem(`the release notes file ${path} must be a JSON list of {"language": "en-US", "text": "…"}`);
  }
  return Object.fromEntries((parsed as { language: string; text: string }[]).map((n) => [n.language, n.text.trim()]));
}

/** One text for a host that takes one (a release's description): the publisher's language, else the first given. */
export function notesText(notes: Record<string, string>, language: string | undefined): string {
  return notes[language ?? "en-US"] ?? Object.values(notes)[0] ?? "";
}

/**
 * The commits' first lines as notes, oldest first, each once: the changelogs of the builds after
 * the one this publisher last published to this environment, up to this one.
 */
export function notesFromChangelogs(changelogs: string[], fallback: string): string {
  const lines: string[] = [];
  for (const changelog of changelogs) for (const line of changelog.split("\n")) if (line.trim() && !lines.includes(line.trim())) lines.push(line.trim());
  return lines.length ? lines.join("\n") : fallback;
}
