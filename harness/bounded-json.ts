import { createHash, type Hash } from 'node:crypto';

/**
 * The bounded form of a server's message: what the suite keeps of anything a server sends, so that
 * its memory does not grow with what the server writes. A string longer than STRING_KEEP bytes
 * (and MARKER_ROOM more) keeps its first and last STRING_KEEP / 2 bytes around a marker with its
 * size and a hash; once a message has kept MESSAGE_STRINGS_KEEP bytes of strings, further long
 * strings keep only STRING_KEEP_SPENT bytes; once it has kept MESSAGE_NODES values, further array
 * items and object members are counted, not kept. Everything else (keys, `isError`, ids, short
 * texts) is exact. Bounding a bounded form again changes nothing (a cut string with its marker is
 * within the bound), so a message bounded as it arrived and then again after a library parsed it
 * (HTTP: harness/http-target.ts) keeps the marker of the first cut, with the whole string's size
 * and hash.
 */
export const STRING_KEEP = 64 * 1024;
const STRING_KEEP_SPENT = 512;
/** A string up to this many bytes over its limit is kept whole: more than any marker takes (under 100 bytes). */
const MARKER_ROOM = 128;
const MESSAGE_STRINGS_KEEP = 256 * 1024;
const MESSAGE_NODES = 10_000;
const SCALAR_KEEP = 1024;
/** Containers nested deeper are not kept (the parser below has no such limit: it never recurses). */
const MAX_DEPTH = 100;

/** What a bounded message lost: the size and sha256 of the whole, as received. */
export interface Elision {
  bytes: number;
  sha256: string;
}
/** Messages that are a bounded form, by object: the size and hash of the whole message. */
export const elidedMessages = new WeakMap<object, Elision>();

const ELIDED_MEMBERS = '…';
const shortHash = (hash: Hash) => hash.digest('hex').slice(0, 16);
const marker = (bytes: number, hash: string) => `…[${bytes} bytes elided here by the conformance suite, sha256 ${hash}…]…`;
const moreItems = (count: number) => `…[${count} more items not kept by the conformance suite]`;

/** How much of a message may still be kept. */
class Budget {
  nodes = 0;
  strings = 0;
  /** Whether one more value fits (and counts it). */
  takeNode(): boolean {
    if (this.nodes >= MESSAGE_NODES) return false;
    this.nodes++;
    return true;
  }
  /** The most bytes of the next string that may be kept. */
  stringLimit(): number {
    return this.strings >= MESSAGE_STRINGS_KEEP ? STRING_KEEP_SPENT : STRING_KEEP;
  }
  keep(bytes: number): void {
    this.strings += bytes;
  }
}

/**
 * A parsed value (a message an SDK transport parsed), bounded: the value itself when nothing in it
 * is over the bounds, else a copy that is, marked where it was cut (not in elidedMessages: the
 * text as sent is not known here, and serializing it again would only double the memory it took).
 */
export function boundValue(value: unknown): unknown {
  const budget = new Budget();
  let cut = false;
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === 'string') {
      const limit = budget.stringLimit();
      const bytes = Buffer.byteLength(v, 'utf8');
      budget.keep(Math.min(bytes, limit));
      if (bytes <= limit + MARKER_ROOM) return v;
      cut = true;
      const half = limit / 2;
      const hash = shortHash(createHash('sha256').update(v));
      return v.slice(0, half) + marker(bytes - limit, hash) + v.slice(-half);
    }
    if (typeof v !== 'object' || v === null) return v;
    const entries = Array.isArray(v) ? v.map((item, i) => [i, item] as const) : Object.entries(v);
    const kept: [string | number, unknown][] = [];
    for (const [key, inner] of entries) {
      if (depth > MAX_DEPTH || !budget.takeNode()) break;
      kept.push([key, walk(inner, depth + 1)]);
    }
    const dropped = entries.length - kept.length;
    if (dropped > 0) cut = true;
    if (dropped === 0 && kept.every(([key, inner]) => (v as Record<string, unknown>)[key] === inner)) return v;
    if (Array.isArray(v)) return [...kept.map(([, inner]) => inner), ...(dropped > 0 ? [moreItems(dropped)] : [])];
    const out = Object.fromEntries(kept);
    if (dropped > 0) out[ELIDED_MEMBERS] = moreItems(dropped);
    return out;
  };
  const bounded = walk(value, 0);
  return cut ? bounded : value;
}

