import type { Redis } from 'ioredis';
import { ENVELOPE } from '../constants.js';
import { DeadLetterReason, deadLetterFields } from './dead-letter-record.js';
import { DeadLetterService } from './dead-letter.service.js';

// The service's own logic (paging, decoding, the re-drive's arguments and answers, the tally)
// against an in-memory dead-letter stream. The re-drive script and real streams are tested
// against Redis in test/recovery/dead-letter.spec.ts.

type Row = [id: string, fields: string[]];

const order = (id: string) => id.split('-').map(BigInt) as [bigint, bigint];
const before = (a: string, b: string) => {
  const [[am, as], [bm, bs]] = [order(a), order(b)];
  return am < bm || (am === bm && as < bs);
};

class FakeStream {
  rows: Row[] = [];
  readonly sent: unknown[][] = [];
  /** What the re-drive script answers: the new id, null (already gone) or 0 (a tombstone). */
  redriveAnswer: string | null | 0 = '100-0';

  /** XRANGE with '-', '+', an exact id or an exclusive '(id' start, and COUNT. */
  async xrange(key: string, start: string, end: string, ...count: Array<string | number>): Promise<Row[]> {
    this.sent.push(['xrange', key, start, end, ...count]);
    const limit = count[0] === 'COUNT' ? Number(count[1]) : Infinity;
    const from = (id: string) => start === '-' || (start.startsWith('(') ? before(start.slice(1), id) : !before(id, start));
    const to = (id: string) => end === '+' || !before(end, id);
    return this.rows.filter(([id]) => from(id) && to(id)).slice(0, limit);
  }

  async xrangeBuffer(key: string, start: string, end: string): Promise<Array<[Buffer, Buffer[]]>> {
    const rows = await this.xrange(key, start, end);
    return rows.map(([id, fields]) => [Buffer.from(id), fields.map((f) => Buffer.from(f))]);
  }

  async xlen(key: string): Promise<number> {
    this.sent.push(['xlen', key]);
    return this.rows.length;
  }

  async xdel(key: string, id: string): Promise<number> {
    this.sent.push(['xdel', key, id]);
    const kept = this.rows.filter(([rowId]) => rowId !== id);
    const removed = this.rows.length - kept.length;
    this.rows = kept;
    return removed;
  }

  async eval(...args: unknown[]): Promise<unknown> {
    this.sent.push(['eval', ...args]);
    return this.redriveAnswer;
  }

  /** Parks an entry as the transport does. */
  park(
    id: string,
    details: { reason?: DeadLetterReason; group?: string; stream?: string },
    original: string[] = ['n', '1'],
  ): void {
    const fields = deadLetterFields(
      {
        reason: details.reason ?? DeadLetterReason.MAX_DELIVERIES,
        stream: details.stream ?? 'orders',
        id: '1-0',
        group: details.group ?? 'billing',
        consumer: 'c1',
        deliveries: 5,
        error: new RangeError('too big'),
      },
      original,
    );
    this.rows.push([id, fields]);
  }
}

function setup() {
  const stream = new FakeStream();
  return { stream, service: new DeadLetterService(stream as unknown as Redis) };
}

