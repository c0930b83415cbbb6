/**
 * Characters of a message read to find its cause; the rest is not looked at. Grouping runs on
 * the event loop for every record a failure-groups read, a dry run, a re-drive by cause or a
 * canary touches, so the work per record must not grow with the message (a handler can echo a
 * 200 KB payload into its error). Two messages that differ only after this many characters are
 * one cause, like two patterns that differ only after `MAX_PATTERN`.
 */
export const MAX_SCANNED_MESSAGE = 4_096;

/** Longest pattern kept: a message that differs only after this many characters is the same cause. */
export const MAX_PATTERN = 300;

/** A scanned message: its pattern, and how much work it took (for tests that bound it). */
export interface ScannedMessage {
  pattern: string;
  /** Characters looked at, all passes together: at most a small multiple of `MAX_SCANNED_MESSAGE`. */
  steps: number;
  /** True when the message was longer than `MAX_SCANNED_MESSAGE` and its end was not read. */
  cut: boolean;
}

/** Closing quote of each opening one; an apostrophe between two letters closes nothing (see isApostrophe). */
const CLOSERS: Record<string, string> = { '"': '"', "'": "'", '`': '`', '\u201c': '\u201d', '\u2018': '\u2019' };
/** Quotes whose value may hold a backslash escape (`"a \"b\" c"`), as in JSON and most languages. */
const ESCAPING = new Set(['"', "'"]);
/** Quotes that double as an apostrophe: they open only where no word precedes them. */
const APOSTROPHES = new Set(["'", '\u2018', '\u2019']);

const WORD = /^[A-Za-z0-9_]$/;
const LETTER_OR_DIGIT = /^[\p{L}\p{N}]$/u;
const HEX = /^[0-9a-fA-F]$/;
const DIGIT = /^[0-9]$/;
const SPACE = /^\s$/;
const EMAIL_LOCAL = /^[A-Za-z0-9_.+-]$/;
const DOMAIN = /^[A-Za-z0-9.-]$/;

const isWord = (c: string | undefined) => c !== undefined && WORD.test(c);
const isLetterOrDigit = (c: string | undefined) => c !== undefined && LETTER_OR_DIGIT.test(c);
const isHex = (c: string | undefined) => c !== undefined && HEX.test(c);
const isDigit = (c: string | undefined) => c !== undefined && DIGIT.test(c);

/**
 * The message with what varies per entry folded into placeholders, in one pass from left to
 * right over at most `MAX_SCANNED_MESSAGE` characters: every test looks at a fixed number of
 * characters or at a run it then consumes, and a quote found not to close remembers that no later
 * quote of its kind closes either, so no character is looked at more than a few times whatever
 * the message holds (no regular expression that can backtrack over it).
 *
 * Folds, in order of precedence at a position: quoted values (`"…"`, `'…'`, `` `…` ``, `“…”`,
 * `‘…’`) → `<q>`, where an apostrophe between two letters is part of the word (`can't`,
 * `O'Brien`) and one right after a word opens nothing (`users'`); e-mail addresses → `<email>`;
 * UUIDs → `<uuid>`; stream ids (10+ digits, `-`, digits) → `<id>`; `0x` hex and hex runs of 8 or
 * more holding a digit → `<hex>`; a number with a unit of up to 5 letters (`1000ms`) → `<n>ms`;
 * other words of 4+ characters mixing letters and digits → `<id>`;
 * numbers (with a sign where no word precedes it, and `.`/`,` groups) → `<n>`. Whitespace runs
 * become one space. A quote that does not close is a character like any other, unless the message
 * was cut: then its value ran past the cut and it folds to the end.
 */
export function scanFailureMessage(message: string): ScannedMessage {
  const cut = message.length > MAX_SCANNED_MESSAGE;
  const text = cut ? message.slice(0, MAX_SCANNED_MESSAGE) : message;
  return new Scanner(text, cut).run();
}

class Scanner {
  private readonly out: string[] = [];
  private steps = 0;
  /** Quote kinds known not to close from here on (a scan from an earlier one reached the end). */
  private readonly unclosed = new Set<string>();
  /** End of the e-mail-shaped run last tried: positions before it were tried already. */
  private emailTriedUntil = 0;

  constructor(
    private readonly text: string,
    private readonly cut: boolean,
  ) {}

  run(): ScannedMessage {
    const { text } = this;
    let i = 0;
    while (i < text.length) {
      this.steps += 1;
      const next = this.quote(i) ?? this.space(i) ?? this.email(i) ?? this.word(i);
      if (next === null) {
        this.out.push(text[i]);
        i += 1;
      } else i = next;
    }
    const pattern = this.out.join('').trim();
    return {
      pattern: pattern.length > MAX_PATTERN ? `${pattern.slice(0, MAX_PATTERN)}…` : pattern,
      steps: this.steps,
      cut: this.cut,
    };
  }

  /** A quoted value from `i`: the position after it, having emitted `<q>`; null when `i` opens none. */
  private quote(i: number): number | null {
    const open = this.text[i];
    const close = CLOSERS[open];
    if (close === undefined || this.unclosed.has(open)) return null;
    if (APOSTROPHES.has(open) && isLetterOrDigit(this.text[i - 1])) return null;
    for (let j = i + 1; j < this.text.length; j += 1) {
      this.steps += 1;
      const c = this.text[j];
      if (c === '\\' && ESCAPING.has(open)) j += 1;
      else if (c === close && !this.isApostrophe(j)) {
        this.out.push('<q>');
        return j + 1;
      }
    }
    if (this.cut) {
      this.out.push('<q>');
      return this.text.length;
    }
    // The scan reached the end: a later quote of this kind would reach it the same way.
    this.unclosed.add(open);
    return null;
  }

