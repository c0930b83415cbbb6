import { Controller } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import type { RedisStreamsContext } from 'nest-redis-streams';
import { startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

type Row = [id: string, consumer: string, idle: number, deliveries: number];

/**
 * XACK takes no consumer name: only the ack script's own ownership check keeps an old owner from
 * acking an entry that another consumer reclaimed while the old owner's handler still ran. With
 * lease renewal on, the renewal notices the theft first and the script's check never runs, so
 * these tests turn renewal off. The script alone is tested in test/redis/scripts.spec.ts
 * ("does not ack an entry another consumer reclaimed"). The entry here is the consumer's first, read
 * before any ack told it the group's claim epoch, so its ack checks the owner even against this raw
 * XCLAIM; once the epoch is known, claims must raise it (test/recovery/claim-epoch-ack.spec.ts).
 */
describe('ack ownership without lease renewal', () => {
  const { redis, closers } = testContext();

  it.each([{ ackMode: 'auto' as const }, { ackMode: 'manual' as const }])(
    'an old owner does not ack an entry another consumer took over ($ackMode ack)',
    async ({ ackMode }) => {
      const stream = unique(`ack-owner-${ackMode}`);
      let release!: () => void;
      const running = new Promise<void>((resolve) => (release = resolve));
      const started: string[] = [];
      const manualAcks: boolean[] = [];
      @Controller()
      class Slow {
        @EventPattern(stream, { ackMode })
        async handle(@Ctx() ctx: RedisStreamsContext) {
          started.push(ctx.getEntryId());
          await running;
          if (ackMode === 'manual') manualAcks.push(await ctx.ack());
        }
      }
      // No renewal and no reclaimer of its own: nothing but the ack script stands between the old
      // owner and the other consumer's entry.
      const { app, server } = await startMicroservice([Slow], {
        consumer: 'old-owner',
        leaseRenewal: false,
        reclaimIntervalMs: 0,
        minIdleTimeMs: 60_000,
      });
      closers.push(() => app.close());
      const settled: string[] = [];
      server.events.on('lease-lost', () => settled.push('lease-lost'));
      server.events.on('acked', () => settled.push('acked'));
      const id = await redis.xadd(stream, '*', 'data', '{"n":1}');
      await waitFor(() => started.length === 1, 'the handler to start');
      // Another instance reclaims the entry while the handler runs (as its XAUTOCLAIM would).
      await redis.xclaim(stream, 'nest', 'new-owner', 0, id!);
      release();
      await waitFor(() => settled.length > 0, 'the old owner to try its ack');
      const rows = (await redis.xpending(stream, 'nest', '-', '+', 10)) as Row[];
      expect(rows.map(([rowId, consumer, , deliveries]) => [rowId, consumer, deliveries])).toEqual([[id, 'new-owner', 2]]);
      expect(settled).toEqual(['lease-lost']);
      if (ackMode === 'manual') expect(manualAcks).toEqual([false]);
      // The new owner finishes and acks: only then is the entry done.
      expect(await redis.xack(stream, 'nest', id!)).toBe(1);
    },
  );
});
