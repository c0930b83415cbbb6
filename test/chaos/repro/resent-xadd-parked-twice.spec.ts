// TEST BUG (scenario 4, seed 526557085 on Redis 8.6.3). CLIENT KILL dropped the producer's
// connection after its XADD pipeline had run but before the replies came back; ioredis re-sent the
// pipeline, so poison event e749 was in the stream twice (entry ids …505-49 and …569-49, one event
// id), and each copy was dead-lettered once (consumer c1, 3 deliveries). The ledger keyed its
// "parked twice" check by event id and reported a double park the transport never made. Here
// the re-sent XADD is written by hand: two copies, one record each, no entry parked twice.
import { JsonCodec, encodeEnvelope } from 'nest-redis-streams';
import { scenarioTest } from '../support/chaos-test.js';
import { expectNoLoss } from '../support/expectations.js';
import { isSettled } from '../support/ledger.js';

scenarioTest(
  'a poison event written twice by a re-sent XADD is parked once per copy, not counted as parked twice',
  async (s) => {
    const key = `${s.run}-e0`;
    const fields = encodeEnvelope({ eventId: key, data: { i: 0, chaos: { poison: true } } }, new JsonCodec());
    await s.consumers(['c0'], { MAX_DELIVERIES: 1 });
    const first = await s.data.xadd(s.stream, '*', ...fields);
    const resent = await s.data.xadd(s.stream, '*', ...fields);
    await s.ledger.hset(s.keys.produced, key, resent!).then(() => s.ledger.hset(s.keys.expect, key, 'dead-letter'));
    const r = await s.settle(['nest'], 30_000, (x) => isSettled(x) && x.deadLetters.length >= 2);
    expect(r.deadLetters.map((d) => [d.key, d.originalId]).sort()).toEqual([
      [key, first],
      [key, resent],
    ]);
    // Before the fix: parkedTwice [key].
    expect({ parkedTwice: r.groups[0].parkedTwice, copiesParked: r.groups[0].copiesParked }).toEqual({
      parkedTwice: [],
      copiesParked: 1,
    });
    expectNoLoss(r);
  },
  60_000,
);
