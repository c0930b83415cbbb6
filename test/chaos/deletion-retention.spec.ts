// Chaos scenarios 9 and 10: the stream or its group deleted mid-run, and retention trimming
// while the consumers are down (safe trimming vs a plain MAXLEN).
import type { XPendingRow } from '../../libs/nest-redis-streams/src/redis/replies.js';
import { trimSafely } from 'nest-redis-streams';
import { waitFor } from '../support/helpers.js';
import { expectNoLoss } from './support/expectations.js';
import { FAST_RECOVERY as FAST } from './support/profiles.js';
import { chaosLoop, chaosTest } from './support/chaos-test.js';
import { closeOpenScenarios, scaled } from './support/scenario.js';
import { compareIds, eventIdsInStream, lastDeliveredId } from './support/stream-contents.js';

afterAll(closeOpenScenarios);

describe('chaos: deletion and retention', () => {
  chaosTest(
    9,
    'stream deleted (DEL) and group deleted (XGROUP DESTROY) mid-run: consumption goes on',
    async (s) => {
      const count = scaled(3_000);
      // Consumers a little slower than the producer, so that the DEL finds a backlog to destroy.
      await s.consumers(['c0', 'c1'], { ...FAST, CONCURRENCY: 1, HANDLER_MS: 8 });
      const producer = s.producer('producer', { COUNT: count, RATE: count / 10 });
      const actions = [async () => s.data.del(s.stream), async () => s.data.xgroup('DESTROY', s.stream, 'nest')];
      await chaosLoop(
        s,
        { minMs: 2_500, maxMs: 3_500, active: () => producer.alive && actions.length > 0, limitMs: 20_000 },
        async () => {
          await actions.shift()!();
        },
      );
      await s.produced(producer);
      // A DEL destroys whatever the stream held: only entries written after it can be required.
      const afterDel = new Set((await eventIdsInStream(s.data, s.stream)).values());
      const r = await s.settle(
        ['nest'],
        60_000,
        (x) => x.groups[0].pending === 0 && x.groups[0].missing.every((k) => !afterDel.has(k)),
      );
      const g = r.groups[0];
      const destroyed = g.missing.filter((k) => !afterDel.has(k));
      s.note(
        `DEL destroyed ${destroyed.length} entries not yet processed (expected: a DEL deletes data); ` +
          `${afterDel.size} written after it, all required; XGROUP DESTROY re-delivered from 0: ${g.duplicates} duplicate runs, absorbed by the guard`,
      );
      const row = s.row(`${count} entries`, r);
      return {
        row: { ...row, lost: g.missing.length - destroyed.length },
        verify: () => {
          expect(actions).toHaveLength(0);
          expect(g.missing.filter((k) => afterDel.has(k))).toEqual([]);
          expect(g.pending).toBe(0);
          expect(g.dupEffects).toBe(0);
          expect(afterDel.size).toBeGreaterThan(count / 4);
        },
      };
    },
    120_000,
  );

  chaosTest(
    10,
    'retention below the backlog while consumers are down: safe trimming loses nothing',
    async (s) => {
      const half = scaled(1_500);
      const consumers = await s.consumers(['c0', 'c1'], { ...FAST, HANDLER_MS: 2 });
      await s.produced(s.producer('p1', { COUNT: half }));
      await waitFor(
        async () => (await s.ledger.hlen(s.keys.effects('nest'))) >= half / 2,
        'half of the entries processed',
        30_000,
      );
      await Promise.all(consumers.map((c) => c.kill('SIGKILL')));
      // Consumers down, entries pending; retention far below the backlog, trimmed every 100 ms.
      const p2 = s.producer('p2', { COUNT: half, FIRST: half, RATE: half / 4 });
      let removed = 0;
      await chaosLoop(s, { minMs: 80, maxMs: 120, active: () => p2.alive, limitMs: 20_000 }, async () => {
        removed += (await trimSafely(s.data, s.stream, { maxLen: 100 })).removed;
      });
      await s.produced(p2);
      removed += (await trimSafely(s.data, s.stream, { maxLen: 100 })).removed;
      await s.consumers(['c0', 'c1'], FAST);
      const r = await s.settle(['nest'], 60_000);
      s.note(`trimSafely(maxLen 100) every ~100 ms while down removed ${removed} acknowledged entries, nothing else`);
      return {
        row: s.row(`${2 * half} entries, maxLen 100`, r),
        verify: () => {
          expect(removed).toBeGreaterThan(0);
          expectNoLoss(r);
          expect(r.groups[0].tombstoned).toBe(0);
        },
      };
    },
    120_000,
    { sub: 'a' },
  );

  chaosTest(
    10,
    'plain MAXLEN while consumers are down: every trimmed entry tombstoned, none silent',
    async (s) => {
      const half = scaled(1_000);
      const [consumer] = await s.consumers(['c0'], { ...FAST, PREFETCH: 200, CONCURRENCY: 2, HANDLER_MS: 5 });
      await s.produced(s.producer('p1', { COUNT: half }));
      await waitFor(async () => (await s.ledger.hlen(s.keys.effects('nest'))) >= half / 4, 'a quarter processed', 30_000);
      await consumer.kill('SIGKILL');
      const pel = ((await s.data.xpending(s.stream, 'nest', '-', '+', 100_000)) as XPendingRow[]).map(([id]) => id);
      const delivered = await lastDeliveredId(s.data, s.stream, 'nest');
      await s.produced(s.producer('p2', { COUNT: half, FIRST: half, MAXLEN: 400 }));
      const present = await eventIdsInStream(s.data, s.stream);
      const produced = new Map(Object.entries(await s.ledger.hgetall(s.keys.produced)).map(([k, id]) => [id, k]));
      const trimmedPending = pel.filter((id) => !present.has(id));
      const trimmedUndelivered = [...produced.keys()].filter((id) => !present.has(id) && compareIds(id, delivered) > 0);
      await s.consumers(['c0'], FAST);
      // Settled when every missing entry is covered by a tombstone or the trim audit's count.
      const r = await s.settle(
        ['nest'],
        30_000,
        (x) => x.groups[0].pending === 0 && x.groups[0].missing.length === x.groups[0].auditedLoss,
      );
      const g = r.groups[0];
      const silent = g.missing.length - g.auditedLoss;
      s.note(
        `MAXLEN 400 trimmed ${trimmedPending.length} pending and ${trimmedUndelivered.length} undelivered entries; ` +
          `${g.tombstoned} payload-trimmed tombstones, trim audit counted ${g.auditedLoss}; ${silent} lost with no trace`,
      );
      return {
        row: s.row(`${2 * half} entries, MAXLEN 400`, r),
        verify: () => {
          expect(trimmedPending.length).toBeGreaterThan(0);
          expect(g.tombstoned).toBe(trimmedPending.length);
          expect(g.pending).toBe(0);
          // Never silent: every entry trimmed before it was processed is accounted for, exactly.
          expect({ silentlyLost: silent, audited: g.auditedLoss }).toEqual({
            silentlyLost: 0,
            audited: trimmedUndelivered.length,
          });
        },
      };
    },
    90_000,
    { sub: 'b' },
  );
});
