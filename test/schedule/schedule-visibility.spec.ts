import { Controller } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { Registry } from 'prom-client';
import { OperationError, RedisStreamsMetrics, StreamOperations } from 'nest-redis-streams';
import { clientContext } from '../client/client-fixture.js';
import { runCli } from '../cli/run-cli.js';
import { startMicroservice, unique } from '../support/helpers.js';
import { scheduleEntry } from '../../libs/nest-redis-streams/src/schedule/index.js';

/** A stream with a consumer group (what the operations layer serves) and two scheduled entries: one overdue, one ahead. */
async function scheduledStream(redis: import('ioredis').Redis, client: ReturnType<ReturnType<typeof clientContext>['client']>) {
  const stream = unique('sched-ops');
  await redis.xgroup('CREATE', stream, 'nest', '$', 'MKSTREAM');
  const ahead = await lastValueFrom(client.emit(stream, { n: 'ahead' }, { delayMs: 60_000 }));
  // Overdue as if no mover ran: written straight into the schedule, due 5 s ago.
  await scheduleEntry(
    redis,
    stream,
    'overdue-1',
    Date.now() - 5_000,
    '',
    ['*'],
    ['v', 'nrs/1', 'event_id', 'overdue-1', 'data', '{}'],
  );
  return { stream, ahead };
}

// Waits are bounded by the conditions they wait for; a busy machine needs more than Jest's 5 s.
jest.setTimeout(30_000);

describe('Schedule visibility and cancelling', () => {
  const { redis, closers, client } = clientContext();

  it('the operations layer shows count, next due and oldest overdue, and cancels by event id under the audit', async () => {
    const { stream, ahead } = await scheduledStream(redis, client());
    const ops = new StreamOperations(redis);

    const summary = await ops.scheduled(stream);

    expect(summary.count).toBe(2);
    expect(summary.oldestOverdueMs).toBeGreaterThanOrEqual(5_000);
    expect(summary.nextDueAt).toBeLessThan(Date.now());
    expect(summary.entries.map((e) => e.eventId)).toEqual(['overdue-1', ahead]);
    expect(await ops.cancelScheduled('tester', stream, ahead)).toEqual({ cancelled: ahead });
    const refused = await ops.cancelScheduled('tester', stream, ahead).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(OperationError);
    expect((refused as Error).message).toMatch(/has no scheduled entry with event id or member .* already moved into the stream/);
    const audit = await ops.auditTrail(5);
    expect(audit.items.find((r) => r.action === 'schedule.cancel' && r.target === ahead)).toMatchObject({
      actor: 'tester',
      ok: true,
    });
    expect((await ops.scheduled(stream)).count).toBe(1);
  });

  it('the CLI lists the schedule (table and --json) and cancels, exit 3 when the id is not scheduled', async () => {
    const { stream, ahead } = await scheduledStream(redis, client());

    const json = await runCli(['scheduled', stream, '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ stream, count: 2, entries: [{ eventId: 'overdue-1' }, { eventId: ahead }] });
    const table = await runCli(['scheduled', stream]);
    expect(table.stdout).toMatch(/overdue-1 .* overdue \d+ ms/);
    expect(table.stdout).toMatch(/scheduled 2; next due \S+; oldest overdue \d+ ms/);
    const cancelled = await runCli(['scheduled', 'cancel', stream, ahead]);
    expect([cancelled.code, cancelled.stdout.trim()]).toEqual([0, `cancelled ${ahead}`]);
    const again = await runCli(['scheduled', 'cancel', stream, ahead]);
    expect(again.code).toBe(3);
    expect(again.stderr).toMatch(/has no scheduled entry with event id or member/);
    const bad = await runCli(['scheduled', stream, '--count', 'many']);
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringMatching(/--count must be a whole number >= 1, got "many"/)]);
  });

  it('metrics show scheduled entries and how long the oldest is overdue', async () => {
    const stream = unique('sched-metrics');
    @Controller()
    class Quiet {
      @EventPattern(stream)
      handle() {}
    }
    // The mover is off, so the overdue entry stays overdue.
    const { app, server } = await startMicroservice([Quiet], { scheduleCheckMs: 0 });
    closers.push(() => app.close());
    await scheduleEntry(redis, stream, 'late', Date.now() - 3_000, '', ['*'], ['v', 'nrs/1', 'event_id', 'late', 'data', '{}']);
    const registry = new Registry();
    const metrics = new RedisStreamsMetrics().attach(server, { registry, sampleIntervalMs: 0 });
    closers.push(async () => metrics.detach(server));

    await metrics.sampleNow();

    const valueOf = async (name: string) =>
      (await registry.getSingleMetric(name)!.get()).values.find((v) => v.labels.stream === stream)?.value;
    expect(await valueOf('redis_streams_scheduled_entries')).toBe(1);
    expect(await valueOf('redis_streams_scheduled_oldest_overdue_seconds')).toBeGreaterThanOrEqual(3);
    expect(await redis.xlen(stream)).toBe(0);
  });
});
