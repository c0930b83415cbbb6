// The dead-letter scripts run directly against a real Redis: park (owned, not owned, missing,
// trimmed while held) and re-drive (bytes, escaping, target group, retry, tombstone).
import { ENVELOPE, DeadLetterReason } from 'nest-redis-streams';
import { deadLetterMetadata, escapedOriginalFields } from '../../libs/nest-redis-streams/src/dead-letter/dead-letter-record.js';
import { REDRIVE_DEAD_LETTER } from '../../libs/nest-redis-streams/src/dead-letter/redrive-dead-letter.js';
import { withStreamScripts } from '../../libs/nest-redis-streams/src/redis/scripts.js';
import { redisClient, unique } from '../support/helpers.js';

// Not UTF-8: a lone continuation byte, 0xff, 0xfe and a NUL (what a Protobuf varint looks like).
const BINARY = Buffer.from([0x08, 0x96, 0x01, 0xff, 0xfe, 0x00, 0x41]);
const hex = (fields: Buffer[]) => fields.map((f) => f.toString('hex'));

describe('dead-letter scripts', () => {
  const redis = withStreamScripts(redisClient());
  afterAll(() => redis.quit());

  /** A stream with one entry read (pending) by consumer `c1` of group `g`. */
  async function pendingEntry(fields: Array<string | Buffer>) {
    const stream = unique('dls');
    const dlq = `${stream}:dlq`;
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const id = (await redis.xadd(stream, '*', ...fields)) as string;
    await redis.xreadgroup('GROUP', 'g', 'c1', 'COUNT', 10, 'STREAMS', stream, '>');
    return { stream, dlq, id };
  }

  const metadata = (stream: string, id: string) =>
    deadLetterMetadata({ reason: DeadLetterReason.MAX_DELIVERIES, stream, id, group: 'g', consumer: 'c1', deliveries: 5 });

  /** Calls the park script with what a consumer holds: the fields decoded as UTF-8. */
  async function park(
    stream: string,
    dlq: string,
    id: string,
    held: string[] | null,
    consumer = 'c1',
    requireOwner: '1' | '0' = '1',
  ) {
    const meta = metadata(stream, id);
    return redis.nrsDeadLetterIfOwned(
      stream,
      dlq,
      'g',
      consumer,
      id,
      requireOwner,
      String(meta.length),
      ...meta,
      ...escapedOriginalFields(held),
    );
  }

  /** The original part of a dead letter, as bytes (metadata dropped). */
  async function parkedOriginal(dlq: string): Promise<Buffer[]> {
    const [[, fields]] = await redis.xrangeBuffer(dlq, '-', '+');
    return fields.slice(
      deadLetterMetadata({ reason: DeadLetterReason.MAX_DELIVERIES, stream: '', id: '', group: '', consumer: '', deliveries: 0 })
        .length,
    );
  }

  it('copies every byte of every field from the stream, names and values, and acks the entry', async () => {
    const { stream, dlq, id } = await pendingEntry([BINARY, BINARY, 'dlq:reason', 'mine', 'orig:x', 'y', 'n', '1']);
    const held = (await redis.xrange(stream, id, id))[0][1]; // what the consumer has: U+FFFD for the bytes
    expect(held[0]).not.toEqual(BINARY.toString('latin1'));
    const deadLetterId = await park(stream, dlq, id, held);
    expect(deadLetterId).toEqual(expect.any(String));
    expect(hex(await parkedOriginal(dlq))).toEqual(
      hex([
        BINARY,
        BINARY,
        Buffer.from('orig:dlq:reason'),
        Buffer.from('mine'),
        Buffer.from('orig:orig:x'),
        Buffer.from('y'),
        Buffer.from('n'),
        Buffer.from('1'),
      ]),
    );
    expect(((await redis.xpending(stream, 'g')) as [number])[0]).toBe(0);
  });

  it('writes nothing and acks nothing for an entry another consumer owns, or one no longer pending', async () => {
    const { stream, dlq, id } = await pendingEntry(['n', '1']);
    expect(await park(stream, dlq, id, ['n', '1'], 'someone-else')).toBeNull();
    await redis.xack(stream, 'g', id);
    expect(await park(stream, dlq, id, ['n', '1'])).toBeNull();
    expect(await redis.exists(dlq)).toBe(0);
  });

  it('falls back to the fields held in memory when the entry was trimmed away while held', async () => {
    const { stream, dlq, id } = await pendingEntry(['amount', '5', 'dlq:x', 'z']);
    await redis.xtrim(stream, 'MAXLEN', 0);
    // Redis keeps the PEL row of a trimmed entry, so the owned check still passes.
    expect(await park(stream, dlq, id, ['amount', '5', 'dlq:x', 'z'])).toEqual(expect.any(String));
    expect((await parkedOriginal(dlq)).map(String)).toEqual(['amount', '5', 'orig:dlq:x', 'z']);
  });

  it('parks a tombstone (no payload at all) without requiring ownership', async () => {
    const { stream, dlq, id } = await pendingEntry(['n', '1']);
    await redis.xtrim(stream, 'MAXLEN', 0);
    expect(await park(stream, dlq, id, null, 'not-the-owner', '0')).toEqual(expect.any(String));
    expect(await parkedOriginal(dlq)).toEqual([]);
  });

  it('keeps an entry of 1,000 fields whole', async () => {
    const fields = Array.from({ length: 2000 }, (_, i) => (i % 2 === 0 ? `f${i}` : Buffer.from([0xff, i % 256])));
    const { stream, dlq, id } = await pendingEntry(fields);
    await park(stream, dlq, id, null);
    expect(hex(await parkedOriginal(dlq))).toEqual(hex(fields.map((f) => Buffer.from(f))));
  });

  describe('re-drive', () => {
    const redrive = (dlq: string, stream: string, id: string, group: string) =>
      redis.eval(
        REDRIVE_DEAD_LETTER,
        2,
        dlq,
        stream,
        id,
        group,
        ENVELOPE.targetGroup,
        ENVELOPE.redrivenFrom,
        ENVELOPE.originalId,
      );

    it('re-adds the exact bytes with the target group, un-escaped, and deletes the dead letter once', async () => {
      const { stream, dlq, id } = await pendingEntry([
        BINARY,
        BINARY,
        'dlq:reason',
        'mine',
        'orig:x',
        'y',
        ENVELOPE.targetGroup,
        'old',
      ]);
      await park(stream, dlq, id, null);
      const [[deadLetterId]] = await redis.xrange(dlq, '-', '+');
      const newId = (await redrive(dlq, stream, deadLetterId, 'g')) as string;
      const [[, fields]] = await redis.xrangeBuffer(stream, newId, newId);
      expect(hex(fields)).toEqual(
        hex([
          BINARY,
          BINARY,
          Buffer.from('dlq:reason'),
          Buffer.from('mine'),
          Buffer.from('orig:x'),
          Buffer.from('y'),
          Buffer.from(ENVELOPE.targetGroup),
          Buffer.from('g'),
          Buffer.from(ENVELOPE.redrivenFrom),
          Buffer.from(deadLetterId),
          Buffer.from(ENVELOPE.originalId),
          Buffer.from(id),
        ]),
      );
      expect(await redis.xlen(dlq)).toBe(0);
      expect(await redrive(dlq, stream, deadLetterId, 'g')).toBeNull(); // a retried call adds nothing
      expect(await redis.xlen(stream)).toBe(2);
    });

    it('re-drives to every group without a target, and leaves a tombstone in place', async () => {
      const { stream, dlq, id } = await pendingEntry(['n', '1']);
      await park(stream, dlq, id, null);
      const [[letter]] = await redis.xrange(dlq, '-', '+');
      const newId = (await redrive(dlq, stream, letter, '')) as string;
      expect((await redis.xrange(stream, newId, newId))[0][1]).toEqual([
        'n',
        '1',
        ENVELOPE.redrivenFrom,
        letter,
        ENVELOPE.originalId,
        id,
      ]);

      const tomb = await pendingEntry(['n', '2']);
      await redis.xtrim(tomb.stream, 'MAXLEN', 0);
      await park(tomb.stream, tomb.dlq, tomb.id, null, 'c1', '0');
      const [[tombstone]] = await redis.xrange(tomb.dlq, '-', '+');
      expect(await redrive(tomb.dlq, tomb.stream, tombstone, 'g')).toBe(0);
      expect(await redis.xlen(tomb.dlq)).toBe(1);
      expect(await redis.xlen(tomb.stream)).toBe(0);
    });
  });
});