/** Decodes a run of a JSON string's raw bytes (between its quotes), exactly when whole; at a cut, up to a few characters of an escape or a character split there are dropped. */
function decodeRaw(raw: Buffer, cutAtEnd: boolean, cutAtStart: boolean): string {
  let text = raw.toString('utf8');
  // A character split by the cut decodes as U+FFFD: dropped.
  if (cutAtEnd && text.endsWith('\uFFFD')) text = text.slice(0, -1);
  if (cutAtStart && text.startsWith('\uFFFD')) text = text.slice(1);
  for (let tries = 0; tries < 8; tries++) {
    try {
      return JSON.parse(`"${text}"`) as string;
    } catch {
      if (!cutAtEnd && !cutAtStart) throw new SyntaxError('a string that is not valid JSON');
      text = cutAtEnd ? text.slice(0, -1) : text.slice(1);
    }
  }
  return '';
}

/**
 * One string being read: whole while short, else its head, a rolling tail and a hash. The pieces
 * are held as they came (views of the chunks read, never copied: a copy of every piece of a long
 * string is as much garbage again as the string), at most about one piece more than the bound.
 */
class StringSink {
  private head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private total = 0;
  private hash?: Hash;

  constructor(
    private readonly limit: number,
    readonly keep: boolean,
  ) {}

  add(bytes: Buffer): void {
    this.total += bytes.length;
    if (!this.keep) return;
    if (this.hash === undefined && this.total <= this.limit + MARKER_ROOM) {
      this.head.push(bytes);
      this.headBytes += bytes.length;
      return;
    }
    if (this.hash === undefined) {
      // Over the limit: the head is cut to its half, the rest starts the tail.
      this.hash = createHash('sha256');
      const start = Buffer.concat([...this.head, bytes]);
      this.hash.update(start);
      this.head = [start.subarray(0, this.limit / 2)];
      this.headBytes = this.limit / 2;
      this.tail = [start.subarray(this.limit / 2)];
      this.tailBytes = start.length - this.limit / 2;
    } else {
      this.hash.update(bytes);
      this.tail.push(bytes);
      this.tailBytes += bytes.length;
    }
    while (this.tailBytes - this.tail[0]!.length >= this.limit / 2) this.tailBytes -= this.tail.shift()!.length;
  }

  finish(): string {
    if (!this.keep) return '';
    if (this.hash === undefined) return decodeRaw(Buffer.concat(this.head), false, false);
    const tail = Buffer.concat(this.tail);
    const shownTail = tail.subarray(tail.length - this.limit / 2);
    const head = decodeRaw(Buffer.concat(this.head), true, false);
    return head + marker(this.total - this.headBytes - shownTail.length, shortHash(this.hash)) + decodeRaw(shownTail, false, true);
  }

  /** Bytes kept of it (0 when it is not kept at all). */
  get kept(): number {
    return this.keep ? Math.min(this.total, this.limit) : 0;
  }
  get cut(): boolean {
    return this.hash !== undefined;
  }
}