describe('DeadLetterService', () => {
  beforeEach(() => jest.useFakeTimers({ now: 1_700_000_000_000 }));
  afterEach(() => jest.useRealTimers());

  it('names the dead-letter stream as the transport does, in the slot of its source on a cluster', () => {
    expect(DeadLetterService.streamFor('orders')).toBe('orders:dlq');
    expect(DeadLetterService.streamFor('orders', true)).toBe('{orders}:dlq');
    expect(DeadLetterService.streamFor('orders:{orders:2}', true)).toBe('orders:{orders:2}:dlq');
  });

  describe('list and inspect', () => {
    it('decodes a dead letter: its metadata as fields of the record, its original fields as they were', async () => {
      const { stream, service } = setup();
      stream.park('7-0', {}, ['amount', '5', 'dlq:reason', 'mine']);
      const letter = await service.inspect('orders:dlq', '7-0');
      expect(letter).toEqual({
        id: '7-0',
        reason: 'max-deliveries',
        stream: 'orders',
        originalId: '1-0',
        group: 'billing',
        consumer: 'c1',
        error: 'too big',
        errorClass: 'RangeError',
        deliveries: 5,
        parkedAt: 1_700_000_000_000,
        fields: { amount: '5', 'dlq:reason': 'mine' },
      });
    });

    it('keeps an original field named __proto__ as data, not as the record’s prototype', async () => {
      const { stream, service } = setup();
      stream.park('7-0', {}, ['__proto__', 'x']);
      const letter = await service.inspect('orders:dlq', '7-0');
      expect(Object.getPrototypeOf(letter!.fields)).toBe(Object.prototype);
      expect(Object.entries(letter!.fields)).toEqual([['__proto__', 'x']]);
    });

    it('answers null for an id that is not there', async () => {
      const { service } = setup();
      await expect(service.inspect('orders:dlq', '7-0')).resolves.toBeNull();
      await expect(service.inspectBytes('orders:dlq', '7-0')).resolves.toBeNull();
    });

    it('gives the original fields as bytes with inspectBytes', async () => {
      const { stream, service } = setup();
      stream.park('7-0', {}, ['a', '1', 'a', '2']);
      const letter = await service.inspectBytes('orders:dlq', '7-0');
      expect(letter!.fields.map(([name, value]) => [name.toString(), value.toString()])).toEqual([
        ['a', '1'],
        ['a', '2'],
      ]);
      expect(letter!.reason).toBe('max-deliveries');
    });

    it('pages oldest first: next is the last id of a full page, null after a short one', async () => {
      const { stream, service } = setup();
      for (const id of ['1-0', '2-0', '3-0', '4-0', '5-0']) stream.park(id, {});
      const first = await service.list('orders:dlq', { count: 2 });
      expect([first.items.map((l) => l.id), first.next]).toEqual([['1-0', '2-0'], '2-0']);
      const second = await service.list('orders:dlq', { count: 2, after: first.next! });
      expect([second.items.map((l) => l.id), second.next]).toEqual([['3-0', '4-0'], '4-0']);
      const last = await service.list('orders:dlq', { count: 2, after: second.next! });
      expect([last.items.map((l) => l.id), last.next]).toEqual([['5-0'], null]);
      expect(stream.sent[1]).toEqual(['xrange', 'orders:dlq', '(2-0', '+', 'COUNT', 2]);
    });

    it('reads 50 per page by default, and nothing after the last possible id', async () => {
      const { stream, service } = setup();
      await service.list('orders:dlq');
      expect(stream.sent).toEqual([['xrange', 'orders:dlq', '-', '+', 'COUNT', 50]]);
      await expect(service.list('orders:dlq', { after: '18446744073709551615-18446744073709551615' })).resolves.toEqual({
        items: [],
        next: null,
      });
      expect(stream.sent).toHaveLength(1);
    });
  });

  describe('redrive', () => {
    it('re-adds through the script, to the group that parked it by default', async () => {
      const { stream, service } = setup();
      stream.park('7-0', { group: 'billing' });
      await expect(service.redrive('orders:dlq', '7-0')).resolves.toBe('100-0');
      expect(stream.sent.at(-1)).toEqual([
        'eval',
        expect.stringContaining("'XADD', KEYS[2]"),
        2,
        'orders:dlq',
        'orders',
        '7-0',
        'billing',
        ENVELOPE.targetGroup,
        ENVELOPE.redrivenFrom,
        ENVELOPE.originalId,
      ]);
    });

    it('re-adds to another group when asked, and to every group (no target) for null', async () => {
      const { stream, service } = setup();
      stream.park('7-0', { group: 'billing' });
      await service.redrive('orders:dlq', '7-0', { group: 'audit' });
      expect(stream.sent.at(-1)?.[6]).toBe('audit');
      await service.redrive('orders:dlq', '7-0', { group: null });
      expect(stream.sent.at(-1)?.[6]).toBe('');
    });

    it('answers null, sending no script, for a dead letter that is not there (already re-driven or discarded)', async () => {
      const { stream, service } = setup();
      await expect(service.redrive('orders:dlq', '7-0')).resolves.toBeNull();
      expect(stream.sent.map(([command]) => command)).toEqual(['xrange']);
    });

    it('answers null when the script found it gone meanwhile', async () => {
      const { stream, service } = setup();
      stream.park('7-0', {});
      stream.redriveAnswer = null;
      await expect(service.redrive('orders:dlq', '7-0')).resolves.toBeNull();
    });

    it('refuses a dead letter that names no source stream', async () => {
      const { stream, service } = setup();
      stream.park('7-0', { stream: '' });
      await expect(service.redrive('orders:dlq', '7-0')).rejects.toThrow(
        'Dead letter 7-0 in "orders:dlq" names no source stream (field "dlq:stream"); re-add its fields by hand.',
      );
      expect(stream.sent.map(([command]) => command)).not.toContain('eval');
    });

    it('refuses a tombstone (the script answers 0): there is no payload to re-drive', async () => {
      const { stream, service } = setup();
      stream.park('7-0', { reason: DeadLetterReason.PAYLOAD_TRIMMED }, []);
      stream.redriveAnswer = 0;
      await expect(service.redrive('orders:dlq', '7-0')).rejects.toThrow(
        'Dead letter 7-0 in "orders:dlq" is a tombstone (payload-trimmed): it has no payload to re-drive. Discard it.',
      );
    });
  });

  describe('tally', () => {
    it('counts by reason and by group, and the entries lost to trimming from the tombstones', async () => {
      const { stream, service } = setup();
      stream.park('1-0', { group: 'billing' });
      stream.park('2-0', { group: 'billing', reason: DeadLetterReason.NON_RETRYABLE });
      stream.park('3-0', { group: 'audit', reason: DeadLetterReason.PAYLOAD_TRIMMED }, []);
      stream.park('4-0', { group: '__proto__', reason: DeadLetterReason.TRIMMED_UNDELIVERED }, []);
      stream.rows[3][1].push('dlq:lost_count', '7');
      const tally = await service.tally('orders:dlq');
      expect(tally.total).toBe(4);
      expect(tally.counted).toBe(4);
      expect({ ...tally.byReason }).toEqual({
        'max-deliveries': 1,
        'non-retryable': 1,
        'payload-trimmed': 1,
        'trimmed-undelivered': 1,
      });
      expect(Object.entries(tally.byGroup)).toEqual([
        ['billing', 2],
        ['audit', 1],
        ['__proto__', 1],
      ]);
      expect(tally.lost).toBe(1 + 7);
    });

    it('reads at most limit records, in pages of up to 500, and says how many it counted', async () => {
      const { stream, service } = setup();
      // Bare records (the tally reads reason and group only): 1,200 parked entries would be slow to build.
      for (let i = 1; i <= 1_200; i++) stream.rows.push([`${i}-0`, ['dlq:reason', 'max-deliveries', 'dlq:group', 'billing']]);
      const tally = await service.tally('orders:dlq', { limit: 1_100 });
      expect([tally.total, tally.counted]).toEqual([1_200, 1_100]);
      const pages = stream.sent.filter(([command]) => command === 'xrange');
      expect(pages.map((page) => [page[2], page.at(-1)])).toEqual([
        ['-', 500],
        ['(500-0', 500],
        ['(1000-0', 100],
      ]);
    });

    it('stops at the end of the stream', async () => {
      const { stream, service } = setup();
      for (let i = 1; i <= 3; i++) stream.park(`${i}-0`, {});
      const tally = await service.tally('orders:dlq');
      expect(tally.counted).toBe(3);
      expect(stream.sent.filter(([command]) => command === 'xrange')).toHaveLength(2);
    });
  });

  it('discard answers whether the dead letter was there', async () => {
    const { stream, service } = setup();
    stream.park('7-0', {});
    await expect(service.discard('orders:dlq', '7-0')).resolves.toBe(true);
    await expect(service.discard('orders:dlq', '7-0')).resolves.toBe(false);
    await expect(service.count('orders:dlq')).resolves.toBe(0);
  });
});
