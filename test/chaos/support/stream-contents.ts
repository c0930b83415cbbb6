import type { Redis } from 'ioredis';

/** Ledger keys (event ids) of the entries a stream holds now, by entry id. */
export async function eventIdsInStream(data: Redis, stream: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let start = '-';
  for (;;) {
    const page = await data.xrange(stream, start, '+', 'COUNT', 1_000);
    for (const [id, fields] of page) {
      const at = fields.findIndex((f, i) => i % 2 === 0 && f === 'event_id');
      out.set(id, at >= 0 ? fields[at + 1] : `entry:${id}`);
    }
    if (page.length < 1_000) return out;
    start = `(${page[page.length - 1][0]}`;
  }
}

/** The group's last-delivered-id (XINFO GROUPS). */
export async function lastDeliveredId(data: Redis, stream: string, group: string): Promise<string> {
  const rows = (await data.xinfo('GROUPS', stream)) as unknown[][];
  const row = rows.find((r) => r[1] === group)!;
  return String(row[row.indexOf('last-delivered-id') + 1]);
}

/** Orders stream ids (`ms-seq`). */
export function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(BigInt);
  const [bm, bs] = b.split('-').map(BigInt);
  return am === bm ? Number(as - bs) : am < bm ? -1 : 1;
}
