import { documentFiles, readDocument } from './documents.js';

// The README and the guides are read by people who never saw the design notes this project began
// from: "the notes" says nothing to them, so the documents name what they mean instead.
describe('documents a newcomer reads', () => {
  it.each([...documentFiles(), 'BENCHMARKS.md'])('%s refers to nothing a reader cannot open', (file) => {
    const text = readDocument(file);
    expect(text.match(/.{0,40}\bthe notes\b.{0,40}|.{0,40}\bnotes'.{0,40}/gi) ?? []).toEqual([]);
  });
});