  /** A quote character between two letters or digits is an apostrophe (can't, O'Brien, l’été). */
  private isApostrophe(j: number): boolean {
    return APOSTROPHES.has(this.text[j]) && isLetterOrDigit(this.text[j - 1]) && isLetterOrDigit(this.text[j + 1]);
  }

  private space(i: number): number | null {
    if (!SPACE.test(this.text[i])) return null;
    let j = i;
    while (j < this.text.length && SPACE.test(this.text[j])) {
      this.steps += 1;
      j += 1;
    }
    this.out.push(' ');
    return j;
  }

  /** `local@domain.tld` starting at `i` (the start of a run of address characters) → `<email>`. */
  private email(i: number): number | null {
    if (i < this.emailTriedUntil || !EMAIL_LOCAL.test(this.text[i]) || EMAIL_LOCAL.test(this.text[i - 1] ?? ' ')) return null;
    let at = i;
    while (at < this.text.length && EMAIL_LOCAL.test(this.text[at])) {
      this.steps += 1;
      at += 1;
    }
    this.emailTriedUntil = at;
    if (this.text[at] !== '@' || at === i) return null;
    let end = at + 1;
    while (end < this.text.length && DOMAIN.test(this.text[end])) {
      this.steps += 1;
      end += 1;
    }
    while (end > at + 1 && this.text[end - 1] === '.') end -= 1; // a sentence's full stop is not the domain's
    const domain = this.text.slice(at + 1, end);
    if (!/^[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+$/.test(domain)) return null;
    this.out.push('<email>');
    this.emailTriedUntil = end;
    return end;
  }

  /** A word (and what continues it: a UUID's groups, a stream id's sequence, a number's decimals). */
  private word(i: number): number | null {
    const { text } = this;
    const signed = text[i] === '-' && isDigit(text[i + 1]) && !isWord(text[i - 1]) && text[i - 1] !== '-';
    const start = signed ? i + 1 : i;
    if (!isWord(text[start])) return null;
    const end = this.wordEnd(start);
    const word = text.slice(start, end);
    const sign = signed ? '-' : '';
    const placeholder = this.shape(start, end, word);
    if (placeholder) {
      this.out.push(sign, placeholder.text);
      return placeholder.end;
    }
    // A sign belongs to a number; before a word such as 1st it stays a dash.
    if (/^[0-9]+$/.test(word)) return this.number(end);
    this.out.push(sign, word.replace(/[0-9]+/g, '<n>'));
    return end;
  }

  private wordEnd(start: number): number {
    let end = start;
    while (end < this.text.length && isWord(this.text[end])) {
      this.steps += 1;
      end += 1;
    }
    return end;
  }

  /** A word that is an id, a UUID or a hex value as a whole; null for plain words and numbers. */
  private shape(start: number, end: number, word: string): { text: string; end: number } | null {
    const uuidEnd = this.uuidEnd(start, end);
    if (uuidEnd !== null) return { text: '<uuid>', end: uuidEnd };
    if (/^[0-9]{10,}$/.test(word) && this.text[end] === '-' && isDigit(this.text[end + 1])) {
      const seqEnd = this.wordEnd(end + 1);
      if (/^[0-9]+$/.test(this.text.slice(end + 1, seqEnd))) return { text: '<id>', end: seqEnd };
    }
    if (/^0[xX][0-9a-fA-F]+$/.test(word)) return { text: '<hex>', end };
    this.steps += word.length; // the tests below each read the word once
    // Hex of 8 or more holding a digit and a letter (hashes, object ids); digits alone are a number.
    if (word.length >= 8 && /^[0-9a-fA-F]+$/.test(word) && /[0-9]/.test(word) && /[a-fA-F]/.test(word))
      return { text: '<hex>', end };
    // A number with its unit (`5ms`, `1000ms`, `12KB`) folds its digits only: as an id it would make
    // `timeout after 5ms` and `timeout after 1000ms` two causes.
    if (/^[0-9]+[A-Za-z]{1,5}$/.test(word)) return null;
    if (word.length >= 4 && /[A-Za-z_]/.test(word) && /[0-9]/.test(word)) return { text: '<id>', end };
    return null;
  }

  /** 8-4-4-4-12 hex digits from `start` (whose first group ends at `end`), not followed by a word character. */
  private uuidEnd(start: number, end: number): number | null {
    if (end - start !== 8) return null;
    let j = start;
    for (const group of [8, 4, 4, 4, 12]) {
      if (j > start && this.text[j++] !== '-') return null;
      for (let k = 0; k < group; k += 1, j += 1) {
        this.steps += 1;
        if (!isHex(this.text[j])) return null;
      }
    }
    return isWord(this.text[j]) ? null : j;
  }

  /** A number whose first group ends at `end`: `.` or `,` and more digits continue it (1,500.25; 127.0.0.1). */
  private number(end: number): number {
    let j = end;
    while ((this.text[j] === '.' || this.text[j] === ',') && isDigit(this.text[j + 1])) {
      const groupEnd = this.wordEnd(j + 1);
      if (!/^[0-9]+$/.test(this.text.slice(j + 1, groupEnd))) break;
      j = groupEnd;
    }
    this.out.push('<n>');
    return j;
  }
}
