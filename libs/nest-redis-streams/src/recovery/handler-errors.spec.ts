import type { Redis } from 'ioredis';
import { HANDLER_ERRORS, readHandlerErrors, recordHandlerError } from './handler-errors.js';

// The errors stream's record and read, against a fake of the three commands they send: a
// pipeline of XADD and PEXPIRE, and XREVRANGE. Typed loosely: ioredis' pipeline is a chainable
// builder whose full type a fake cannot take on, so the fake is cast where it is handed over.

type Reply = [error: Error | null, result: unknown];

class FakeRedis {
  readonly sent: unknown[][] = [];
  /** What the pipeline's exec() answers (null: the connection was closed). */
  execReplies: Reply[] | null = [
    [null, '1-0'],
    [null, 1],
  ];
  /** XREVRANGE's rows, newest first. */
  rows: Array<[id: string, fields: string[]]> = [];

  pipeline() {
    const chain = {
      xadd: (...args: unknown[]) => (this.sent.push(['xadd', ...args]), chain),
      pexpire: (...args: unknown[]) => (this.sent.push(['pexpire', ...args]), chain),
      exec: async () => (this.sent.push(['exec']), this.execReplies),
    };
    return chain;
  }

  async xrevrange(...args: unknown[]): Promise<Array<[string, string[]]>> {
    this.sent.push(['xrevrange', ...args]);
    return this.rows;
  }

  get redis(): Redis {
    return this as unknown as Redis;
  }
}

const failure = { id: '5-0', consumer: 'c1', deliveries: 2, errorClass: 'TypeError', message: 'boom' };

describe('handler errors', () => {
  beforeEach(() => jest.useFakeTimers({ now: 1_700_000_000_000 }));
  afterEach(() => jest.useRealTimers());

  describe('recordHandlerError', () => {
    it('appends one capped record and refreshes its expiry in one round trip', async () => {
      const fake = new FakeRedis();
      await recordHandlerError(fake.redis, 'orders', 'billing', failure);
      expect(fake.sent).toEqual([
        [
          'xadd',
          '{orders}:nrs-errors:billing',
          'MAXLEN',
          '~',
          HANDLER_ERRORS.maxRecords,
          '*',
          ...['id', '5-0', 'at', '1700000000000', 'consumer', 'c1', 'deliveries', '2', 'class', 'TypeError', 'message', 'boom'],
        ],
        ['pexpire', '{orders}:nrs-errors:billing', HANDLER_ERRORS.ttlMs],
        ['exec'],
      ]);
    });

    it('writes beside a partition stream under its own hash tag', async () => {
      const fake = new FakeRedis();
      await recordHandlerError(fake.redis, 'orders:{orders:3}', 'billing', failure);
      expect(fake.sent[0][1]).toBe('orders:{orders:3}:nrs-errors:billing');
    });

    it('cuts a long message to maxMessage characters and a long class name to 100', async () => {
      const fake = new FakeRedis();
      await recordHandlerError(fake.redis, 'orders', 'billing', {
        ...failure,
        errorClass: 'E'.repeat(150),
        message: 'm'.repeat(1_000),
      });
      const fields = fake.sent[0].slice(6) as string[];
      expect(fields[fields.indexOf('class') + 1]).toHaveLength(100);
      expect(fields[fields.indexOf('message') + 1]).toHaveLength(HANDLER_ERRORS.maxMessage);
    });

    it('throws the first error of the pipeline, so the caller decides what a failure to record means', async () => {
      const fake = new FakeRedis();
      const oom = new Error('OOM command not allowed');
      fake.execReplies = [
        [oom, null],
        [null, 1],
      ];
      await expect(recordHandlerError(fake.redis, 'orders', 'billing', failure)).rejects.toBe(oom);
    });

    it('does not throw when exec answers nothing', async () => {
      const fake = new FakeRedis();
      fake.execReplies = null;
      await expect(recordHandlerError(fake.redis, 'orders', 'billing', failure)).resolves.toBeUndefined();
    });
  });

  describe('readHandlerErrors', () => {
    const row = (streamId: string, id: string, at: number, message: string): [string, string[]] => [
      streamId,
      ['id', id, 'at', String(at), 'consumer', 'c1', 'deliveries', '1', 'class', 'Error', 'message', message],
    ];

    it('sends nothing for no ids', async () => {
      const fake = new FakeRedis();
      await expect(readHandlerErrors(fake.redis, 'orders', 'billing', [])).resolves.toEqual(new Map());
      expect(fake.sent).toEqual([]);
    });

    it("reads the newest records (twice the cap) and keeps each wanted id's newest error only", async () => {
      const fake = new FakeRedis();
      fake.rows = [row('30-0', '5-0', 30, 'third'), row('20-0', '7-0', 20, 'other'), row('10-0', '5-0', 10, 'first')];
      const found = await readHandlerErrors(fake.redis, 'orders', 'billing', ['5-0', '6-0']);
      expect(fake.sent).toEqual([['xrevrange', '{orders}:nrs-errors:billing', '+', '-', 'COUNT', HANDLER_ERRORS.maxRecords * 2]]);
      expect([...found.keys()]).toEqual(['5-0']);
      expect(found.get('5-0')).toEqual({
        id: '5-0',
        at: 30,
        consumer: 'c1',
        deliveries: 1,
        errorClass: 'Error',
        message: 'third',
      });
    });

    it('reads a record with missing fields as empty values and zeros', async () => {
      const fake = new FakeRedis();
      fake.rows = [['1-0', ['id', '5-0']]];
      const found = await readHandlerErrors(fake.redis, 'orders', 'billing', ['5-0']);
      expect(found.get('5-0')).toEqual({ id: '5-0', at: 0, consumer: '', deliveries: 0, errorClass: '', message: '' });
    });
  });
});
