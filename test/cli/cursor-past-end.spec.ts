import { startConsoleApp, type ConsoleApp, q } from '../console/console-app.js';
import { redisClient, unique } from '../support/helpers.js';
import { runCli } from './run-cli.js';

const redis = redisClient();
const apps: ConsoleApp[] = [];
afterAll(async () => {
  await Promise.all(apps.map((a) => a.app.close()));
  await redis.quit();
});

/** A stream with group `g` that has read nothing of its 3 entries (no consumers, so no active ones). */
async function arrange(): Promise<{ stream: string; lastId: string }> {
  const stream = unique('past-end');
  await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
  let lastId = '';
  for (let i = 0; i < 3; i++) lastId = (await redis.xadd(stream, '*', 'n', String(i))) as string;
  return { stream, lastId };
}

const cursor = async (stream: string) =>
  String(((await redis.xinfo('GROUPS', stream)) as unknown[][]).map((row) => row[row.indexOf('last-delivered-id') + 1])[0]);

describe("a group cursor past the stream's last entry is refused unless forced (CLI and console)", () => {
  it('setid --time <future> and --id past the last id exit 3 naming the skip; --dry-run says it; --force moves', async () => {
    const { stream, lastId } = await arrange();
    const future = Date.now() + 3 * 86_400_000;
    const time = new Date(future).toISOString();

    const dry = await runCli(['setid', stream, 'g', '--time', time, '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('3 entries would be skipped (never delivered)');
    expect(dry.stdout).toContain(`! past the stream's last entry ${lastId}: every entry added before ${time}`);
    expect(dry.stdout).toContain('would be skipped too (the move needs --force)');
    const json = JSON.parse((await runCli(['setid', stream, 'g', '--time', time, '--dry-run', '--json'])).stdout);
    expect(json).toMatchObject({ dryRun: true, lastId, pastEnd: true, skipsAddedUntil: future, entries: 3, effect: 'skip' });

    const refused = await runCli(['setid', stream, 'g', '--time', time]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain(`past the stream's last entry ${lastId}: every entry added before ${time} would be skipped`);
    expect(await cursor(stream)).toBe('0-0');

    const [ms, seq] = lastId.split('-');
    const byId = await runCli(['setid', stream, 'g', '--id', `${ms}-${Number(seq) + 1}`]);
    expect(byId.code).toBe(3);
    expect(byId.stderr).toContain(`past the stream's last entry ${lastId}`);
    expect(await cursor(stream)).toBe('0-0');

    // Up to the last entry is no skip of the future: no warning, no refusal.
    const end = await runCli(['setid', stream, 'g', '--id', lastId, '--dry-run']);
    expect(end.stdout).not.toContain('past the stream');
    expect((await runCli(['setid', stream, 'g', '--end'])).code).toBe(0);
    expect(await cursor(stream)).toBe(lastId);

    const forced = await runCli(['setid', stream, 'g', '--time', time, '--force']);
    expect({ code: forced.code, stderr: forced.stderr }).toEqual({ code: 0, stderr: '' });
    expect(forced.stdout).toContain('is skipped too');
    expect(await cursor(stream)).toBe(`${future - 1}-18446744073709551615`);
  }, 60_000);

  it("the console's cursor action refuses it (409) unless forced, and its preview reports it", async () => {
    const { stream, lastId } = await arrange();
    const c = await startConsoleApp({ streams: [stream], auditStream: unique('audit'), guard: () => 'alice' });
    apps.push(c);
    const future = Date.now() + 86_400_000;
    const preview = await c.get(`cursor-preview?${q({ stream, group: 'g', time: future })}`);
    expect(preview.status).toBe(200);
    expect(preview.body).toMatchObject({ lastId, pastEnd: true, skipsAddedUntil: future, entries: 3 });
    const refused = await c.post('cursor', { stream, group: 'g', time: future });
    expect(refused.status).toBe(409);
    expect(JSON.stringify(refused.body)).toContain(`past the stream's last entry ${lastId}`);
    expect(await cursor(stream)).toBe('0-0');
    const forced = await c.post('cursor', { stream, group: 'g', time: future, force: true });
    expect(forced.status).toBe(200);
    expect(forced.body).toMatchObject({ pastEnd: true, lastId });
    expect(await cursor(stream)).toBe(`${future - 1}-18446744073709551615`);
  }, 60_000);
});
