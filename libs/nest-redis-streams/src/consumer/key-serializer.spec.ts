import { KeySerializer } from './key-serializer.js';

describe('KeySerializer', () => {
  it('keeps one key in order, lets other keys overlap, and survives failures', async () => {
    const serializer = new KeySerializer();
    const log: string[] = [];
    const task =
      (name: string, ms: number, fail = false) =>
      async () => {
        log.push(`start ${name}`);
        await new Promise((r) => setTimeout(r, ms));
        log.push(`end ${name}`);
        if (fail) throw new Error(name);
      };
    const runs = [
      serializer.run('a', task('a1', 20, true)).catch(() => 'failed'),
      serializer.run('b', task('b1', 5)),
      serializer.run('a', task('a2', 1)),
    ];
    await Promise.all(runs);
    expect(log.indexOf('start a2')).toBeGreaterThan(log.indexOf('end a1'));
    expect(log.indexOf('start b1')).toBeLessThan(log.indexOf('end a1'));
    expect(serializer.size).toBe(0);
  });
});
