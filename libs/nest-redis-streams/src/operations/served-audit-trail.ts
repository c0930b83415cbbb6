import type { AuditLog, AuditRecord } from './audit-log.js';

/** Records read per page: enough for a page of the console in one read when most records are kept. */
const PAGE = 500;

/**
 * The newest audit records first, keeping only those `keep` accepts (the records about the
 * streams this service serves: two apps' consoles may share one audit stream, and neither shows the
 * other's writes). Reads pages until `count` are kept or `scanLimit` records were read; then `next`
 * says where to go on. `signal` (the request ended) stops it between pages.
 */
export async function readServedAuditTrail(
  audit: AuditLog,
  keep: (record: AuditRecord) => boolean,
  options: { count: number; before?: string; refusals: boolean; scanLimit: number; signal?: AbortSignal },
): Promise<{ items: AuditRecord[]; next: string | null }> {
  const items: AuditRecord[] = [];
  let before = options.before;
  let scanned = 0;
  while (scanned < options.scanLimit) {
    options.signal?.throwIfAborted();
    const count = Math.min(PAGE, options.scanLimit - scanned, Math.max(options.count - items.length, 100));
    const page = await audit.list({ count, before, refusals: options.refusals });
    for (const record of page.items) {
      scanned += 1;
      before = record.id;
      if (!keep(record)) continue;
      items.push(record);
      if (items.length === options.count) return { items, next: record.id };
    }
    if (page.next === null) return { items, next: null };
  }
  return { items, next: before ?? null };
}
