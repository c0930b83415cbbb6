// Writes entries at a fixed rate for the latency rows, in its own process so that neither the
// consumer nor the parent shares its event loop. Each entry carries the moment its XADD was sent.
import { Redis } from 'ioredis';
import { JsonCodec, encodeEnvelope } from 'nest-redis-streams';
import { envNumber, preciseNow } from './probe.js';

const env = process.env;
const stream = env.STREAM!;
const rate = envNumber('RATE');
const total = envNumber('TOTAL');
const codec = new JsonCodec();

async function main(): Promise<void> {
  const redis = new Redis(env.REDIS_URL!);
  await redis.ping();
  process.on('disconnect', () => process.exit(0));
  process.send?.({ type: 'ready' });
  const start = performance.now();
  let sent = 0;
  // Timers fire about every millisecond: each tick sends what the schedule owes by now (~5
  // entries at 5,000/s), each stamped just before its own XADD.
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) * rate) / 1_000));
    for (; sent < due; sent++) {
      redis.xadd(stream, '*', ...encodeEnvelope({ data: { i: sent, t: preciseNow() } }, codec)).catch(fail);
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await redis.quit();
  // Exit once the report is out: the disconnect listener keeps the IPC channel (and so this
  // process and the parent) alive otherwise.
  process.send?.({ type: 'done', sent, seconds: (performance.now() - start) / 1_000 }, () => process.exit(0));
}

function fail(err: unknown): void {
  console.error(err);
  process.exit(1);
}

main().catch(fail);
