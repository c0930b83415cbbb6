import type { Redis } from 'ioredis';
import { LeanScript } from '../redis/lean-script.js';
import { endBefore } from '../keys/index.js';

/**
 * How far an audited write got. `done`: it ran, `ok` and `result` say how it went. `started`: its
 * intent was recorded and no outcome yet (still running, or its process stopped or could not
 * record the outcome: look at the stream before repeating it). `refused`: refused before it
 * changed anything (kept in the refusal stream, apart from the writes).
 */
export type AuditState = 'done' | 'started' | 'refused';

/** One write made through the console or the CLI. */
export interface AuditRecord {
  /** Id in its audit stream (its time is when it was recorded). */
  id: string;
  /** When the action finished, or was refused or started (ms since epoch). */
  at: number;
  /** When it started (ms since epoch); `at` for a refusal. */
  startedAt: number;
  state: AuditState;
  /** Who: the console's `identify(request)`, or `cli:<user>@<host>`. */
  actor: string;
  /** What: `ack`, `claim`, `park`, `dlq.redrive`, `dlq.discard`, `setid`, `consumer.delete`... */
  action: string;
  stream: string;
  group: string;
  /** The entry, dead letter or consumer acted on; '' for bulk actions. */
  target: string;
  /** The action's parameters (JSON). */
  params: string;
  /** False for a failure, a refusal, and a write whose outcome is not recorded. */
  ok: boolean;
  /** The outcome (JSON) or the error message; '' while `started`. */
  result: string;
}

/** What a caller says about a write before it runs. */
export type AuditIntent = Pick<AuditRecord, 'actor' | 'action' | 'stream' | 'group' | 'target' | 'params'>;

/** Where and how long audit records are kept. */
export interface AuditLogOptions {
  /** Stream of the writes (intents and outcomes). */
  stream: string;
  /** The writes' stream keeps about this many records (`MAXLEN ~`, trimmed only by outcomes). */
  maxLen: number;
  /** Stream of the refused requests, capped on its own so that refusals never push out a write. */
  refusalStream: string;
  refusalMaxLen: number;
}

// Replaces an intent with its outcome: XADD first, so that when Redis refuses it (maxmemory) the
// script fails before it changed anything and the intent stays; then the intent goes, then the
// trim (an intent never trims, so in-flight or refused requests cannot push out a write).
// KEYS[1] audit stream; ARGV[1] intent id, ARGV[2] max length, ARGV[3..] fields → the outcome's id.
const RECORD_OUTCOME = new LeanScript<string>(
  `local id = redis.call('XADD', KEYS[1], '*', unpack(ARGV, 3))
redis.call('XDEL', KEYS[1], ARGV[1])
redis.call('XTRIM', KEYS[1], 'MAXLEN', '~', ARGV[2])
return id`,
  1,
);

const intentFields = (intent: AuditIntent, startedAt: number) => [
  ...['startedAt', String(startedAt), 'actor', intent.actor, 'action', intent.action, 'stream', intent.stream],
  ...['group', intent.group, 'target', intent.target, 'params', intent.params],
];

/**
 * An append-only record of operator writes in Redis streams, so that every instance of the app
 * and the CLI write to the same place. A write is recorded before it runs (its intent) and the
 * intent is replaced by its outcome once it ran: a write whose intent Redis refuses does not run.
 * Refusals (nothing changed) go to a stream of their own with its own cap. Reading is XREVRANGE.
 */
export class AuditLog {
  readonly stream: string;
  readonly refusalStream: string;

  constructor(
    private readonly redis: Redis,
    private readonly options: AuditLogOptions,
  ) {
    this.stream = options.stream;
    this.refusalStream = options.refusalStream;
  }

  /** Records that `intent` is about to run; resolves with the record's id (Redis errors propagate). */
  async begin(intent: AuditIntent): Promise<{ id: string; startedAt: number }> {
    const startedAt = Date.now();
    const fields = [...intentFields(intent, startedAt), 'state', 'started'];
    return { id: (await this.redis.xadd(this.stream, '*', ...fields)) as string, startedAt };
  }

  /** Replaces the intent `begun` with the outcome, in one script. */
  finish(begun: { id: string; startedAt: number }, intent: AuditIntent, ok: boolean, result: string): Promise<string> {
    const fields = [...intentFields(intent, begun.startedAt), 'at', String(Date.now()), 'state', 'done'];
    fields.push('ok', ok ? '1' : '0', 'result', result);
    return RECORD_OUTCOME.run(this.redis, [this.stream, begun.id, this.options.maxLen, ...fields]);
  }

  /**
   * Records a refused request in the refusal stream and, when its intent was recorded, removes that
   * intent (it changed nothing). Should the removal fail, the intent stays as `started`.
   */
  async refuse(intent: AuditIntent, message: string, begun?: { id: string; startedAt: number }): Promise<string> {
    const at = String(Date.now());
    const fields = [...intentFields(intent, begun?.startedAt ?? Number(at)), 'at', at, 'state', 'refused'];
    fields.push('ok', '0', 'result', message);
    const id = (await this.redis.xadd(this.refusalStream, 'MAXLEN', '~', this.options.refusalMaxLen, '*', ...fields)) as string;
    if (begun) await this.redis.xdel(this.stream, begun.id);
    return id;
  }

  /**
   * The newest records first (of the writes, or with `refusals` of the refused requests); `before`
   * is the id of the last record of the previous page.
   */
  async list(options: {
    count: number;
    before?: string;
    refusals?: boolean;
  }): Promise<{ items: AuditRecord[]; next: string | null }> {
    const end = options.before ? endBefore(options.before) : '+';
    if (end === null) return { items: [], next: null };
    const stream = options.refusals ? this.refusalStream : this.stream;
    const entries = await this.redis.xrevrange(stream, end, '-', 'COUNT', options.count);
    const items = entries.map(([id, flat]) => {
      const f = new Map<string, string>();
      for (let i = 0; i + 1 < flat.length; i += 2) f.set(flat[i], flat[i + 1]);
      // Records written before intents existed have neither state nor startedAt: they are outcomes.
      const at = Number(f.get('at') ?? f.get('startedAt') ?? 0);
      const state = (f.get('state') ?? 'done') as AuditState;
      return {
        id,
        at,
        startedAt: Number(f.get('startedAt') ?? at),
        state,
        actor: f.get('actor') ?? '',
        action: f.get('action') ?? '',
        stream: f.get('stream') ?? '',
        group: f.get('group') ?? '',
        target: f.get('target') ?? '',
        params: f.get('params') ?? '',
        ok: state === 'done' && f.get('ok') === '1',
        result: f.get('result') ?? '',
      };
    });
    return { items, next: items.length === options.count ? items[items.length - 1].id : null };
  }
}
