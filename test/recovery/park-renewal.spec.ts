import { Controller, Logger } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { NonRetryableError } from 'nest-redis-streams';
import { LeaseKeeper } from '../../libs/nest-redis-streams/src/recovery/lease-keeper.js';
import type { ScriptedRedis } from '../../libs/nest-redis-streams/src/redis/scripts.js';
import { pendingCount, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

/**
 * Issue 24, item 10: a single consumer logged "Lost entry … to another consumer" right after it
 * parked an entry. A lease renewal that took its ids while the entry was still held is answered
 * after the dead-letter script (XADD + XACK) removed the entry from the PEL, and before the park's
 * answer freed the entry's slot (both replies in one socket read: the renewal's continuation runs
 * first). The interleave is forced here: the renewal runs between the dead-letter script's reply
 * and its handling.
 */
describe('parking and lease renewal', () => {
  const { redis, closers } = testContext();

  it('a renewal answered after the dead-letter script removed the entry does not report it lost', async () => {
    const stream = unique('park-renewal');
    @Controller()
    class Poison {
      @EventPattern(stream, { group: 'g' })
      handle() {
        throw new NonRetryableError('never valid');
      }
    }
    const { app, server } = await startMicroservice([Poison], { consumer: 'solo', reclaimIntervalMs: 0 });
    closers.push(() => app.close());
    const lost: string[] = [];
    server.events.on('lease-lost', (e) => lost.push(e.id));
    // White-box: the engine itself (getConsumers() is read-only), to drive its lease keeper by hand.
    const consumer = server['consumers'][0];
    const commands = server.unwrap<ScriptedRedis>();
    const keeper = new LeaseKeeper(consumer, commands, server.events, new Logger('test'));
    const heldAtRenewal: string[][] = [];
    const deadLetter = commands.nrsDeadLetterIfOwned.bind(commands);
    commands.nrsDeadLetterIfOwned = async (...args: Parameters<ScriptedRedis['nrsDeadLetterIfOwned']>) => {
      const deadLetterId = await deadLetter(...args);
      heldAtRenewal.push([...consumer.heldEntries()].map((entry) => entry.id));
      await keeper.renew();
      return deadLetterId;
    };
    const id = await redis.xadd(stream, '*', 'data', '{"n":1}');
    await waitFor(async () => (await redis.xlen(`${stream}:dlq`)) === 1, 'the entry parked');
    await waitFor(() => consumer.heldCount === 0, 'its slot freed');
    // The renewal ran while the entry was held and gone from the PEL: the race of the demo.
    expect(heldAtRenewal).toEqual([[id]]);
    expect(await pendingCount(redis, stream, 'g')).toBe(0);
    expect(lost).toEqual([]);
  });
});