type Frame = { array: unknown[]; dropped: number; keep: boolean } | { object: Record<string, unknown>; key?: string; dropped: number; keep: boolean };
type State = 'value' | 'first-item' | 'first-key' | 'key' | 'colon' | 'after' | 'string' | 'scalar' | 'done';

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
/** A number's or a literal's first byte: - 0-9 t f n. */
const isScalarStart = (c: number) => c === 0x2d || (c >= 0x30 && c <= 0x39) || c === 0x74 || c === 0x66 || c === 0x6e;
/** A byte a number or literal may hold (JSON.parse judges the whole): - + . 0-9 letters. */
const isScalarByte = (c: number) => c === 0x2d || c === 0x2b || c === 0x2e || (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a);
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Parses one JSON text given in pieces (a stdio line too long to hold whole), keeping its bounded
 * form: memory stays within the bounds above whatever the text's size. Throws a SyntaxError on
 * text that is not JSON (as JSON.parse would; a long string's elided middle is not checked).
 */
export class BoundedJsonParser {
  private readonly budget = new Budget();
  private readonly hash = createHash('sha256');
  private readonly stack: Frame[] = [];
  private state: State = 'value';
  private string?: StringSink;
  private stringIsKey = false;
  /** After a backslash at the end of the previous piece: the next byte is escaped. */
  private escaped = false;
  private scalar = '';
  private scalarBytes = 0;
  private root: unknown;
  private bytes = 0;
  private cut = false;
  /** The next backslash in the piece being read, from where strings last looked (-2: none left): each piece is searched once. */
  private backslashAt = -1;

  feed(piece: Buffer): void {
    this.hash.update(piece);
    this.bytes += piece.length;
    this.backslashAt = -1;
    let at = 0;
    while (at < piece.length) {
      if (this.state === 'string') at = this.readString(piece, at);
      else if (this.state === 'scalar') at = this.readScalar(piece, at);
      else if (isSpace(piece[at]!)) at++;
      else this.structural(piece[at++]!);
    }
  }

  /** The bounded value, once the whole text was fed; undefined for a text of only white space. */
  finish(): unknown {
    if (this.state === 'scalar') this.endScalar();
    if (this.state === 'value' && this.stack.length === 0) return undefined;
    if (this.state !== 'done') throw new SyntaxError('unexpected end of JSON input');
    if (this.cut && typeof this.root === 'object' && this.root !== null) elidedMessages.set(this.root, { bytes: this.bytes, sha256: shortHash(this.hash) });
    return this.root;
  }

  private get keeping(): boolean {
    return this.stack.length === 0 || this.stack[this.stack.length - 1]!.keep;
  }

  private structural(c: number): void {
    const top = this.stack[this.stack.length - 1];
    switch (this.state) {
      case 'first-item':
        if (c === 0x5d) return this.close(c);
        return this.startValue(c);
      case 'value':
        return this.startValue(c);
      case 'first-key':
        if (c === 0x7d) return this.close(c);
      // falls through: a key
      case 'key':
        if (c !== QUOTE) throw new SyntaxError('expected a key');
        this.startString(true);
        return;
      case 'colon':
        if (c !== 0x3a) throw new SyntaxError('expected ":"');
        this.state = 'value';
        return;
      case 'after':
        if (c === 0x2c && top) this.state = 'array' in top ? 'value' : 'key';
        else if (c === 0x5d || c === 0x7d) this.close(c);
        else throw new SyntaxError('expected "," or the end of a container');
        return;
      default:
        throw new SyntaxError('unexpected text after the JSON value');
    }
  }

  private startValue(c: number): void {
    if (c === QUOTE) return this.startString(false);
    if (c === 0x7b || c === 0x5b) {
      const keep = this.keeping && this.budget.takeNode();
      if (!keep && this.keeping) this.dropOne();
      this.stack.push(c === 0x7b ? { object: {}, dropped: 0, keep } : { array: [], dropped: 0, keep });
      this.state = c === 0x7b ? 'first-key' : 'first-item';
      return;
    }
    if (!isScalarStart(c)) throw new SyntaxError(`unexpected character ${JSON.stringify(String.fromCharCode(c))}`);
    this.scalar = String.fromCharCode(c);
    this.scalarBytes = 1;
    this.state = 'scalar';
  }

  private startString(isKey: boolean): void {
    const keep = this.keeping && (isKey || this.budget.takeNode());
    if (!keep && this.keeping && !isKey) this.dropOne();
    this.string = new StringSink(this.budget.stringLimit(), keep);
    this.stringIsKey = isKey;
    this.state = 'string';
  }

  /** Reads string bytes up to its closing quote (or the piece's end); returns where it stopped. */
  private readString(piece: Buffer, from: number): number {
    let at = from;
    if (this.escaped) {
      this.escaped = false;
      at++;
    }
    for (;;) {
      const quote = piece.indexOf(QUOTE, at);
      if (this.backslashAt !== -2 && this.backslashAt < at) {
        const found = piece.indexOf(BACKSLASH, at);
        this.backslashAt = found >= 0 ? found : -2;
      }
      const backslash = this.backslashAt === -2 ? -1 : this.backslashAt;
      if (backslash >= 0 && (quote < 0 || backslash < quote)) {
        if (backslash + 1 >= piece.length) {
          this.escaped = true;
          this.string!.add(piece.subarray(from));
          return piece.length;
        }
        at = backslash + 2;
        continue;
      }
      if (quote < 0) {
        this.string!.add(piece.subarray(from));
        return piece.length;
      }
      this.string!.add(piece.subarray(from, quote));
      this.endString();
      return quote + 1;
    }
  }

  private endString(): void {
    const sink = this.string!;
    this.string = undefined;
    const text = sink.finish();
    this.budget.keep(sink.kept);
    if (sink.cut) this.cut = true;
    const top = this.stack[this.stack.length - 1];
    if (this.stringIsKey && top && 'object' in top) {
      top.key = text;
      this.state = 'colon';
      return;
    }
    this.value(text, sink.keep);
  }

  private readScalar(piece: Buffer, from: number): number {
    let at = from;
    while (at < piece.length && isScalarByte(piece[at]!)) at++;
    this.scalarBytes += at - from;
    if (this.scalar.length < SCALAR_KEEP) this.scalar += piece.subarray(from, Math.min(at, from + SCALAR_KEEP)).toString('latin1');
    if (at < piece.length) this.endScalar();
    return at;
  }

  private endScalar(): void {
    this.state = 'value';
    if (this.scalarBytes > SCALAR_KEEP) {
      this.cut = true;
      return this.value(`…[a number of ${this.scalarBytes} characters, not kept by the conformance suite]`);
    }
    this.value(JSON.parse(this.scalar) as unknown);
  }

  /**
   * A value is complete: into its container (or as the root), if kept. `kept`: whether it was
   * (a string's or container's fate is decided as it starts; a number's or literal's, here).
   */
  private value(value: unknown, kept?: boolean): void {
    const top = this.stack[this.stack.length - 1];
    this.state = top ? 'after' : 'done';
    if (!top) {
      this.root = value;
      return;
    }
    if (!top.keep) return;
    if (kept === false) return;
    if (kept === undefined && !this.budget.takeNode()) return this.dropOne();
    if ('array' in top) top.array.push(value);
    else setMember(top.object, top.key!, value);
  }

  private dropOne(): void {
    const top = this.stack[this.stack.length - 1];
    if (top) top.dropped++;
    this.cut = true;
  }

  private close(c: number): void {
    const frame = this.stack.pop()!;
    if (c !== ('array' in frame ? 0x5d : 0x7d)) throw new SyntaxError('mismatched brackets');
    let value: unknown;
    if ('array' in frame) value = frame.dropped ? [...frame.array, moreItems(frame.dropped)] : frame.array;
    else {
      if (frame.dropped) frame.object[ELIDED_MEMBERS] = moreItems(frame.dropped);
      value = frame.object;
    }
    this.value(value, frame.keep);
  }
}

/** As JSON.parse sets a member: an own property, `__proto__` too. */
function setMember(object: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  else object[key] = value;
}
