import type { Logger } from '@nestjs/common';
import { Cluster } from 'ioredis';
import { TransportEvents } from '../events/transport-events.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import type { RecoveryTarget } from './recovery-target.interface.js';
import { auditTrimLoss, auditTrimLossBeforeRead, trimAuditFieldArgs } from './trim-audit.js';

// The audit's own logic (its arguments, what it reports, the repair that follows, errors) against
// a fake of its two scripts. What the scripts find in a trimmed stream is tested against Redis in
// test/recovery/trim-audit.spec.ts.

type AuditAnswer = [count: number, deadLetterId: string] | 0 | Error;

class FakeAuditScripts implements Pick<ScriptedRedis, 'nrsAuditTrimLoss' | 'nrsRepairEntriesRead'> {
  readonly sent: Array<[command: string, ...args: unknown[]]> = [];
  audit: AuditAnswer = 0;
  repair: number | Error = 0;

  async nrsAuditTrimLoss(...args: Parameters<ScriptedRedis['nrsAuditTrimLoss']>): Promise<[number, string] | 0> {
    this.sent.push(['nrsAuditTrimLoss', ...args]);
    if (this.audit instanceof Error) throw this.audit;
    return this.audit;
  }

  async nrsRepairEntriesRead(...args: Parameters<ScriptedRedis['nrsRepairEntriesRead']>): Promise<number> {
    this.sent.push(['nrsRepairEntriesRead', ...args]);
    if (this.repair instanceof Error) throw this.repair;
    return this.repair;
  }
}

/** Only what the audit reads of a consumer: where it works and its dead-letter stream. */
function target(stream = 'orders', deadLetterStream = 'orders:dlq'): RecoveryTarget {
  const unused = () => {
    throw new Error('the trim audit only reads where the consumer works');
  };
  return {
    stream,
    group: 'billing',
    consumer: 'c1',
    options: { minIdleTimeMs: 30_000, maxHandlerMs: 60_000, deadLetterStream },
    heldEntries: () => [],
    heldCount: 0,
    reclaimRoom: 0,
    epoch: 0,
    acceptClaimed: unused,
    tombstone: unused,
    markLost: unused,
    markTrimmed: unused,
  };
}

function setup() {
  const scripts = new FakeAuditScripts();
  const events = new TransportEvents();
  const lettered: unknown[] = [];
  events.on('dead-lettered', (e) => lettered.push(e));
  const logs: Array<[level: 'error' | 'warn', message: string]> = [];
  const logger: Pick<Logger, 'error' | 'warn'> = {
    error: (message: string) => void logs.push(['error', message]),
    warn: (message: string) => void logs.push(['warn', message]),
  };
  return { scripts, redis: scripts as unknown as ScriptedRedis, events, lettered, logs, logger: logger as Logger };
}

