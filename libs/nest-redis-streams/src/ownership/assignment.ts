/**
 * The target owner of every partition, computed the same way by every instance from the same view
 * (live members, current owners), so they agree without talking to each other.
 *
 * Fair: each member gets ⌊N/M⌋ or ⌈N/M⌉ partitions. Minimal churn: a member keeps the partitions
 * it owns up to its share (the larger shares go to the members that own most now), and only the
 * surplus and the partitions of departed members move. `owners[i]` is the live owner of partition
 * i, or null when it is free (or its owner's lease ran out).
 */
export function assignPartitions(members: readonly string[], owners: readonly (string | null)[]): string[] {
  if (members.length === 0) return owners.map(() => '');
  const sorted = [...members].sort();
  const owned = new Map(sorted.map((m) => [m, 0]));
  for (const owner of owners) if (owner !== null && owned.has(owner)) owned.set(owner, owned.get(owner)! + 1);
  const base = Math.floor(owners.length / sorted.length);
  const extra = owners.length % sorted.length;
  const byHoldings = [...sorted].sort((a, b) => owned.get(b)! - owned.get(a)! || (a < b ? -1 : 1));
  const room = new Map(byHoldings.map((m, i) => [m, base + (i < extra ? 1 : 0)]));
  const target: string[] = owners.map(() => '');
  owners.forEach((owner, i) => {
    if (owner !== null && (room.get(owner) ?? 0) > 0) {
      target[i] = owner;
      room.set(owner, room.get(owner)! - 1);
    }
  });
  target.forEach((assigned, i) => {
    if (assigned !== '') return;
    // The member with the most room left (ties by name): spreads free partitions round-robin.
    let best = sorted[0];
    for (const m of sorted) if (room.get(m)! > room.get(best)!) best = m;
    target[i] = best;
    room.set(best, room.get(best)! - 1);
  });
  return target;
}
