import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { redisClient, unique } from '../support/helpers.js';
import { runCli } from './run-cli.js';

const redis = redisClient();
afterAll(() => redis.quit());
jest.setTimeout(120_000);

/** The `dlq` command lines of docs/dead-letters.md, comments dropped, as words. */
function documentedDlqLines(): string[][] {
  const doc = readFileSync(join(__dirname, '../../docs/dead-letters.md'), 'utf8');
  return [...doc.matchAll(/^npx nest-redis-streams (dlq [^#\n]*)/gm)].map((m) => m[1].trim().split(/\s+/));
}

describe('docs/dead-letters.md: the failure-group commands run as written', () => {
  it('against dead letters shaped like the demo (three orders with a non-positive amount)', async () => {
    const stream = unique('docs-orders');
    await redis.xgroup('CREATE', stream, 'payments', '$', 'MKSTREAM');
    for (const [orderId, amount] of [
      ['o-17', -1],
      ['o-101', 0],
      ['o-233', -250],
    ] as const) {
      const meta = ['dlq:reason', 'non-retryable', 'dlq:stream', stream, 'dlq:id', '1-1', 'dlq:group', 'payments'];
      meta.push('dlq:error', `Order ${orderId} has a non-positive amount (${amount}).`, 'dlq:error_class', 'NonRetryableError');
      meta.push('dlq:deliveries', '1', 'dlq:time', String(Date.now()), 'v', 'nrs/1', 'data', JSON.stringify({ orderId, amount }));
      await redis.xadd(`${stream}:dlq`, '*', ...meta);
    }
    const lines = documentedDlqLines();
    expect(lines.length).toBeGreaterThanOrEqual(5);
    const outputs: string[] = [];
    for (const words of lines) {
      const args = words.map((w) => (w === 'orders' ? stream : w));
      const run = await runCli(args);
      expect({ args, code: run.code, stderr: run.stderr }).toEqual({ args, code: 0, stderr: '' });
      outputs.push(run.stdout);
    }
    expect(outputs.join('\n')).toContain('would re-drive 3 dead letters');
    expect(outputs.join('\n')).toContain('3 re-driven');
    expect(await redis.xlen(stream)).toBe(3);
  });
});
