/** Log lines of partition ownership. */
export const OWNERSHIP_MESSAGES = {
  roundFailed: (stream: string, group: string, cause: string) =>
    `Ownership round of stream "${stream}" group "${group}" failed (${cause}); partitions held here stop ` +
    'being read once their lease runs out, and the next round tries again.',
  handOverFailed: (stream: string, group: string, cause: string) =>
    `Handing partition "${stream}" of group "${group}" over failed (${cause}); it stays held here ` +
    'and the next ownership round starts the hand-over again.',
  lost: (stream: string, group: string, generation: string) =>
    `Lost partition "${stream}" of group "${group}" (generation ${generation}): its lease ran out and ` +
    'another instance may own it. Nothing of it is read, run or written from here any more.',
  rebalanced: (stream: string, group: string, consumer: string, owned: number[], members: number) =>
    `Consumer "${consumer}" owns partitions [${owned.join(', ')}] of stream "${stream}" group "${group}" ` +
    `(${members} instance${members === 1 ? '' : 's'} in the group).`,
};
