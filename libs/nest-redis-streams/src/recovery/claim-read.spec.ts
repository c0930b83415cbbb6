import { type ClaimReadReply, claimReadArgs, splitClaimRead } from './claim-read.js';

describe('splitClaimRead', () => {
  it('tells new entries from claimed ones, counting this delivery, and never hands back what this process holds', () => {
    const reply: ClaimReadReply = [
      [
        's',
        [
          ['1-0', ['f', 'a'], 5_000, 1],
          ['2-0', ['f', 'b'], 6_000, 3],
          ['3-0', ['f', 'c'], 0, 0],
        ],
      ],
    ];
    const result = splitClaimRead(reply, (id) => id === '2-0');
    expect(result).toEqual({
      fresh: [['3-0', ['f', 'c']]],
      claimed: [{ id: '1-0', fields: ['f', 'a'], deliveries: 2, idleMs: 5_000 }],
      alreadyHeld: ['2-0'],
    });
    // The reply's rows are let go (see takeRows).
    expect(reply[0][1]).toEqual([]);
  });

  it('reads a timeout (null) as nothing', () => {
    expect(splitClaimRead(null, () => false)).toEqual({ fresh: [], claimed: [], alreadyHeld: [] });
  });
});

describe('claimReadArgs', () => {
  it('puts CLAIM among the options before STREAMS, with or without BLOCK', () => {
    expect(claimReadArgs('g', 'c', 10, 2_000, 30_000, 's')).toEqual([
      'GROUP',
      'g',
      'c',
      'COUNT',
      10,
      'BLOCK',
      2_000,
      'CLAIM',
      30_000,
      'STREAMS',
      's',
      '>',
    ]);
    expect(claimReadArgs('g', 'c', 10, null, 30_000, 's')).not.toContain('BLOCK');
  });
});
