/**
 * Characters a terminal acts on instead of showing: C0 controls (ESC starts the sequences that
 * clear the screen or recolour text, CR rewrites a line), DEL, C1 controls (CSI) and the
 * bidirectional overrides that reorder what follows. Stream, group and consumer names, payloads
 * and error texts come from Redis and may hold any of them. U+FFFD too: replies are decoded as
 * UTF-8, so it stands for bytes that were not, and shown as a glyph two different binary event ids
 * would look alike.
 */
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufffd]/g;

const hex = (c: string, digits: number) => c.charCodeAt(0).toString(16).padStart(digits, '0');

function escapeOne(c: string): string {
  return c.charCodeAt(0) <= 0xff ? `\\x${hex(c, 2)}` : `\\u${hex(c, 4)}`;
}

/**
 * The one escaping of the CLI's output: each control character as `\x1b` / `\u202e`. With
 * `lines`, line feeds stay (the text is several lines the CLI wrote); values get no exemption.
 */
export function escapeControls(text: string, lines = false): string {
  return text.replace(CONTROLS, (c) => (lines && c === '\n' ? c : escapeOne(c)));
}

/** A value for one cell or one line, escaped and cut to `max` characters. */
export function printable(value: string, max = 80): string {
  const safe = escapeControls(value);
  return safe.length > max ? `${safe.slice(0, max - 1)}…` : safe;
}

/**
 * `--json` output: JSON.stringify escapes C0 controls itself but leaves DEL, C1 and the bidi
 * overrides raw; they are written as `\u` escapes, so the JSON still parses to the same values.
 */
export function jsonText(value: unknown): string {
  // Inside strings JSON.stringify already escaped every C0 character: a raw line feed is layout.
  return JSON.stringify(value, null, 2).replace(CONTROLS, (c) => (c === '\n' ? c : `\\u${hex(c, 4)}`));
}

/** Where every command's output goes: stdout and stderr, nothing raw. */
export interface Output {
  /** Lines for stdout; control characters inside them are escaped. */
  print(text: string): void;
  /** A value as `--json` prints it. */
  printJson(value: unknown): void;
  /** Lines for stderr (warnings, failures, breaches), escaped like print's. */
  warn(text: string): void;
}

export const STD_OUTPUT: Output = {
  print: (text) => process.stdout.write(`${escapeControls(text, true)}\n`),
  printJson: (value) => process.stdout.write(`${jsonText(value)}\n`),
  warn: (text) => process.stderr.write(`${escapeControls(text, true)}\n`),
};
