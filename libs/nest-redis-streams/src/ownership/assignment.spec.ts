import { assignPartitions } from './assignment.js';

const counts = (target: string[]) => target.reduce<Record<string, number>>((c, m) => ({ ...c, [m]: (c[m] ?? 0) + 1 }), {});
const moved = (before: (string | null)[], after: string[]) =>
  after.filter((m, i) => before[i] !== null && before[i] !== m).length;

describe('partition assignment', () => {
  it('gives a lone member every partition', () => {
    expect(assignPartitions(['a'], Array(12).fill(null))).toEqual(Array(12).fill('a'));
  });

  it('shares 12 partitions 4/4/4 among 3 members, whatever order they are listed in', () => {
    const target = assignPartitions(['c', 'a', 'b'], Array(12).fill(null));
    expect(counts(target)).toEqual({ a: 4, b: 4, c: 4 });
    expect(assignPartitions(['b', 'c', 'a'], Array(12).fill(null))).toEqual(target);
  });

  it('moves only the surplus when a member joins (12 over 2 → 3: four partitions move)', () => {
    const before = [...Array(6).fill('a'), ...Array(6).fill('b')];
    const after = assignPartitions(['a', 'b', 'c'], before);
    expect(counts(after)).toEqual({ a: 4, b: 4, c: 4 });
    expect(moved(before, after)).toBe(4);
  });

  it("moves only a departed member's partitions when it leaves", () => {
    const before = assignPartitions(['a', 'b', 'c'], Array(12).fill(null));
    const withoutC = before.map((m) => (m === 'c' ? null : m));
    const after = assignPartitions(['a', 'b'], withoutC);
    expect(counts(after)).toEqual({ a: 6, b: 6 });
    expect(moved(withoutC, after)).toBe(0);
  });

  it('gives the larger shares to the members that own most now (7 over 2 members)', () => {
    const before = ['b', 'b', 'b', 'b', 'a', 'a', null];
    const after = assignPartitions(['a', 'b'], before);
    expect(counts(after)).toEqual({ a: 3, b: 4 });
    expect(moved(before, after)).toBe(0);
  });

  it('leaves a partition of an owner that is no member any more to a live member', () => {
    expect(assignPartitions(['a'], ['gone', null])).toEqual(['a', 'a']);
  });
});
