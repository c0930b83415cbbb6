import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startRecorder, testContext, unique } from '../support/helpers.js';
import { runCli } from './run-cli.js';

const { redis, closers } = testContext();
jest.setTimeout(120_000);

/** The `dlq` command lines of docs/dead-letters.md, comments dropped, as words. */
function documentedDlqLines(): string[][] {
  const doc = readFileSync(join(__dirname, '../../docs/dead-letters.md'), 'utf8');
  return [...doc.matchAll(/^npx nest-redis-streams (dlq [^#\n]*)/gm)].map((m) => m[1].trim().split(/\s+/));
}

describe('docs/dead-letters.md: the failure-group commands run as written', () => {
  it('against dead letters shaped like the demo (three orders with a non-positive amount), a consumer running', async () => {
    const stream = unique('docs-orders');
    await redis.xgroup('CREATE', stream, 'payments', '$', 'MKSTREAM');
    const parkThree = async () => {
      for (const [orderId, amount] of [
        ['o-17', -1],
        ['o-101', 0],
        ['o-233', -250],
      ] as const) {
        const meta = ['dlq:reason', 'non-retryable', 'dlq:stream', stream, 'dlq:id', '1-1', 'dlq:group', 'payments'];
        meta.push('dlq:error', `Order ${orderId} has a non-positive amount (${amount}).`, 'dlq:error_class', 'NonRetryableError');
        meta.push(
          'dlq:deliveries',
          '1',
          'dlq:time',
          String(Date.now()),
          'v',
          'nrs/1',
          'data',
          JSON.stringify({ orderId, amount }),
        );
        await redis.xadd(`${stream}:dlq`, '*', ...meta);
      }
    };
    await parkThree();
    // The cause is fixed: the payments handler now takes every re-driven order.
    const { seen } = await startRecorder(closers, stream, { group: 'payments', consumer: 'docs' });
    const lines = documentedDlqLines();
    expect(lines.length).toBeGreaterThanOrEqual(6);
    const outputs: string[] = [];
    for (const words of lines) {
      // The canary comes after the plain re-drive emptied the group: it gets three of its own.
      if (words.includes('--canary')) await parkThree();
      const args = words.map((w) => (w === 'orders' ? stream : w));
      const run = await runCli(args);
      expect({ args, code: run.code, stderr: run.stderr }).toEqual({ args, code: 0, stderr: '' });
      outputs.push(run.stdout);
    }
    expect(outputs.join('\n')).toContain('would re-drive 3 dead letters');
    expect(outputs.join('\n')).toContain('3 re-driven');
    expect(outputs.join('\n')).toContain('All 3 re-driven; 3 succeeded, 0 failed again.');
    expect(seen).toHaveLength(6);
  });
});
