// Ledger keys of the ownership chaos specs, shared by ownership-consumer.worker.ts and the specs.

export const ownershipLedger = (run: string) => ({
  /** One list of `start|…`, `end|…`, `aborted|…` and `mark|…` records in the ledger's total order. */
  log: `${run}:own:log`,
  /** The relayer's plain nonce counter. */
  counter: `${run}:own:nonce`,
  /** entry → the nonce it was given. */
  byEntry: `${run}:own:nonce-by-entry`,
  /** `nonce|entry` in the order nonces were issued. */
  issued: `${run}:own:issued`,
  /** `<consumer>:<event>` → count (assigned, revoked-lost, writes-refused, acked...). */
  stats: `${run}:own:stats`,
  /** `key:seq` of the entries whose runs fail (BLOCK_KEY=1) until the spec removes them. */
  poison: `${run}:own:poison`,
});

/** One record of the run log: `kind|consumer|key|seq|stream`. */
export interface RunRecord {
  kind: string;
  consumer: string;
  key: string;
  seq: number;
  stream: string;
}

export function parseRecord(line: string): RunRecord {
  const [kind, consumer, key, seq, stream] = line.split('|');
  return { kind, consumer, key, seq: Number(seq), stream };
}

/**
 * Checks a run log: no key runs on two consumers at once (a run is open from its `start` until its
 * `end`/`aborted`, or until a `mark|dead|<consumer>` record for a killed process), and each key's
 * completed sequence numbers never go backwards. Returns the problems found.
 */
export function checkRunLog(lines: string[]): { overlaps: string[]; backwards: string[]; completed: Map<string, number[]> } {
  const open = new Map<string, string>();
  const overlaps: string[] = [];
  const backwards: string[] = [];
  const completed = new Map<string, number[]>();
  for (const line of lines) {
    const r = parseRecord(line);
    if (r.kind === 'mark') {
      if (r.consumer === 'dead') for (const [key, by] of open) if (by === r.key) open.delete(key);
      continue;
    }
    if (r.kind === 'start') {
      const by = open.get(r.key);
      if (by !== undefined && by !== r.consumer) overlaps.push(`${r.key}: ${r.consumer} started seq ${r.seq} while ${by} ran it`);
      open.set(r.key, r.consumer);
      continue;
    }
    if (open.get(r.key) === r.consumer) open.delete(r.key);
    if (r.kind !== 'end') continue;
    const seqs = completed.get(r.key) ?? [];
    if (seqs.length > 0 && r.seq < seqs[seqs.length - 1]) backwards.push(`${r.key}: seq ${r.seq} after ${seqs[seqs.length - 1]}`);
    seqs.push(r.seq);
    completed.set(r.key, seqs);
  }
  return { overlaps, backwards, completed };
}
