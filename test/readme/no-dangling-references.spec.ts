import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// The README and the guides are read by people who never saw the design notes this project began
// from: "the notes" says nothing to them, so the documents name what they mean instead.
const root = join(__dirname, '../..');

describe('documents a newcomer reads', () => {
  it.each(['README.md', 'docs/OPERATIONS.md', 'docs/RELIABILITY.md', 'BENCHMARKS.md'])(
    '%s refers to nothing a reader cannot open',
    (file) => {
      const text = readFileSync(join(root, file), 'utf8');
      expect(text.match(/.{0,40}\bthe notes\b.{0,40}|.{0,40}\bnotes'.{0,40}/gi) ?? []).toEqual([]);
    },
  );
});
