import { InvalidOptionsError } from '../../errors/invalid-options.error.js';
import type { DeadLetterService } from '../../dead-letter/dead-letter.service.js';
import type { SqlDatabase } from '../sql-database.interface.js';

/** Where the events that should have had an effect come from. */
export type ReconcileSource =
  /** Outbox rows of a stream added in the window. */
  | { outboxStream: string }
  /** Your own query; `$1` and `$2` are the window's start and end; it returns `event_id` rows. */
  | { query: string };

/** Where the effects are. */
export type ReconcileTarget =
  /** Inbox rows of a group and handler (any stream, or one: a partitioned stream's rows are under its logical name). */
  | { group: string; handler: string; stream?: string }
  /** Your own query over the effect table; `$1` is the array of event ids; one `event_id` row per effect. */
  | { query: string; group?: string };

/** Options of `reconcile`. */
export interface ReconcileOptions {
  source: ReconcileSource;
  target: ReconcileTarget;
  /** Window of the source's events: from (inclusive) to (exclusive). */
  from: Date;
  to: Date;
  /**
   * Dead-letter streams to read, so parked events count as dead-lettered rather than missing. A
   * partitioned stream's consumers park entries in each partition's own dead-letter stream: pass
   * them all, `deadLetterStreamsOf('orders', 8)`.
   */
  deadLetters?: { service: Pick<DeadLetterService, 'list'>; stream: string | readonly string[] };
}

/** What `reconcile` found. */
export interface ReconcileReport {
  /** Event ids in the source window. */
  expected: number;
  /** Of those, with exactly one effect. */
  appliedOnce: number;
  /** No effect and not dead-lettered: lost, or still on its way. */
  missing: string[];
  /** More than one effect. */
  duplicated: Array<{ eventId: string; effects: number }>;
  /** No effect, parked in the dead-letter stream (for the target's group). */
  deadLettered: string[];
}

/**
 * Compares the events a source says happened with the effects a target holds, by event id —
 * the check the notes ask for beyond "pending is 0": an ack before commit empties the PEL and
 * still loses the effect.
 */
export async function reconcile<Tx>(db: SqlDatabase<Tx>, options: ReconcileOptions): Promise<ReconcileReport> {
  if (!(options.from instanceof Date) || !(options.to instanceof Date) || !(options.from < options.to)) {
    throw new InvalidOptionsError(
      `Reconcile window from ${String(options.from)} to ${String(options.to)} is not two Dates with from < to.`,
    );
  }
  const { source, target } = options;
  return db.transaction(async (tx) => {
    const sql = db.executor(tx);
    const sourceRows =
      'outboxStream' in source
        ? await sql.query<{ event_id: string }>(
            'SELECT event_id FROM nrs_outbox WHERE stream = $1 AND created_at >= $2 AND created_at < $3',
            [source.outboxStream, options.from, options.to],
          )
        : await sql.query<{ event_id: string }>(source.query, [options.from, options.to]);
    const expected = [...new Set(sourceRows.map((r) => r.event_id))];
    const effectRows =
      'handler' in target
        ? await sql.query<{ event_id: string }>(
            `SELECT event_id FROM nrs_inbox WHERE group_name = $1 AND handler = $2 AND event_id = ANY($3::text[])${target.stream ? ' AND stream = $4' : ''}`,
            [target.group, target.handler, expected, ...(target.stream ? [target.stream] : [])],
          )
        : await sql.query<{ event_id: string }>(target.query, [expected]);
    const effects = new Map<string, number>();
    for (const { event_id } of effectRows) effects.set(event_id, (effects.get(event_id) ?? 0) + 1);
    const parked = options.deadLetters ? await deadLetteredIds(options.deadLetters, target.group) : new Set<string>();
    const missing = expected.filter((id) => !effects.has(id) && !parked.has(id));
    return {
      expected: expected.length,
      appliedOnce: expected.filter((id) => effects.get(id) === 1).length,
      missing,
      duplicated: [...effects].filter(([, n]) => n > 1).map(([eventId, n]) => ({ eventId, effects: n })),
      deadLettered: expected.filter((id) => !effects.has(id) && parked.has(id)),
    };
  });
}

async function deadLetteredIds(
  source: NonNullable<ReconcileOptions['deadLetters']>,
  group: string | undefined,
): Promise<Set<string>> {
  const ids = new Set<string>();
  for (const stream of typeof source.stream === 'string' ? [source.stream] : source.stream) {
    let after: string | null | undefined;
    do {
      const page = await source.service.list(stream, { after: after ?? undefined, count: 500 });
      for (const letter of page.items) {
        const eventId = letter.fields.event_id;
        if (eventId && (group === undefined || letter.group === group)) ids.add(eventId);
      }
      after = page.next;
    } while (after);
  }
  return ids;
}
