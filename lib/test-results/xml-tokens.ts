// A small streaming XML tokenizer for test reports: enough XML 1.0 to read JUnit files, and
// nothing that untrusted input could turn against the daemon. There is no DTD processing: a
// DOCTYPE is skipped, entities other than the five predefined ones and character references
// are left as written (so no entity expansion and no external entity is ever fetched), and a
// single tag longer than `maxTokenChars` ends the read. Text arrives in pieces as it streams
// (a 50 MB stack trace never sits in one string); the consumer bounds what it keeps.
// No XML dependency is used: none is in the tree, and this subset is about 150 lines.

export interface XmlHandler {
  open(name: string, attributes: Record<string, string>, selfClosing: boolean): void;
  close(name: string): void;
  text(text: string): void;
}

export interface XmlTokenizer {
  push(chunk: string): void;
  /** Ends the input; returns the names of the elements still open (empty when well closed). */
  end(): string[];
  /** Set when the input stopped being XML; nothing after it is read. */
  readonly error: string | null;
}

const PREDEFINED: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" };

export function decodeEntities(text: string): string {
  if (!text.includes("&")) return text;
  return text.replace(/&(#x[0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-zA-Z]{2,4});/g, (whole, ref: string) => {
    if (ref[0] === "#") {
      const code = ref[1] === "x" ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : whole;
    }
    return PREDEFINED[ref] ?? whole;
  });
}

const NAME = /^[A-Za-z_:][-A-Za-z0-9_.:]*/;
const ATTRIBUTE = /([A-Za-z_:][-A-Za-z0-9_.:]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;

export function xmlTokenizer(handler: XmlHandler, maxTokenChars: number): XmlTokenizer {
  let buffer = "";
  let inCdata = false;
  let error: string | null = null;
  const open: string[] = [];

  /** Index just past the `>` closing the tag at `from`, skipping quoted values; -1 if not here yet. */
  function tagEnd(from: number): number {
    let quote = "";
    for (let i = from + 1; i < buffer.length; i++) {
      const c = buffer[i];
      if (quote) {
        if (c === quote) quote = "";
      } else if (c === '"' || c === "'") quote = c;
      else if (c === ">") return i + 1;
    }
    return -1;
  }

  function tag(raw: string): void {
    if (raw.startsWith("</")) {
      const name = raw.slice(2, -1).trim();
      // Tolerant of a missing close tag: pop up to the matching element.
      const at = open.lastIndexOf(name);
      if (at !== -1) {
        while (open.length > at) handler.close(open.pop()!);
      }
      return;
    }
    const body = raw.slice(1, raw.endsWith("/>") ? -2 : -1);
    const name = NAME.exec(body)?.[0];
    if (!name) {
      error = `"${raw.slice(0, 40)}" is not an XML tag`;
      return;
    }
    const attributes: Record<string, string> = {};
    for (const m of body.slice(name.length).matchAll(ATTRIBUTE)) attributes[m[1]!] = decodeEntities(m[2] ?? m[3] ?? "");
    const selfClosing = raw.endsWith("/>");
    handler.open(name, attributes, selfClosing);
    if (selfClosing) handler.close(name);
    else open.push(name);
  }

  function run(final: boolean): void {
    let pos = 0;
    while (pos < buffer.length && !error) {
      if (inCdata) {
        const close = buffer.indexOf("]]>", pos);
        if (close === -1) {
          // Keep two characters back: "]]" may be the start of the terminator.
          const upto = final ? buffer.length : Math.max(pos, buffer.length - 2);
          if (upto > pos) handler.text(buffer.slice(pos, upto));
          pos = upto;
          break;
        }
        if (close > pos) handler.text(buffer.slice(pos, close));
        pos = close + 3;
        inCdata = false;
        continue;
      }
      if (buffer[pos] !== "<") {
        const next = buffer.indexOf("<", pos);
        let upto = next === -1 ? buffer.length : next;
        if (next === -1 && !final) {
          // An entity may be split across chunks: keep a trailing "&..." without its ";".
          const amp = buffer.lastIndexOf("&");
          if (amp >= pos && amp > buffer.length - 12 && !buffer.includes(";", amp)) upto = amp;
        }
        if (upto > pos && open.length > 0) handler.text(decodeEntities(buffer.slice(pos, upto)));
        pos = upto;
        if (next === -1) break;
        continue;
      }
      const rest = buffer.length - pos;
      if (buffer.startsWith("<![CDATA[", pos)) {
        inCdata = true;
        pos += 9;
        continue;
      }
      // A chunk may end inside "<![CDATA[" or "<!--": wait for the rest before deciding.
      if (!final && rest < 9 && ["<![CDATA[", "<!--"].some((p) => p.startsWith(buffer.slice(pos)))) break;
      let end: number;
      if (buffer.startsWith("<!--", pos)) end = ((i) => (i === -1 ? -1 : i + 3))(buffer.indexOf("-->", pos + 4));
      else if (buffer.startsWith("<?", pos)) end = ((i) => (i === -1 ? -1 : i + 2))(buffer.indexOf("?>", pos + 2));
      else if (buffer.startsWith("<!", pos)) end = doctypeEnd(pos);
      else end = tagEnd(pos);
      if (end === -1) {
        if (rest > maxTokenChars) error = `a tag, comment or declaration longer than ${maxTokenChars} characters`;
        break;
      }
      if (buffer[pos + 1] !== "!" && buffer[pos + 1] !== "?") tag(buffer.slice(pos, end));
      pos = end;
    }
    buffer = buffer.slice(pos);
  }

  /** A DOCTYPE with an internal subset ends at "]>"; its declarations are skipped, never applied. */
  function doctypeEnd(from: number): number {
    const bracket = buffer.indexOf("[", from);
    const gt = buffer.indexOf(">", from);
    if (gt === -1) return -1;
    if (bracket !== -1 && bracket < gt) {
      const close = buffer.indexOf("]>", bracket);
      return close === -1 ? -1 : close + 2;
    }
    return gt + 1;
  }

  return {
    push(chunk: string): void {
      if (error) return;
      buffer += chunk;
      run(false);
    },
    end(): string[] {
      if (!error) run(true);
      return [...open];
    },
    get error() {
      return error;
    },
  };
}
