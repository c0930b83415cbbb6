import { StreamOperations } from 'nest-redis-streams';
import { runCli } from '../cli/run-cli.js';
import { type ConsoleApp, startConsoleApp } from '../console/console-app.js';
import { readAll, testContext, unique } from '../support/helpers.js';

// XCLAIM of a pending entry whose payload is gone from the stream (trimmed, XDEL) drops its PEL
// row without a word (Redis 7.0+, Valkey too), and that row is the only record that the entry
// was never handled. An operator's claim or hand-over must not lose it silently: the claim is
// refused (the entry stays pending where it was), the hand-over writes its `payload-trimmed`
// tombstone to the dead-letter stream, as the consumer's own reclaim does.

// The CLI is spawned (a start can take seconds on a busy machine).
jest.setTimeout(60_000);

describe('operator claim and hand-over of entries whose payload was trimmed away', () => {
  const { redis, closers } = testContext();
  const dlq = (stream: string) => `${stream}:dlq`;
  const ops = (stream: string) => new StreamOperations(redis, { streams: [stream] });

  /** `count` entries read by `c1` of group `g` (pending), then the ones at `gone` deleted from the stream. */
  async function pendingThenTrimmed(count: number, gone: number[]): Promise<{ stream: string; ids: string[] }> {
    const stream = unique('claim-trimmed');
    await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
    const ids: string[] = [];
    for (let i = 0; i < count; i++) ids.push((await redis.xadd(stream, '*', 'n', String(i))) as string);
    await redis.xreadgroup('GROUP', 'g', 'c1', 'COUNT', count, 'STREAMS', stream, '>');
    for (const i of gone) await redis.xdel(stream, ids[i]);
    return { stream, ids };
  }

  const pendingRows = async (stream: string) =>
    ((await redis.xpending(stream, 'g', '-', '+', 100)) as string[][]).map(([id, owner]) => [id, owner]);

  /** The dead-letter stream's records as [reason, original id, consumer, deliveries]. */
  const tombstones = async (stream: string) =>
    (await readAll(redis, dlq(stream))).map(([, f]) => [f['dlq:reason'], f['dlq:id'], f['dlq:consumer'], f['dlq:deliveries']]);

  it('StreamOperations.claim is refused, naming the entry and the park, and the entry stays pending with its owner', async () => {
    const { stream, ids } = await pendingThenTrimmed(1, [0]);

    const claim = ops(stream).claim('alice', stream, 'g', ids[0], 'c2');
    await expect(claim).rejects.toMatchObject({ kind: 'refused', message: expect.stringContaining('payload is gone') });
    expect(await pendingRows(stream)).toEqual([[ids[0], 'c1']]);
    // The park the message names writes its tombstone.
    await ops(stream).park('alice', stream, 'g', ids[0]);
    expect(await tombstones(stream)).toEqual([['payload-trimmed', ids[0], 'c1', '1']]);
    expect(await pendingRows(stream)).toEqual([]);
  });

  it('StreamOperations.handOver moves what has a payload and writes a tombstone for each entry trimmed away', async () => {
    const { stream, ids } = await pendingThenTrimmed(4, [1, 3]);

    const handedOver = await ops(stream).handOver('alice', stream, 'g', 'c1', 'c2');
    expect(await tombstones(stream)).toEqual([
      ['payload-trimmed', ids[1], 'c1', '1'],
      ['payload-trimmed', ids[3], 'c1', '1'],
    ]);
    expect(await pendingRows(stream)).toEqual([
      [ids[0], 'c2'],
      [ids[2], 'c2'],
    ]);
    expect(handedOver).toEqual({ moved: 2, tombstoned: [ids[1], ids[3]] });
  });

  it('the console hand-over and the CLI delete --hand-over-to write the tombstones; the console claim is refused', async () => {
    const { stream, ids } = await pendingThenTrimmed(2, [0]);
    const web: ConsoleApp = await startConsoleApp({ streams: [stream], auditStream: unique('audit'), guard: () => 'alice' });
    closers.push(() => web.app.close());

    const claim = await web.post('claim', { stream, group: 'g', id: ids[0], consumer: 'c2' });
    expect([claim.status, claim.body.message]).toEqual([409, expect.stringContaining('payload-trimmed tombstone')]);
    const moved = await web.post('consumers/hand-over', { stream, group: 'g', from: 'c1', to: 'c2' });
    expect([moved.status, moved.body]).toEqual([200, { moved: 1, tombstoned: [ids[0]] }]);

    const more = (await redis.xadd(stream, '*', 'n', 'x')) as string;
    await redis.xreadgroup('GROUP', 'g', 'c3', 'COUNT', 1, 'STREAMS', stream, '>');
    await redis.xtrim(stream, 'MAXLEN', 0);
    const cli = await runCli(['consumers', stream, 'g', '--delete', 'c3', '--hand-over-to', 'c4']);
    expect([cli.code, cli.stderr, cli.stdout]).toEqual([0, '', expect.stringContaining('1 trimmed away')]);
    expect(await pendingRows(stream)).toEqual([[ids[1], 'c2']]);
    expect((await tombstones(stream)).map(([reason, id]) => [reason, id])).toEqual([
      ['payload-trimmed', ids[0]],
      ['payload-trimmed', more],
    ]);
  });
});
