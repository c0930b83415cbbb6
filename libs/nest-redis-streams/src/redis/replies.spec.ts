import { takeRows } from './replies.js';

describe('takeRows', () => {
  it('hands every row over in order, then leaves the reply list empty', () => {
    const rows: Array<[string, string[]]> = [
      ['1-0', ['data', 'a']],
      ['2-0', ['data', 'b']],
      ['3-0', ['data', 'c']],
    ];
    const taken: string[] = [];
    takeRows(rows, ([id]) => taken.push(id));
    expect(taken).toEqual(['1-0', '2-0', '3-0']);
    // Nothing of the reply stays reachable through the list once its rows are taken.
    expect(rows).toHaveLength(0);
  });

  it('empties the list even when a row is skipped', () => {
    const rows = ['a', 'b'];
    takeRows(rows, () => undefined);
    expect(rows).toEqual([]);
  });
});
