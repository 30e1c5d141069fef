// Release notes sources (lib/publishing/notes.ts): a notes file as text or as Codemagic's JSON
// list, one text for a host that takes one, and the commits since the last publish, each once.
import { describe, expect, test } from "bun:test";
import { NotesFileProblem, notesFromChangelogs, notesText, parseNotesFile } from "../../../lib/publishing/notes.ts";
import { withNotesFiles } from "../../../lib/runners/protocol.ts";

describe("a notes file", () => {
  test.each([
    ["RELEASE_NOTES.md", "\n  Offline mode.\n", "en-US", { "en-US": "Offline mode." }],
    ["notes.txt", "Schneller", "de-DE", { "de-DE": "Schneller" }],
    ["notes.txt", "  \n", "en-US", {}],
    [
      "notes.json",
      '[{"language": "en-US", "text": "Faster "}, {"language": "fr-FR", "text": "Plus rapide"}]',
      "en-US",
      { "en-US": "Faster", "fr-FR": "Plus rapide" },
    ],
  ])("%s %p in %s", (path, text, language, expected) => expect(parseNotesFile(path, text, language)).toEqual(expected));

  test.each([
    ["notes.json", "{", /^the release notes file notes\.json is not valid JSON: /],
    ["notes.json", '{"en-US": "x"}', /^the release notes file notes\.json must be a JSON list of \{"language": "en-US", "text": "…"\}$/],
  ])("%s %p is refused, saying why", (path, text, message) => {
    expect(() => parseNotesFile(path, text, "en-US")).toThrow(NotesFileProblem);
    expect(() => parseNotesFile(path, text, "en-US")).toThrow(message);
  });
});

test("a host release's one description: the publisher's language, else the first given", () => {
  expect(notesText({ "de-DE": "Hallo", "en-US": "Hello" }, "en-US")).toBe("Hello");
  expect(notesText({ "de-DE": "Hallo" }, undefined)).toBe("Hallo");
  expect(notesText({}, "en-US")).toBe("");
});

test("notes from commits: each first line once, oldest first; without commits, the fallback", () => {
  expect(notesFromChangelogs(["Add login\nFix crash", "", "Fix crash\n  Dark mode  "], "Build #3")).toBe("Add login\nFix crash\nDark mode");
  expect(notesFromChangelogs(["", "  "], "Build #3 (0123456789ab)")).toBe("Build #3 (0123456789ab)");
});

test("the runner is asked to upload each publisher's notes file with the artifacts, once", () => {
  const config = {
    artifact_patterns: ["**/*.apk"],
    publish: [
      { type: "host_release", environment: "a", notes: { file: "CHANGES.md", language: "en-US" } },
      { type: "google_play", environment: "b", notes: { file: "CHANGES.md", language: "en-US" } },
      { type: "firebase_app_distribution", environment: "c", notes: { text: "x", language: "en-US" } },
    ],
  } as unknown as Parameters<typeof withNotesFiles>[0];
  expect(withNotesFiles(config).artifact_patterns).toEqual(["**/*.apk", "CHANGES.md"]);
  const none = { artifact_patterns: ["**/*.apk"], publish: [] } as unknown as Parameters<typeof withNotesFiles>[0];
  expect(withNotesFiles(none)).toBe(none);
});
