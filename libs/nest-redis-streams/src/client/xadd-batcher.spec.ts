import { Cluster, type Redis } from 'ioredis';
import { slotOf } from '../keys/index.js';
import { XaddBatcher } from './xadd-batcher.js';

/** The XADDs of one fake pipeline, and what each is answered: an id, or an Error to refuse it. */
type Sent = Array<{ stream: string; args: unknown[] }>;

/** A connection whose pipelines record their XADDs and answer `reply(stream, n)` for each. */
function fakeRedis(reply: (stream: string, n: number) => string | Error, cluster = false) {
  const pipelines: Sent[] = [];
  let n = 0;
  const redis = Object.assign(cluster ? Object.create(Cluster.prototype) : {}, {
    status: 'ready',
    pipeline() {
      const sent: Sent = [];
      pipelines.push(sent);
      return {
        xadd: (stream: string, ...args: unknown[]) => sent.push({ stream, args: args.flat() }),
        exec: () =>
          Promise.resolve(
            sent.map(({ stream }) => reply(stream, n++)).map((r) => (typeof r === 'string' ? [null, r] : [r, null])),
          ),
      };
    },
  }) as unknown as Redis;
  return { redis, pipelines };
}

describe('XaddBatcher', () => {
  it('sends the XADDs of one turn in one pipeline, head and fields flattened, each caller its own id', async () => {
    const { redis, pipelines } = fakeRedis((_, n) => `1-${n}`);
    const batcher = new XaddBatcher(redis, 1_000);
    const ids = await Promise.all([batcher.add('a', ['*'], ['k', 'v']), batcher.add('b', ['MAXLEN', '~', 5, '*'], ['k', 'w'])]);
    expect(ids).toEqual(['1-0', '1-1']);
    expect(pipelines).toEqual([
      [
        { stream: 'a', args: ['*', 'k', 'v'] },
        { stream: 'b', args: ['MAXLEN', '~', 5, '*', 'k', 'w'] },
      ],
    ]);
  });

  it('splits a large queue into pipelines of at most 500 and answers each entry of addAll at its index', async () => {
    const { redis, pipelines } = fakeRedis((stream, n) => (n % 1_001 === 7 ? new Error(`refused ${stream}`) : `1-${n}`));
    const batcher = new XaddBatcher(redis, 1_000);
    const streams = Array.from({ length: 2_500 }, (_, i) => `s${i}`);
    const outcomes = await batcher.addAll(
      streams,
      ['*'],
      streams.map((s) => ['f', s]),
    );
    expect(pipelines.map((p) => p.length)).toEqual([500, 500, 500, 500, 500]);
    expect(outcomes).toHaveLength(2_500);
    expect(outcomes[0]).toBe('1-0');
    expect(outcomes[7]).toEqual(new Error('refused s7'));
    expect(outcomes[1_008]).toEqual(new Error('refused s1008'));
    expect(outcomes[2_499]).toBe('1-2499');
    expect(outcomes.filter((o) => o instanceof Error)).toHaveLength(3);
  });

  it('sends a full pipeline at once and keeps a partial one until the end of the turn', async () => {
    const { redis, pipelines } = fakeRedis((_, n) => `1-${n}`);
    const batcher = new XaddBatcher(redis, 1_000);
    const fields = (n: number) => Array.from({ length: n }, () => ['k', 'v']);
    const first = batcher.addAll(new Array<string>(499).fill('s'), ['*'], fields(499));
    expect(pipelines).toHaveLength(0);
    const second = batcher.addAll(new Array<string>(3).fill('s'), ['*'], fields(3));
    expect(pipelines.map((p) => p.length)).toEqual([500]);
    await Promise.all([first, second]);
    expect(pipelines.map((p) => p.length)).toEqual([500, 2]);
  });

  it('on a cluster, sends one pipeline per slot and still answers in the order given', async () => {
    const { redis, pipelines } = fakeRedis((stream, n) => `${stream}-${n}`, true);
    const batcher = new XaddBatcher(redis, 1_000);
    const streams = ['x:{a}', 'x:{b}', 'y:{a}', 'x:{b}', 'z:{c}'];
    const outcomes = await batcher.addAll(
      streams,
      ['*'],
      streams.map(() => ['f', 'v']),
    );
    const slots = pipelines.map((sent) => new Set(sent.map(({ stream }) => slotOf(stream))));
    expect(slots.every((s) => s.size === 1)).toBe(true);
    expect(pipelines.map((sent) => sent.map(({ stream }) => stream))).toEqual([
      ['x:{a}', 'y:{a}'],
      ['x:{b}', 'x:{b}'],
      ['z:{c}'],
    ]);
    expect((outcomes as string[]).map((id) => id.split('-')[0])).toEqual(streams);
  });

  it('fails every queued XADD, once, when Redis stays unreachable for offlineTimeoutMs, having sent nothing', async () => {
    const { redis, pipelines } = fakeRedis(() => '1-0');
    (redis as unknown as { status: string }).status = 'reconnecting';
    Object.assign(redis, { on: () => redis, off: () => redis });
    const batcher = new XaddBatcher(redis, 20);
    const [single, many] = await Promise.all([
      batcher.add('a', ['*'], ['k', 'v']).catch((err: unknown) => err),
      batcher.addAll(
        ['a', 'b'],
        ['*'],
        [
          ['k', 'v'],
          ['k', 'w'],
        ],
      ),
    ]);
    expect(single).toMatchObject({ name: 'OfflineTimeoutError', message: 'Redis was not reachable within 20 ms.' });
    expect(many).toEqual([single, single]);
    expect(pipelines).toEqual([]);
  });

  it('answers an empty addAll at once', async () => {
    const { redis, pipelines } = fakeRedis(() => '1-0');
    await expect(new XaddBatcher(redis, 1_000).addAll([], ['*'], [])).resolves.toEqual([]);
    expect(pipelines).toEqual([]);
  });
});
