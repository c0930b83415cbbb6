import type { Redis } from 'ioredis';

/** One write made through the console or the CLI. */
export interface AuditRecord {
  /** Id in the audit stream (its time is when it was recorded). */
  id: string;
  /** When the action finished (ms since epoch). */
  at: number;
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
  ok: boolean;
  /** The outcome (JSON) or the error message. */
  result: string;
}

/** What a caller says about a write. */
export type AuditInput = Omit<AuditRecord, 'id' | 'at'>;

/**
 * An append-only record of operator writes in a Redis stream (capped with `MAXLEN ~`), so that
 * every instance of the app and the CLI write to the same place. Reading it is XREVRANGE.
 */
export class AuditLog {
  constructor(
    private readonly redis: Redis,
    readonly stream: string,
    private readonly maxLen: number,
  ) {}

  async record(input: AuditInput): Promise<string> {
    const fields = ['at', String(Date.now()), 'actor', input.actor, 'action', input.action, 'stream', input.stream];
    fields.push('group', input.group, 'target', input.target, 'params', input.params, 'ok', input.ok ? '1' : '0');
    fields.push('result', input.result);
    return (await this.redis.xadd(this.stream, 'MAXLEN', '~', this.maxLen, '*', ...fields)) as string;
  }

  /** The newest records first; `before` is the id of the last record of the previous page. */
  async list(options: { count: number; before?: string }): Promise<{ items: AuditRecord[]; next: string | null }> {
    const end = options.before ? `(${options.before}` : '+';
    const entries = await this.redis.xrevrange(this.stream, end, '-', 'COUNT', options.count);
    const items = entries.map(([id, flat]) => {
      const f = new Map<string, string>();
      for (let i = 0; i + 1 < flat.length; i += 2) f.set(flat[i], flat[i + 1]);
      return {
        id,
        at: Number(f.get('at') ?? 0),
        actor: f.get('actor') ?? '',
        action: f.get('action') ?? '',
        stream: f.get('stream') ?? '',
        group: f.get('group') ?? '',
        target: f.get('target') ?? '',
        params: f.get('params') ?? '',
        ok: f.get('ok') === '1',
        result: f.get('result') ?? '',
      };
    });
    return { items, next: items.length === options.count ? items[items.length - 1].id : null };
  }
}
