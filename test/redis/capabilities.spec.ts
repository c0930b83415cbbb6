import { probeCapabilities } from '../../libs/nest-redis-streams/src/redis/capabilities.js';
import { redisClient, unique } from '../support/helpers.js';

// Runs against whatever server the suite started (Redis 7.0, 8.6 or Valkey 9.1 in the server
// matrix): every detected capability must agree with what the server then does with it.
const redis = redisClient();
afterAll(() => redis.quit());

async function outcome(run: () => Promise<unknown>): Promise<{ ok: true; value: unknown } | { ok: false; error: string }> {
  try {
    return { ok: true, value: await run() };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}

describe('probeCapabilities against a real server', () => {
  it('detects exactly what the server does, writing nothing', async () => {
    const caps = await probeCapabilities(redis);
    expect(caps.nodes).toHaveLength(1);
    const node = caps.nodes[0];
    expect(node.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(Object.values(node.detectedBy).every((d) => d === 'probe')).toBe(true);
    expect(await redis.exists('nrs:capability-probe')).toBe(0);

    const stream = unique('caps');
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const first = (await redis.xadd(stream, '*', 'n', '1')) as string;
    await redis.xreadgroup('GROUP', 'g', 'c1', 'COUNT', 1, 'STREAMS', stream, '>');

    // CLAIM: c2 takes the entry c1 left idle, with its idle time and delivery count.
    const claim = await outcome(() => redis.call('XREADGROUP', 'GROUP', 'g', 'c2', 'CLAIM', 0, 'STREAMS', stream, '>'));
    if (node.claim) {
      expect(claim.ok).toBe(true);
      const [[, entries]] = (claim as { value: Array<[string, Array<[string, string[], number, number]>]> }).value;
      expect(entries[0][0]).toBe(first);
      expect(entries[0]).toHaveLength(4);
      expect(entries[0][3]).toBe(1);
    } else expect(claim).toEqual({ ok: false, error: expect.stringMatching(/syntax/i) });

    // IDMP: the same producer and event id twice leaves one entry and answers the first id.
    const idmp = async () => redis.call('XADD', stream, 'IDMP', 'p', 'event-1', '*', 'n', '2');
    const sent = [await outcome(idmp), await outcome(idmp)];
    if (node.idmp) {
      expect(sent[0]).toEqual({ ok: true, value: expect.any(String) });
      expect(sent[1]).toEqual(sent[0]);
      expect(await redis.xlen(stream)).toBe(2);
      expect(await outcome(() => redis.call('XCFGSET', stream, 'IDMP-DURATION', 100))).toMatchObject({ ok: true });
    } else expect(sent[0].ok).toBe(false);

    // ACKED trimming keeps what the group has not acknowledged.
    const trim = await outcome(() => redis.call('XTRIM', stream, 'MAXLEN', 0, 'ACKED'));
    if (node.trimConditions) {
      expect(trim).toEqual({ ok: true, value: 0 });
      expect(await redis.xlen(stream)).toBe(node.idmp ? 2 : 1);
    } else expect(trim.ok).toBe(false);

    // XACKDEL: acks for the group and deletes the entry no other group references.
    const ackdel = await outcome(() => redis.call('XACKDEL', stream, 'g', 'ACKED', 'IDS', 1, first));
    if (node.ackDelete) {
      expect(ackdel).toEqual({ ok: true, value: [1] });
      expect(await redis.xrange(stream, first, first)).toEqual([]);
    } else expect(ackdel).toEqual({ ok: false, error: expect.stringMatching(/unknown command/i) });

    const nack = await outcome(() => redis.call('COMMAND', 'INFO', 'XNACK'));
    expect(nack).toEqual({ ok: true, value: [node.nack ? expect.any(Array) : null] });
    await redis.del(stream);
  });

  it('falls back to COMMAND DOCS for a user who may not touch the probe key', async () => {
    const user = unique('caps-user').replace(/:/g, '-');
    await redis.call('ACL', 'SETUSER', user, 'on', '>pw', '~orders*', '+@all');
    const limited = redisClient(redisUrlFor(user));
    try {
      const [full, partial] = [await probeCapabilities(redis), await probeCapabilities(limited)];
      const node = partial.nodes[0];
      expect(node.detectedBy).toMatchObject({ claim: 'command-docs', idmp: 'command-docs', trimConditions: 'command-docs' });
      // The documented arguments agree with the probes of a user who may try them.
      expect(partial.all).toEqual(full.all);
    } finally {
      await limited.quit();
      await redis.call('ACL', 'DELUSER', user);
    }
  });
});

function redisUrlFor(user: string): string {
  const url = new URL(process.env.REDIS_URL!);
  url.username = user;
  url.password = 'pw';
  return url.toString();
}
