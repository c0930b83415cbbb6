import type { Redis } from 'ioredis';
import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import { pairsToObject } from './replies.js';

/**
 * Producer id of XADD … IDMP for every producer of this library (clients and outbox relays).
 * One id on purpose: the event id is the consumers' idempotency key, the same event whoever sends
 * it, so the stream drops a copy from any of them, as the consumers' inbox would.
 */
export const IDMP_PRODUCER = 'nest-redis-streams';

/** Options of idempotent writes (XADD … IDMP, Redis 8.6+): the window of event ids a stream remembers. */
export interface IdempotentWritesOptions {
  /**
   * Producer id of the window (Redis keeps one window of event ids per producer and stream).
   * @default 'nest-redis-streams'
   */
  producer?: string;
  /**
   * How long a stream remembers an event id (`XCFGSET … IDMP-DURATION`, 1-86400 s): a relay or an
   * emit retried later than this writes a second entry (the consumers' inbox still absorbs it).
   * Setting a window empties it (Redis forgets the ids it held), so prefer the server-wide default
   * for new streams (`CONFIG SET stream-idmp-duration 600`; `doctor` shows it); when set here it is
   * applied to a stream whose window differs, before this producer's first write to it (once per
   * stream: later producers find it right and keep it), and to a stream created by that first write
   * right after it (that first id is then protected by the consumers' inbox alone).
   * @default undefined (the stream's window as it is; Redis' default is 100 s)
   */
  durationSeconds?: number;
  /**
   * How many event ids a stream remembers per producer (`IDMP-MAXSIZE`, 1-10000): more events than
   * this between a send and its retry push the first one out of the window. Applied as `durationSeconds`.
   * @default undefined (the stream's window as it is; Redis' default is 100, `stream-idmp-maxsize`)
   */
  maxSize?: number;
}

/** Defaults of `IdempotentWritesOptions`: the library's producer id, the streams' windows untouched. */
export const IDEMPOTENT_WRITES_DEFAULTS = { producer: IDMP_PRODUCER };

/** Resolved idempotent-writes options. */
export type ResolvedIdempotentWrites = IdempotentWritesOptions & { producer: string };

/** Messages of idempotent writes. */
export const IDMP_MESSAGES = {
  badOption: (field: string, value: unknown, range: string) =>
    `Option "idempotentWrites.${field}" must be ${range}, got ${JSON.stringify(value)} (Redis' XCFGSET limits). ` +
    'Set idempotentWrites: false to send plain XADDs.',
  settingsFailed: (stream: string, cause: string) =>
    `Could not set the IDMP window of stream "${stream}" (${cause}); its current window stays (Redis' default is ` +
    '100 s and 100 event ids). Grant XINFO STREAM and XCFGSET to the producer, or set idempotentWrites: false.',
} as const;

/** Checks the option once; null when idempotent writes are off. */
export function resolveIdempotentWrites(options: IdempotentWritesOptions | false | undefined): ResolvedIdempotentWrites | null {
  if (options === false) return null;
  const resolved: ResolvedIdempotentWrites = {
    ...IDEMPOTENT_WRITES_DEFAULTS,
    ...Object.fromEntries(Object.entries(options ?? {}).filter(([, v]) => v !== undefined)),
  };
  const { producer, durationSeconds, maxSize } = resolved;
  if (typeof producer !== 'string' || producer === '')
    throw new InvalidOptionsError(IDMP_MESSAGES.badOption('producer', producer, 'a non-empty string'));
  if (durationSeconds !== undefined && !(Number.isInteger(durationSeconds) && durationSeconds >= 1 && durationSeconds <= 86_400))
    throw new InvalidOptionsError(IDMP_MESSAGES.badOption('durationSeconds', durationSeconds, 'an integer from 1 to 86400'));
  if (maxSize !== undefined && !(Number.isInteger(maxSize) && maxSize >= 1 && maxSize <= 10_000))
    throw new InvalidOptionsError(IDMP_MESSAGES.badOption('maxSize', maxSize, 'an integer from 1 to 10000'));
  return resolved;
}

/**
 * Sets a stream's IDMP window when it differs from the wanted one. Only then: XCFGSET empties the
 * window, so setting it on every start would forget the ids sent just before a restart, the very
 * copies it is there to drop. 'missing' when the stream does not exist yet (XCFGSET needs it).
 */
export async function ensureIdmpSettings(
  redis: Redis,
  stream: string,
  wanted: Pick<IdempotentWritesOptions, 'durationSeconds' | 'maxSize'>,
): Promise<'kept' | 'changed' | 'missing'> {
  let info: Record<string, unknown>;
  try {
    info = pairsToObject((await redis.xinfo('STREAM', stream)) as unknown[]);
  } catch (err) {
    if (/no such key/i.test((err as Error).message)) return 'missing';
    throw err;
  }
  const args: Array<string | number> = [];
  const { durationSeconds, maxSize } = wanted;
  if (durationSeconds !== undefined && Number(info['idmp-duration']) !== durationSeconds)
    args.push('IDMP-DURATION', durationSeconds);
  if (maxSize !== undefined && Number(info['idmp-maxsize']) !== maxSize) args.push('IDMP-MAXSIZE', maxSize);
  if (args.length === 0) return 'kept';
  await redis.call('XCFGSET', stream, ...args);
  return 'changed';
}

/**
 * XADD … IDMP for one producer connection: the head of each entry, and each stream's window set
 * once before its first write (every write to that stream waits for it, so writes keep their order).
 */
export class IdmpWriter {
  private readonly streams = new Map<string, Promise<void> | true>();
  /** Streams that did not exist at their first write: their window is set once it exists. */
  private readonly missing = new Set<string>();

  constructor(
    private readonly redis: Redis,
    private readonly options: ResolvedIdempotentWrites,
    private readonly warn: (message: string) => void,
  ) {}

  /**
   * The XADD head with `IDMP <producer> <eventId>` in front of the trim arguments and the id: a
   * second XADD of the event id within the window stores nothing and answers the first entry's id
   * (and does not trim). Explicit event ids only: a random one would only push real ones out of
   * the window, which has a size limit.
   */
  head(eventId: string | undefined, head: ReadonlyArray<string | number>): ReadonlyArray<string | number> {
    return eventId ? ['IDMP', this.options.producer, eventId, ...head] : head;
  }

  /** What a write to `stream` waits for first (its window being set); null once it is. */
  ready(stream: string): Promise<void> | null {
    if (this.options.durationSeconds === undefined && this.options.maxSize === undefined) return null;
    const state = this.streams.get(stream);
    if (state === true) return null;
    if (state) return state;
    const setting = this.apply(stream).finally(() => this.streams.set(stream, true));
    this.streams.set(stream, setting);
    return setting;
  }

  /**
   * After a write: a stream created by it gets its window now. That empties the window of the one
   * id just written, which then is protected by the consumers' inbox alone (once per new stream).
   */
  written(stream: string): void {
    if (!this.missing.delete(stream)) return;
    void this.apply(stream);
  }

  private async apply(stream: string): Promise<void> {
    try {
      if ((await ensureIdmpSettings(this.redis, stream, this.options)) === 'missing') this.missing.add(stream);
    } catch (err) {
      this.warn(IDMP_MESSAGES.settingsFailed(stream, (err as Error).message));
    }
  }
}
