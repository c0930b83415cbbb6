import { escapeControls, jsonText, printable } from './output.js';
import { formatTable } from './table.js';

const HOSTILE = 'a\x1b[2J\rb\x07\x7f\x9b\u202ec\nd';

describe('CLI output escaping', () => {
  it('escapes C0, DEL, C1 and bidi overrides; line feeds only when the text is the CLI own lines', () => {
    expect(escapeControls(HOSTILE)).toBe('a\\x1b[2J\\x0db\\x07\\x7f\\x9b\\u202ec\\x0ad');
    expect(escapeControls(HOSTILE, true)).toBe('a\\x1b[2J\\x0db\\x07\\x7f\\x9b\\u202ec\nd');
    expect(escapeControls('plain é ü 東京')).toBe('plain é ü 東京');
  });

  it('printable escapes before cutting, so a cut name never ends in a raw control character', () => {
    expect(printable('\x1b\x1b\x1b', 6)).toBe('\\x1b\\…');
  });

  it('--json keeps the exact values: it parses back to them with nothing raw in the text', () => {
    const text = jsonText({ name: HOSTILE, list: [HOSTILE] });
    // eslint-disable-next-line no-control-regex
    expect(text.replace(/\n/g, '')).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
    expect(JSON.parse(text)).toEqual({ name: HOSTILE, list: [HOSTILE] });
  });

  it('the table escapes every cell and aligns on the escaped width', () => {
    const table = formatTable(
      ['name', 'n'],
      [
        ['\x1b[2J', '1'],
        ['ok', '22'],
      ],
      new Set([1]),
    );
    expect(table.split('\n')).toEqual(['name      n', '-------  --', '\\x1b[2J   1', 'ok       22']);
  });
});
