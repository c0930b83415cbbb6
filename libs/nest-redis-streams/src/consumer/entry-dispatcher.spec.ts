import { of, Subject, throwError } from 'rxjs';
import { encodeEnvelope } from '../codec/envelope.js';
import { JsonCodec } from '../codec/json.codec.js';
import { ENVELOPE } from '../constants.js';
import { DeadLetterReason } from '../dead-letter-reason.js';
import { TransportEvents } from '../events/transport-events.js';
import type { AckBatcher } from './ack-batcher.js';
import type { ConsumerRuntime } from './consumer-runtime.interface.js';
import { EntryDispatcher } from './entry-dispatcher.js';
import type { FailureHandler } from './failure-handler.js';
import { HeldEntry } from './held-entry.js';
import type { SettleOutcome, SlotOwner } from './slot-owner.interface.js';
import type { ResolvedHandlerOptions, StreamSubscription } from './stream-subscription.js';

// The dispatcher decides, per entry, whether the handler runs and what its result means. Its
// collaborators are faked at their small interfaces: the slot owner records outcomes, the ack
// batcher records queued ids, the failure handler answers with a chosen outcome.

const codec = new JsonCodec();
/** Lets every pending promise reaction run (the dispatcher settles from promise callbacks). */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

function deferred<T = unknown>() {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

type Handler = (data: unknown, entry: HeldEntry) => unknown;

interface Setup {
  handler?: Handler;
  kind?: 'event' | 'message';
  options?: Partial<ResolvedHandlerOptions>;
  failOutcome?: SettleOutcome;
  parkOutcome?: SettleOutcome;
}

function setup({
  handler = () => undefined,
  kind = 'event',
  options = {},
  failOutcome = 'retry-scheduled',
  parkOutcome = 'parked',
}: Setup = {}) {
  const settled: Array<[id: string, outcome: SettleOutcome]> = [];
  const owner: SlotOwner = {
    stream: 'orders',
    group: 'billing',
    consumer: 'c1',
    ref: (entry) => ({ stream: 'orders', group: 'billing', consumer: 'c1', id: entry.id, deliveries: entry.deliveries }),
    mayStart: () => true,
    settled: (entry, outcome) => settled.push([entry.id, outcome]),
    settledUnexpectedly: jest.fn(),
  };
  const subscription = {
    pattern: 'orders',
    stream: 'orders',
    partition: 0,
    kind,
    handler: jest.fn(),
    options: {
      group: 'billing',
      concurrency: 4,
      prefetchCount: 4,
      startId: '$',
      ackMode: 'auto',
      maxDeliveries: 3,
      minIdleTimeMs: 30_000,
      deadLetterStream: 'orders:dlq',
      maxHandlerMs: 60_000,
      ...options,
    },
  } as StreamSubscription;
  const invoke = jest.fn((_sub: StreamSubscription, decoded: { data: unknown }, ctx: { getArgs(): unknown[] }) =>
    handler(decoded.data, ctx.getArgs()[7] as HeldEntry),
  );
  const logger = { log: jest.fn(), error: jest.fn(), warn: jest.fn(), debug: jest.fn(), verbose: jest.fn() };
  const events = new TransportEvents();
  const rt = {
    events,
    logger,
    invoke,
    tracing: false,
    replyStreamPrefix: 'nrs:replies:',
    deserializer: codec,
  } as unknown as ConsumerRuntime;
  const add = jest.fn<void, [string]>();
  const acks = { add } as unknown as AckBatcher;
  const fail = jest.fn(async (_entry: HeldEntry, _err: unknown) => failOutcome);
  const park = jest.fn(async (_entry: HeldEntry, _reason: DeadLetterReason, _err?: unknown) => parkOutcome);
  const parking = { fail, park } as unknown as FailureHandler;
  const dispatcher = new EntryDispatcher(owner, subscription, rt, acks, parking);
  return { dispatcher, settled, owner, invoke, add, fail, park, events, logger };
}

let sequence = 0;
function entry(data: unknown = { n: 1 }, deliveries = 1, extra: string[] = []): HeldEntry {
  sequence += 1;
  return new HeldEntry(`${1_700_000_000_000 + sequence}-0`, [...encodeEnvelope({ data }, codec), ...extra], deliveries, {
    manualAck: async () => true,
  });
}

describe('EntryDispatcher', () => {
  describe('a handler that succeeds', () => {
    it('settles a plain return value at once: the ack is queued and the slot freed within the call', () => {
      const { dispatcher, settled, add } = setup({ handler: () => 42 });
      const e = entry();
      dispatcher.dispatch(e);
      expect(add).toHaveBeenCalledWith(e.id, e.readUnder);
      expect(settled).toEqual([[e.id, 'acked']]);
    });

    it('settles after a returned promise resolves, not before', async () => {
      const result = deferred();
      const { dispatcher, settled, add } = setup({ handler: () => result.promise });
      const e = entry();
      dispatcher.dispatch(e);
      await turn();
      expect(settled).toEqual([]);
      expect(add).not.toHaveBeenCalled();
      result.resolve('done');
      await turn();
      expect(add).toHaveBeenCalledWith(e.id, e.readUnder);
      expect(settled).toEqual([[e.id, 'acked']]);
    });

    it('adopts a foreign thenable and acks only once it resolves', async () => {
      let fulfil: (value: unknown) => void = () => undefined;
      const thenable = { then: (onFulfilled: (value: unknown) => void) => void (fulfil = onFulfilled) };
      const { dispatcher, settled, add } = setup({ handler: () => thenable });
      const e = entry();
      dispatcher.dispatch(e);
      await turn();
      expect(settled).toEqual([]);
      fulfil('ok');
      await turn();
      expect(add).toHaveBeenCalledWith(e.id, e.readUnder);
      expect(settled).toEqual([[e.id, 'acked']]);
    });

    it('waits for a returned Observable to complete, whether returned directly or through a promise', async () => {
      const { dispatcher, settled } = setup({
        handler: (data) => ((data as { n: number }).n === 1 ? of(1) : Promise.resolve(of(2))),
      });
      const direct = entry({ n: 1 });
      const wrapped = entry({ n: 2 });
      dispatcher.dispatch(direct);
      dispatcher.dispatch(wrapped);
      await turn();
      expect(settled).toEqual(
        expect.arrayContaining([
          [direct.id, 'acked'],
          [wrapped.id, 'acked'],
        ]),
      );
    });

    it('does not settle an Observable that emitted but has not completed', async () => {
      const subject = new Subject<number>();
      const { dispatcher, settled, add } = setup({ handler: () => subject });
      const e = entry();
      dispatcher.dispatch(e);
      subject.next(1);
      await turn();
      expect(settled).toEqual([]);
      subject.complete();
      await turn();
      expect(add).toHaveBeenCalledWith(e.id, e.readUnder);
      expect(settled).toEqual([[e.id, 'acked']]);
    });

    it('leaves a manual-ack event pending when its handler did not ack, and queues no ack', async () => {
      const { dispatcher, settled, add } = setup({ options: { ackMode: 'manual' }, handler: async () => undefined });
      const e = entry();
      dispatcher.dispatch(e);
      await turn();
      expect(settled).toEqual([[e.id, 'left-pending']]);
      expect(add).not.toHaveBeenCalled();
    });

    it('reports a manual ack the handler made itself as acked without queueing a second one', async () => {
      const { dispatcher, settled, add } = setup({
        options: { ackMode: 'manual' },
        handler: async (_data, held) => {
          held.acked = true;
        },
      });
      const e = entry();
      dispatcher.dispatch(e);
      await turn();
      expect(settled).toEqual([[e.id, 'acked']]);
      expect(add).not.toHaveBeenCalled();
    });

    it('still acks a request (message handler) in manual mode: manual ack applies to events only', async () => {
      const { dispatcher, settled, add } = setup({
        kind: 'message',
        options: { ackMode: 'manual' },
        handler: async () => 'reply',
      });
      const e = entry();
      dispatcher.dispatch(e);
      await turn();
      expect(add).toHaveBeenCalledWith(e.id, e.readUnder);
      expect(settled).toEqual([[e.id, 'acked']]);
    });

    it('reports an entry reclaimed while its handler ran as lost and never acks it', async () => {
      const { dispatcher, settled, add } = setup({ handler: async (_data, held) => held.markLost() });
      const e = entry();
      dispatcher.dispatch(e);
      await turn();
      expect(settled).toEqual([[e.id, 'lost']]);
      expect(add).not.toHaveBeenCalled();
      expect(e.signal.aborted).toBe(true);
    });

    it('does not ack an entry trimmed while its handler ran (Redis dropped it from the PEL)', async () => {
      const { dispatcher, settled, add } = setup({
        handler: async (_data, held) => {
          held.trimmed = true;
        },
      });
      const e = entry();
      dispatcher.dispatch(e);
      await turn();
      expect(settled).toEqual([[e.id, 'acked']]);
      expect(add).not.toHaveBeenCalled();
    });
  });

  describe('a handler that fails', () => {
    it('hands a rejected promise to the failure handler and settles with its outcome', async () => {
      const boom = new Error('boom');
      const { dispatcher, settled, add, fail } = setup({ handler: () => Promise.reject(boom), failOutcome: 'retry-scheduled' });
      const e = entry();
      dispatcher.dispatch(e);
      await turn();
      expect(fail).toHaveBeenCalledWith(e, boom);
      expect(settled).toEqual([[e.id, 'retry-scheduled']]);
      expect(add).not.toHaveBeenCalled();
    });

    it('treats a synchronous throw like a rejection', async () => {
      const boom = new Error('sync boom');
      const { dispatcher, settled, fail } = setup({
        handler: () => {
          throw boom;
        },
        failOutcome: 'parked',
      });
      const e = entry();
      expect(() => dispatcher.dispatch(e)).not.toThrow();
      await turn();
      expect(fail).toHaveBeenCalledWith(e, boom);
      expect(settled).toEqual([[e.id, 'parked']]);
    });

    it('fails an entry whose Observable errors, directly or through a promise', async () => {
      const boom = new Error('stream error');
      const { dispatcher, settled, fail, add } = setup({
        handler: (data) => ((data as { n: number }).n === 1 ? throwError(() => boom) : Promise.resolve(throwError(() => boom))),
        failOutcome: 'lost',
      });
      const direct = entry({ n: 1 });
      const wrapped = entry({ n: 2 });
      dispatcher.dispatch(direct);
      dispatcher.dispatch(wrapped);
      await turn();
      expect(fail).toHaveBeenCalledWith(direct, boom);
      expect(fail).toHaveBeenCalledWith(wrapped, boom);
      expect(settled).toEqual(
        expect.arrayContaining([
          [direct.id, 'lost'],
          [wrapped.id, 'lost'],
        ]),
      );
      expect(add).not.toHaveBeenCalled();
    });

    it('fails an entry whose foreign thenable rejects', async () => {
      const boom = new Error('thenable');
      const thenable = { then: (_ok: unknown, onRejected: (err: unknown) => void) => onRejected(boom) };
      const { dispatcher, settled, fail } = setup({ handler: () => thenable, failOutcome: 'left-pending' });
      const e = entry();
      dispatcher.dispatch(e);
      await turn();
      expect(fail).toHaveBeenCalledWith(e, boom);
      expect(settled).toEqual([[e.id, 'left-pending']]);
    });

    it('frees the slot through settledUnexpectedly when the failure handler itself rejects', async () => {
      const { dispatcher, settled, fail, owner } = setup({ handler: () => Promise.reject(new Error('x')) });
      const broken = new Error('failure handler bug');
      fail.mockRejectedValueOnce(broken);
      const e = entry();
      dispatcher.dispatch(e);
      await turn();
      expect(owner.settledUnexpectedly).toHaveBeenCalledWith(e, broken);
      expect(settled).toEqual([]);
    });

    it('reports handled with ok false, and a throwing listener does not keep the entry from settling', async () => {
      const { dispatcher, settled, events, logger } = setup({ handler: () => Promise.reject(new Error('x')) });
      const seen: boolean[] = [];
      events.on('handled', (event) => {
        seen.push(event.ok);
        throw new Error('listener bug');
      });
      const e = entry();
      dispatcher.dispatch(e);
      await turn();
      expect(seen).toEqual([false]);
      expect(logger.error).toHaveBeenCalledWith(expect.stringContaining('"handled" event listener threw'));
      expect(settled).toEqual([[e.id, 'retry-scheduled']]);
    });
  });

  describe('entries that never reach the handler', () => {
    it('parks an entry whose payload was trimmed as payload-trimmed', async () => {
      const { dispatcher, settled, invoke, park } = setup();
      const e = new HeldEntry('1-0', null, 2, { manualAck: async () => true });
      dispatcher.dispatch(e);
      await turn();
      expect(invoke).not.toHaveBeenCalled();
      expect(park).toHaveBeenCalledWith(e, DeadLetterReason.PAYLOAD_TRIMMED);
      expect(settled).toEqual([[e.id, 'parked']]);
    });

    it('parks an entry delivered more than maxDeliveries times as max-deliveries without running it', async () => {
      const { dispatcher, settled, invoke, park } = setup({ options: { maxDeliveries: 3 }, parkOutcome: 'lost' });
      const atLimit = entry({ n: 1 }, 3);
      const over = entry({ n: 2 }, 4);
      dispatcher.dispatch(atLimit);
      dispatcher.dispatch(over);
      await turn();
      expect(invoke).toHaveBeenCalledTimes(1);
      expect(park).toHaveBeenCalledTimes(1);
      expect(park).toHaveBeenCalledWith(
        over,
        DeadLetterReason.MAX_DELIVERIES,
        expect.objectContaining({ message: expect.stringContaining('Delivered 4 times (maxDeliveries 3)') }),
        true,
        undefined, // no ordering key to block: the handler has no onDeadLetter: 'block-key'
      );
      expect(settled).toEqual(
        expect.arrayContaining([
          [atLimit.id, 'acked'],
          [over.id, 'lost'],
        ]),
      );
    });

    it('parks an envelope whose data cannot be decoded as undecodable', async () => {
      const { dispatcher, settled, invoke, park } = setup();
      const e = new HeldEntry('1-0', [ENVELOPE.version, ENVELOPE.versionValue, ENVELOPE.data, '{not json'], 1, {
        manualAck: async () => true,
      });
      dispatcher.dispatch(e);
      await turn();
      expect(invoke).not.toHaveBeenCalled();
      expect(park).toHaveBeenCalledWith(e, DeadLetterReason.UNDECODABLE, expect.any(Error));
      expect(settled).toEqual([[e.id, 'parked']]);
    });

    it('acks a re-drive addressed to another group as skipped, without running it', () => {
      const { dispatcher, settled, invoke, add, events } = setup();
      const skipped: string[] = [];
      events.on('skipped', (event) => skipped.push(event.reason));
      const e = entry({ n: 1 }, 1, [ENVELOPE.targetGroup, 'shipping']);
      dispatcher.dispatch(e);
      expect(invoke).not.toHaveBeenCalled();
      expect(add).toHaveBeenCalledWith(e.id, e.readUnder);
      expect(settled).toEqual([[e.id, 'skipped']]);
      expect(skipped).toEqual(['other-group']);
    });

    it('runs a re-drive addressed to its own group', async () => {
      const { dispatcher, settled, invoke } = setup();
      const e = entry({ n: 1 }, 1, [ENVELOPE.targetGroup, 'billing']);
      dispatcher.dispatch(e);
      await turn();
      expect(invoke).toHaveBeenCalledTimes(1);
      expect(settled).toEqual([[e.id, 'acked']]);
    });

    it('skips an expired request with a warning', () => {
      const { dispatcher, settled, invoke, add, logger } = setup({ kind: 'message' });
      const e = new HeldEntry('1-0', encodeEnvelope({ data: 1, deadline: Date.now() - 1_000 }, codec), 1, {
        manualAck: async () => true,
      });
      dispatcher.dispatch(e);
      expect(invoke).not.toHaveBeenCalled();
      expect(add).toHaveBeenCalledWith(e.id, e.readUnder);
      expect(settled).toEqual([[e.id, 'skipped']]);
      expect(logger.warn).toHaveBeenCalledWith(expect.stringContaining('after its deadline'));
    });

    it('reports a skipped entry that another consumer owns now as lost and does not ack it', () => {
      const { dispatcher, settled, add } = setup();
      const e = entry({ n: 1 }, 1, [ENVELOPE.targetGroup, 'shipping']);
      e.markLost();
      dispatcher.dispatch(e);
      expect(add).not.toHaveBeenCalled();
      expect(settled).toEqual([[e.id, 'lost']]);
    });
  });

  describe('ordering keys', () => {
    it('runs entries of one key one after another, and other keys alongside', async () => {
      const running = new Map<number, ReturnType<typeof deferred>>();
      const { dispatcher, settled, invoke } = setup({
        options: { orderingKey: 'account' },
        handler: (data) => {
          const d = deferred();
          running.set((data as { n: number }).n, d);
          return d.promise;
        },
      });
      const first = entry({ account: 'A', n: 1 });
      const second = entry({ account: 'A', n: 2 });
      const other = entry({ account: 'B', n: 3 });
      dispatcher.dispatch(first);
      dispatcher.dispatch(second);
      dispatcher.dispatch(other);
      await turn();
      expect([...running.keys()]).toEqual([1, 3]);
      running.get(1)!.resolve(undefined);
      await turn();
      expect(invoke).toHaveBeenCalledTimes(3);
      expect([...running.keys()]).toEqual([1, 3, 2]);
      expect(settled).toEqual([[first.id, 'acked']]);
      running.get(2)!.resolve(undefined);
      running.get(3)!.resolve(undefined);
      await turn();
      expect(settled).toHaveLength(3);
      expect(settled).toEqual(
        expect.arrayContaining([
          [second.id, 'acked'],
          [other.id, 'acked'],
        ]),
      );
    });

    it('asks the ownership gate again when a queued entry gets its turn: refused, its handler is never called', async () => {
      const first = deferred();
      const { dispatcher, settled, invoke, owner, add } = setup({
        options: { orderingKey: 'account' },
        handler: (data) => ((data as { n: number }).n === 1 ? first.promise : undefined),
      });
      const running = entry({ account: 'A', n: 1 });
      const queued = entry({ account: 'A', n: 2 });
      dispatcher.dispatch(running);
      dispatcher.dispatch(queued);
      await turn();
      expect(invoke).toHaveBeenCalledTimes(1);
      // The partition is lost (or its lease ran out) while the first entry of the key runs.
      owner.mayStart = () => false;
      first.resolve(undefined);
      await turn();
      expect(invoke).toHaveBeenCalledTimes(1);
      expect(queued.invoked).toBe(false);
      expect(settled).toEqual([
        [running.id, 'acked'],
        [queued.id, 'unstarted'],
      ]);
      expect(add).toHaveBeenCalledTimes(1);
    });

    it('lets the next entry of a key run after the previous one failed', async () => {
      let calls = 0;
      const { dispatcher, settled } = setup({
        options: { orderingKey: (data) => (data as { key: string }).key },
        handler: async () => {
          calls += 1;
          if (calls === 1) throw new Error('first fails');
        },
      });
      const first = entry({ key: 'k' });
      const second = entry({ key: 'k' });
      dispatcher.dispatch(first);
      dispatcher.dispatch(second);
      await turn();
      expect(calls).toBe(2);
      expect(settled).toEqual(
        expect.arrayContaining([
          [first.id, 'retry-scheduled'],
          [second.id, 'acked'],
        ]),
      );
    });
  });
});
