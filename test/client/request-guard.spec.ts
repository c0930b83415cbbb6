// Requests a server must not run: one whose caller already gave up (deadline passed), and one
// that names a reply stream outside the client reply prefix.
import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { firstValueFrom } from 'rxjs';
import { ENVELOPE, RequestTimeoutError, type TransportEventMap } from 'nest-redis-streams';
import { pendingCount, startMicroservice, unique, waitFor } from '../support/helpers.js';
import { clientContext } from './client-fixture.js';

type Skipped = TransportEventMap['skipped'][0];

describe('request guard', () => {
  const { redis, closers, client } = clientContext();

  /** A @MessagePattern handler that counts its calls and doubles its input. */
  async function startDoubler(stream: string) {
    const calls: unknown[] = [];
    @Controller()
    class Payments {
      @MessagePattern(stream)
      charge(@Payload() data: { n: number }) {
        calls.push(data);
        return data.n * 2;
      }
    }
    const started = await startMicroservice([Payments], {});
    closers.push(() => started.app.close());
    const skipped: Skipped[] = [];
    started.server.events.on('skipped', (e) => skipped.push(e));
    return { ...started, calls, skipped };
  }

  it('does not run a request whose send() timed out while the service was down', async () => {
    const stream = unique('expired');
    // The service's group exists (it ran before) but no server reads it now.
    await redis.xgroup('CREATE', stream, 'nest', '$', 'MKSTREAM');
    // Long enough for a busy machine to write the request before it times out (one that times
    // out before its write is never written: with 300 ms the stream stayed empty at load 15).
    const caller = client({ requestTimeoutMs: 2_000 });
    await expect(firstValueFrom(caller.send(stream, { n: 1 }))).rejects.toBeInstanceOf(RequestTimeoutError);
    const [[, fields]] = await redis.xrange(stream, '-', '+');
    const deadline = Number(fields[fields.indexOf(ENVELOPE.deadline) + 1]);
    expect(deadline).toBeLessThanOrEqual(Date.now());

    const service = await startDoubler(stream);
    await waitFor(() => service.skipped.length === 1, 'the expired request to be skipped');
    expect(service.skipped[0]).toMatchObject({ reason: 'request-expired', stream });
    expect(service.skipped[0].detail).toMatch(/ms after its deadline/);
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'the expired request acked');
    // A request within its deadline is answered as always.
    expect(await firstValueFrom(caller.send(stream, { n: 21 }))).toBe(42);
    expect(service.calls).toEqual([{ n: 21 }]);
  });

  it('skips a request whose deadline is past what a Date holds, naming it, and runs the next one', async () => {
    const stream = unique('far-deadline');
    const service = await startDoubler(stream);
    const request = (eventId: string, deadline: string) =>
      redis.xadd(stream, '*', 'v', 'nrs/1', 'event_id', eventId, 'data', '{"n":1}', ENVELOPE.deadline, deadline);
    await request('e1', '-100000000000000000');
    await waitFor(() => service.skipped.length === 1, 'the request to be skipped');
    expect(service.skipped[0]).toMatchObject({ reason: 'request-expired', stream });
    expect(service.skipped[0].detail).toContain('(-100000000000000000 ms since the epoch)');
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'the skipped request acked');
    await request('e2', String(Date.now() + 60_000));
    await waitFor(() => service.calls.length === 1, 'the next request to run');
  });

  it('refuses a request whose reply_to lies outside the reply prefix, and writes nothing there', async () => {
    const stream = unique('reply-to');
    const victim = unique('victim-stream');
    await redis.xadd(victim, '*', 'precious', '1');
    const service = await startDoubler(stream);
    await redis.xadd(stream, '*', 'v', 'nrs/1', 'event_id', 'e1', 'data', '{"n":1}', 'reply_to', victim, 'correlation_id', 'c1');
    await waitFor(() => service.skipped.length === 1, 'the request to be refused');
    expect(service.skipped[0]).toMatchObject({ reason: 'reply-to-refused', stream });
    expect(service.skipped[0].detail).toContain(victim);
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'the refused request acked');
    expect(service.calls).toEqual([]);
    expect(await redis.xlen(victim)).toBe(1);
    // A victim that does not exist stays absent.
    const absent = unique('victim-absent');
    await redis.xadd(stream, '*', 'v', 'nrs/1', 'event_id', 'e2', 'data', '{"n":2}', 'reply_to', absent, 'correlation_id', 'c2');
    await waitFor(() => service.skipped.length === 2, 'the second request to be refused');
    expect(await redis.exists(absent)).toBe(0);
    expect(service.calls).toEqual([]);
  });
});
