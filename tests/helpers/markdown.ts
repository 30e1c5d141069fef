// Fenced code blocks of the Markdown docs, for tests that run what the docs say as written.
// A block's info string is its language and then words that say what a test does with it
// (CommonMark 0.31 section 4.5: the info string is the text after the opening fence).

export interface FencedBlock {
  /** The words of the info string: the language first (`sh`), then markers (`quickstart`, `run`, …). */
  info: string[];
  /** The block's text, its indentation (as much as the opening fence had) removed. */
  code: string;
  /** 1-based line of the opening fence, for messages. */
  line: number;
}

/** Every fenced block (``` or ~~~) of `markdown`, in order, optionally only within the section under `heading` (the whole line, e.g. "## Quick start"). */
export function fencedBlocks(markdown: string, heading?: string): FencedBlock[] {
  let lines = markdown.split("\n");
  let offset = 0;
  if (heading !== undefined) {
    const start = lines.indexOf(heading);
    if (start < 0) throw new Error(`no heading ${JSON.stringify(heading)}`);
    const level = heading.match(/^#+/)![0].length;
    let end = lines.findIndex((l, i) => i > start && /^#+ /.test(l) && l.match(/^#+/)![0].length <= level);
    if (end < 0) end = lines.length;
    offset = start;
    lines = lines.slice(start, end);
  }
  const blocks: FencedBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = lines[i]!.match(/^( *)(`{3,}|~{3,})\s*(.*)$/);
    if (!open) continue;
    const [, indent, fence, info] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const close = lines[j]!.match(/^ *(`{3,}|~{3,})\s*$/);
      if (close && close[1]![0] === fence![0] && close[1]!.length >= fence!.length) break;
      body.push(lines[j]!.startsWith(indent!) ? lines[j]!.slice(indent!.length) : lines[j]!.trimStart());
    }
    blocks.push({ info: info!.trim().split(/\s+/).filter(Boolean), code: body.join("\n") + "\n", line: offset + i + 1 });
    i = j;
  }
  return blocks;
}