describe('trim audit', () => {
  beforeEach(() => jest.useFakeTimers({ now: 1_700_000_000_000 }));
  afterEach(() => jest.useRealTimers());

  it('passes the tombstone field names and reason to the script in the order it takes them', () => {
    expect(trimAuditFieldArgs).toEqual([
      'dlq:reason',
      'dlq:stream',
      'dlq:id',
      'dlq:group',
      'dlq:consumer',
      'dlq:deliveries',
      'dlq:time',
      'dlq:lost_count',
      'dlq:error',
      'trimmed-undelivered',
    ]);
  });

  it("sends the stream, its dead-letter stream, its audit hash and the old hash beside the dead-letter stream, with the clock and 'not before a read'", async () => {
    const { scripts, redis, events, logger } = setup();
    await auditTrimLoss(target(), redis, events, logger);
    expect(scripts.sent[0]).toEqual([
      'nrsAuditTrimLoss',
      'orders',
      'orders:dlq',
      '{orders}:trim-audit',
      'orders:dlq:trim-audit',
      'billing',
      'c1',
      1_700_000_000_000,
      ...trimAuditFieldArgs,
      '0',
    ]);
  });

  it('on a cluster, passes its own hash in place of an old hash outside the stream’s slot', async () => {
    const { scripts, events, logger } = setup();
    const cluster = Object.create(Cluster.prototype) as ScriptedRedis;
    Object.assign(cluster, {
      nrsAuditTrimLoss: scripts.nrsAuditTrimLoss.bind(scripts),
      nrsRepairEntriesRead: scripts.nrsRepairEntriesRead.bind(scripts),
    });
    // "dead-letters:trim-audit" hashes to another slot than "orders".
    const outside = 'dead-letters';
    await auditTrimLoss(target('orders', outside), cluster, events, logger);
    await auditTrimLoss(target('orders', '{orders}:dlq'), cluster, events, logger);
    expect(scripts.sent.filter(([c]) => c === 'nrsAuditTrimLoss').map((s) => s.slice(2, 5))).toEqual([
      ['dead-letters', '{orders}:trim-audit', '{orders}:trim-audit'],
      ['{orders}:dlq', '{orders}:trim-audit', '{orders}:dlq:trim-audit'],
    ]);
  });

  it('reports a loss the script found: an error log naming the tombstone and a dead-lettered event counting the lost entries', async () => {
    const { scripts, redis, events, lettered, logs, logger } = setup();
    scripts.audit = [5, '9-0'];
    await expect(auditTrimLoss(target(), redis, events, logger)).resolves.toBe(5);
    expect(lettered).toEqual([
      {
        stream: 'orders',
        group: 'billing',
        consumer: 'c1',
        id: '',
        deliveries: 0,
        reason: 'trimmed-undelivered',
        deadLetterStream: 'orders:dlq',
        deadLetterId: '9-0',
        count: 5,
      },
    ]);
    expect(logs).toHaveLength(1);
    expect(logs[0][0]).toBe('error');
    expect(logs[0][1]).toContain('5 entries of stream "orders" were trimmed away before group "billing" read them');
    expect(logs[0][1]).toContain('Tombstone 9-0 in "orders:dlq"');
  });

  it('reports nothing when the script found no new loss, then runs the entries-read repair, quiet when nothing was stale', async () => {
    const { scripts, redis, events, lettered, logs, logger } = setup();
    await expect(auditTrimLoss(target(), redis, events, logger)).resolves.toBe(0);
    expect(lettered).toEqual([]);
    expect(logs).toEqual([]);
    expect(scripts.sent.map(([c, ...args]) => [c, ...args.slice(0, 2)])).toEqual([
      ['nrsAuditTrimLoss', 'orders', 'orders:dlq'],
      ['nrsRepairEntriesRead', 'orders', 'billing'],
    ]);
  });

  it('warns when the repair set a stale entries-read right', async () => {
    const { scripts, redis, events, logs, logger } = setup();
    scripts.repair = 3;
    await auditTrimLoss(target(), redis, events, logger);
    expect(logs).toEqual([
      [
        'warn',
        'Group "billing" of stream "orders" had a stale entries-read counter (off by 3, e.g. after a failover); set right.',
      ],
    ]);
  });

  it('never throws: a failed audit is a warning, counts 0, and skips the repair (it would erase the evidence of a loss)', async () => {
    const { scripts, redis, events, lettered, logs, logger } = setup();
    scripts.audit = new Error('NOSCRIPT');
    await expect(auditTrimLoss(target(), redis, events, logger)).resolves.toBe(0);
    expect(scripts.sent.map(([c]) => c)).toEqual(['nrsAuditTrimLoss']);
    expect(lettered).toEqual([]);
    expect(logs).toEqual([['warn', 'Trim audit of stream "orders" group "billing" failed: NOSCRIPT']]);
  });

  it('never throws when the repair fails: the loss found is still counted', async () => {
    const { scripts, redis, events, logs, logger } = setup();
    scripts.audit = [2, '9-0'];
    scripts.repair = new Error('READONLY');
    await expect(auditTrimLoss(target(), redis, events, logger)).resolves.toBe(2);
    expect(logs.at(-1)).toEqual(['warn', 'Trim audit of stream "orders" group "billing" failed: READONLY']);
  });

  describe('before a read', () => {
    it("asks the script for the before-read audit ('1') and repairs nothing", async () => {
      const { scripts, redis, events, lettered, logger } = setup();
      scripts.audit = [4, '9-0'];
      await expect(auditTrimLossBeforeRead(target(), redis, events, logger)).resolves.toBe(4);
      expect(scripts.sent).toHaveLength(1);
      expect(scripts.sent[0].at(-1)).toBe('1');
      expect(lettered).toHaveLength(1);
    });

    it('never throws: a failed audit counts 0', async () => {
      const { scripts, redis, events, logs, logger } = setup();
      scripts.audit = new Error('BUSY');
      await expect(auditTrimLossBeforeRead(target(), redis, events, logger)).resolves.toBe(0);
      expect(logs).toEqual([['warn', 'Trim audit of stream "orders" group "billing" failed: BUSY']]);
    });
  });
});
