import { execFile } from 'node:child_process';
import { runCli } from '../cli/run-cli.js';
import { deadLetterFields, redisUrl, testContext, unique } from '../support/helpers.js';
import { readDocument } from './documents.js';
import { type BuiltApp, buildApp, readmeSnippets } from './readme-app.js';

// Compiles the guide's code (TypeScript, strict) and spawns the CLI five times; on 2 busy cores that passes 5 s.
jest.setTimeout(120_000);

/** The words of one command line: plain words and '…' quoted ones (the guide's lines use no other quoting). */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]);
}

describe('docs/search.md, run as written', () => {
  const { redis } = testContext();
  let built: BuiltApp | undefined;
  afterAll(() => built?.remove());

  /** `orders` with group `payments` (one entry pending there) and one dead letter. */
  async function orders(): Promise<string> {
    const stream = unique('search-doc');
    await redis.xgroup('CREATE', stream, 'payments', '0', 'MKSTREAM');
    for (const [orderId, total, tenant] of [
      ['A1', 50, 'acme'],
      ['A2', 150, 'acme'],
      ['A3', 250, 'x'],
    ] as const)
      await redis.xadd(
        stream,
        '*',
        'v',
        'nrs/1',
        'event_id',
        orderId,
        'data',
        JSON.stringify({ orderId, total }),
        'headers',
        JSON.stringify({ tenant }),
      );
    await redis.xreadgroup('GROUP', 'payments', 'c1', 'COUNT', 1, 'STREAMS', stream, '>');
    const meta = { stream, id: '1-1', group: 'payments', reason: 'non-retryable', error: 'Card declined', deliveries: 3 };
    await redis.xadd(`${stream}:dlq`, '*', ...deadLetterFields(meta, ['data', '{"orderId":"A9"}']));
    return stream;
  }

  it('every search command line of the guide runs (exit 0) on a stream called as in the guide', async () => {
    const stream = await orders();
    const lines = readDocument('docs/search.md')
      .split('\n')
      .filter((line) => line.startsWith('npx nest-redis-streams search '))
      .map((line) => line.replace(/\s+#.*$/, ''));
    expect(lines.length).toBeGreaterThanOrEqual(5);
    const outputs: string[] = [];
    for (const line of lines) {
      const args = words(line)
        .slice(2)
        .map((w) => (w === 'orders' ? stream : w));
      const run = await runCli(args);
      expect({ line, code: run.code, stderr: run.stderr }).toEqual({ line, code: 0, stderr: '' });
      outputs.push(run.stdout);
    }
    expect(outputs[0]).toMatch(/^\d+-0 .*event_id=A1 .*\n1 matched, 3 entries looked at/m);
    expect(JSON.parse(outputs[1]).items.map((h: { fields: string[][] }) => h.fields[1][1])).toEqual(['A2']);
    expect(outputs[3]).toMatch(/1 matched, 1 entries looked at/);
  });

  it('the code snippet compiles under strict TypeScript and prints the matches', async () => {
    const stream = await orders();
    const snippet = readmeSnippets().get('search/find-orders.ts');
    expect(snippet).toBeDefined();
    built = buildApp(new Map([['search/find-orders.ts', snippet!]]));
    const output = await new Promise<string>((resolve, reject) => {
      execFile(
        process.execPath,
        [built!.entry('search/find-orders.ts')],
        { env: { ...process.env, REDIS_URL: redisUrl(), STREAM: stream }, timeout: 60_000 },
        (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)),
      );
    });
    expect(output).toMatch(/^\d+-\d+ .*"orderId\\":\\"A2\\"/m);
    expect(output).toContain('looked at 3, matched 1, done: true');
  });
});
