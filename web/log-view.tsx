// The build log: virtualised (only the rows in view are in the DOM, so 100,000 lines scroll like
// 100), a header row per step that folds, ANSI colours as classes on text spans (Anser parses;
// nothing is ever inserted as HTML), a link per line (#L<seq>, kept across reloads), search, and
// follow mode that sticks to the bottom until the person scrolls up.
import Anser from "anser";
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { timeOfDay, duration } from "./format.ts";
import type { LogLine, Step } from "./types.ts";
import { StatusBadge } from "./components.tsx";

export const LINE_HEIGHT = 20;
const OVERSCAN = 20;

/** ESC sequences Anser leaves (OSC titles, cursor moves) and other control characters: dropped, never interpreted. */
const LEFTOVER_CONTROLS = /\x1b\][^\x07\x1b]*(\x07|\x1b\\)?|\x1b[[(][0-9;?]*[ -/]*[@-~]|\x1b.|[\x00-\x08\x0b-\x1f\x7f]/g;
const ANSI = /\x1b\[[0-9;?]*[ -/]*[@-~]/g;

export function plainText(text: string): string {
  return text.replace(ANSI, "").replace(LEFTOVER_CONTROLS, "");
}

interface Group {
  name: string;
  start: number;
  count: number;
}

/** The log's lines, appended in seq order; a line whose seq was already seen is dropped (a reconnect never shows a line twice). */
export class LogStore {
  lines: LogLine[] = [];
  lastSeq = 0;
  hasCut = false;
  duplicatesDropped = 0;

  append(batch: LogLine[]): number {
    let added = 0;
    for (const line of batch) {
      if (line.seq === null) {
        if (this.hasCut) continue;
        this.hasCut = true;
      } else if (line.seq <= this.lastSeq) {
        this.duplicatesDropped++;
        continue;
      } else {
        this.lastSeq = line.seq;
      }
      this.lines.push(line);
      added++;
    }
    return added;
  }
}

function groupsOf(lines: LogLine[]): Group[] {
  const groups: Group[] = [];
  let current: Group | null = null;
  for (let i = 0; i < lines.length; i++) {
    const step = lines[i]!.step;
    if (!current || current.name !== step) {
      current = { name: step, start: i, count: 0 };
      groups.push(current);
    }
    current.count++;
  }
  return groups;
}

function Ansi({ text }: { text: string }) {
  const parts = Anser.ansiToJson(text, { use_classes: true, remove_empty: true });
  return (
    <>
      {parts.map((p) => {
        const classes = [
          p.fg && !p.fg.includes("truecolor") ? `${p.fg}-fg` : "",
          p.bg && !p.bg.includes("truecolor") ? `${p.bg}-bg` : "",
          ...p.decorations.map((d) => `ansi-${d}`),
        ]
          .filter(Boolean)
          .join(" ");
        const style: Record<string, string> = {};
        if (p.fg_truecolor) style.color = `rgb(${p.fg_truecolor})`;
        if (p.bg_truecolor) style.backgroundColor = `rgb(${p.bg_truecolor})`;
        const content = p.content.replace(LEFTOVER_CONTROLS, "");
        return classes || p.fg_truecolor || p.bg_truecolor ? (
          <span class={classes || undefined} style={style}>
            {content}
          </span>
        ) : (
          content
        );
      })}
    </>
  );
}

export interface LogViewProps {
  store: LogStore;
  /** Bumped whenever the store has new lines. */
  version: number;
  steps: Step[];
  live: boolean;
  /** The seq to show (from #L<seq>), or null. */
  target: number | null;
  complete: boolean;
}

export function LogView({ store, version, steps, live, target, complete }: LogViewProps) {
  const box = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(600);
  const [folded, setFolded] = useState<Set<number>>(new Set());
  const [follow, setFollow] = useState(live && target === null);
  const [search, setSearch] = useState("");
  const [matchIndex, setMatchIndex] = useState(0);
  const programmatic = useRef(false);
  const lines = store.lines;

  const groups = useMemo(() => groupsOf(lines), [version, lines.length]);
  // Rows: -(g+1) is the header of group g; n >= 0 is line n.
  const rows = useMemo(() => {
    const out: number[] = [];
    groups.forEach((g, gi) => {
      out.push(-(gi + 1));
      if (!folded.has(gi)) for (let i = g.start; i < g.start + g.count; i++) out.push(i);
    });
    return out;
  }, [groups, folded]);
  const rowOfLine = (index: number) => rows.indexOf(index);

  const matches = useMemo(() => {
    if (search.trim() === "") return [];
    const needle = search.toLowerCase();
    const found: number[] = [];
    for (let i = 0; i < lines.length; i++) if (plainText(lines[i]!.text).toLowerCase().includes(needle)) found.push(i);
    return found;
  }, [search, version, lines.length]);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const observer = new ResizeObserver(() => setHeight(el.clientHeight));
    observer.observe(el);
    setHeight(el.clientHeight);
    return () => observer.disconnect();
  }, []);

  const scrollToRow = (row: number, center = true) => {
    const el = box.current;
    if (!el || row < 0) return;
    programmatic.current = true;
    el.scrollTop = Math.max(0, row * LINE_HEIGHT - (center ? el.clientHeight / 2 : 0));
    setScrollTop(el.scrollTop);
  };

  const reveal = (lineIndex: number) => {
    const gi = groups.findIndex((g) => lineIndex >= g.start && lineIndex < g.start + g.count);
    if (gi >= 0 && folded.has(gi)) {
      const next = new Set(folded);
      next.delete(gi);
      setFolded(next);
      return true;
    }
    return false;
  };

  // Follow: stay at the bottom while new lines arrive.
  useLayoutEffect(() => {
    if (follow && box.current) {
      programmatic.current = true;
      box.current.scrollTop = box.current.scrollHeight;
      setScrollTop(box.current.scrollTop);
    }
  }, [rows, follow]);

  const revealInWindow = useRef<number | null>(null);
  const lastMatchRevealed = useRef<number | null>(null);
  // #L<seq>: show that line once it has arrived.
  const [targetShown, setTargetShown] = useState<number | null>(null);
  useLayoutEffect(() => {
    if (target === null || targetShown === target) return;
    const index = lines.findIndex((l) => l.seq === target);
    if (index < 0) return;
    if (reveal(index)) return;
    setFollow(false);
    scrollToRow(rowOfLine(index));
    setTargetShown(target);
    revealInWindow.current = target;
  }, [target, rows, complete]);

  const current = matches.length > 0 ? matches[Math.min(matchIndex, matches.length - 1)]! : -1;
  useLayoutEffect(() => {
    if (current < 0) return;
    if (reveal(current)) return;
    setFollow(false);
    scrollToRow(rowOfLine(current));
    // Into the window only when the person moved to another match (not on every new batch of a live log).
    const seq = lines[current]?.seq;
    if (seq != null && seq !== lastMatchRevealed.current) revealInWindow.current = lastMatchRevealed.current = seq;
  }, [current, search, rows]);

  // The line scrolled to inside the log (a #L link, a search match) must be in the window too: the
  // log box may reach below the fold, and the browser's own #fragment scroll found no element at load.
  useLayoutEffect(() => {
    if (revealInWindow.current === null) return;
    const row = box.current?.querySelector(`#L${revealInWindow.current}`);
    if (!row) return;
    revealInWindow.current = null;
    programmatic.current = true;
    row.scrollIntoView({ block: "nearest" });
  });

  const first = Math.max(0, Math.floor(scrollTop / LINE_HEIGHT) - OVERSCAN);
  const last = Math.min(rows.length, Math.ceil((scrollTop + height) / LINE_HEIGHT) + OVERSCAN);
  const stepResult = (name: string) => steps.find((s) => s.name === name);

  return (
    <div class="log-panel">
      <div class="log-tools" role="toolbar" aria-label="Log tools">
        <div class="field inline-field">
          <label for="log-search">Search the log</label>
          <input
            id="log-search"
            type="search"
            value={search}
            onInput={(e) => {
              setSearch(e.currentTarget.value);
              setMatchIndex(0);
            }}
            onKeyDown={(e) => {
              if (e.key === "Enter") {
                e.preventDefault();
                setMatchIndex((i) => (matches.length ? (i + (e.shiftKey ? matches.length - 1 : 1)) % matches.length : 0));
              }
            }}
          />
        </div>
        <span class="muted" role="status" aria-live="polite">
          {search
            ? matches.length
              ? `${Math.min(matchIndex, matches.length - 1) + 1} of ${matches.length}`
              : "no match"
            : `${lines.length.toLocaleString()} lines`}
        </span>
        <button
          type="button"
          class="secondary small"
          disabled={!matches.length}
          onClick={() => setMatchIndex((i) => (i + matches.length - 1) % matches.length)}
        >
          Previous
        </button>
        <button type="button" class="secondary small" disabled={!matches.length} onClick={() => setMatchIndex((i) => (i + 1) % matches.length)}>
          Next
        </button>
        <label class="inline">
          <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.currentTarget.checked)} /> Follow
        </label>
        <button type="button" class="secondary small" onClick={() => setFolded(new Set(groups.map((_, i) => i)))}>
          Fold all
        </button>
        <button type="button" class="secondary small" onClick={() => setFolded(new Set())}>
          Unfold all
        </button>
      </div>
      <div
        class="log"
        ref={box}
        tabIndex={0}
        role="region"
        aria-label="Build log"
        data-lines={lines.length}
        data-last-seq={store.lastSeq}
        data-complete={complete ? "true" : "false"}
        onScroll={(e) => {
          const el = e.currentTarget;
          setScrollTop(el.scrollTop);
          if (programmatic.current) {
            programmatic.current = false;
            return;
          }
          const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < LINE_HEIGHT * 2;
          if (follow && !atBottom) setFollow(false);
        }}
      >
        {lines.length === 0 && <p class="log-empty">{complete ? "This build wrote no log." : "Waiting for the first line…"}</p>}
        <div class="log-spacer" style={{ height: `${rows.length * LINE_HEIGHT}px` }}>
          <div class="log-rows" style={{ transform: `translateY(${first * LINE_HEIGHT}px)` }}>
            {rows.slice(first, last).map((row) => {
              if (row < 0) {
                const gi = -row - 1;
                const g = groups[gi]!;
                const result = stepResult(g.name);
                const open = !folded.has(gi);
                return (
                  <div class="log-row log-step" key={`g${gi}`}>
                    <button
                      type="button"
                      aria-expanded={open}
                      onClick={() => {
                        const next = new Set(folded);
                        if (open) next.add(gi);
                        else next.delete(gi);
                        setFolded(next);
                      }}
                    >
                      <span aria-hidden="true">{open ? "▾" : "▸"}</span> {g.name || "Roost"}{" "}
                      <span class="muted">
                        ({g.count} {g.count === 1 ? "line" : "lines"})
                      </span>
                    </button>
                    {result && (
                      <span class="step-meta">
                        <StatusBadge status={result.status} /> {duration(result.duration_ms)}
                        {result.exit_code !== null ? ` · exit ${result.exit_code}` : ""}
                      </span>
                    )}
                  </div>
                );
              }
              const line = lines[row]!;
              if (line.seq === null) {
                return (
                  <div class="log-row log-cut" key={`cut`} role="note">
                    ✂ {line.text}
                  </div>
                );
              }
              const classes = [
                "log-row",
                "log-line",
                line.stream === "stderr" ? "stderr" : "",
                row === current ? "match" : "",
                line.seq === target ? "target" : "",
              ]
                .filter(Boolean)
                .join(" ");
              return (
                <div class={classes} key={line.seq} id={`L${line.seq}`}>
                  <a class="ln" href={`#L${line.seq}`} aria-label={`Line ${line.seq}`}>
                    {line.seq}
                  </a>
                  <span class="ts">{timeOfDay(line.ts)}</span>
                  <span class="text">
                    <Ansi text={line.text} />
                  </span>
                </div>
              );
            })}
          </div>
        </div>
      </div>
    </div>
  );
}
