import type { Redis } from 'ioredis';
import { type ClaimReadReply, claimReadArgs, readWithClaim, reportClaimedByRead, splitClaimRead } from './claim-read.js';

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

  it('keeps a claimed entry whose payload is gone (fields null) and reads a missing idle time as 0', () => {
    const reply = [['s', [['1-0', null, undefined, 2]]]] as unknown as ClaimReadReply;
    expect(splitClaimRead(reply, () => false).claimed).toEqual([{ id: '1-0', fields: null, deliveries: 3, idleMs: 0 }]);
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

describe('readWithClaim', () => {
  it('marks the claim epoch, sends one XREADGROUP … CLAIM for the target and splits its reply', async () => {
    const sent: unknown[][] = [];
    // Only Redis.call is used: the CLAIM option has no typed ioredis method.
    const reader: Pick<Redis, 'call' | 'hset'> = {
      call: (async (...args: unknown[]) => {
        sent.push(args);
        return [['s', [['1-0', ['f', 'a'], 0, 0]]]];
      }) as Redis['call'],
      hset: (async (...args: unknown[]) => {
        sent.push(['HSET', ...args]);
        return 1;
      }) as Redis['hset'],
    };
    const result = await readWithClaim(reader as Redis, { stream: 's', group: 'g', consumer: 'c' }, 5, null, 1_000, () => false);
    // The group's claim epoch is marked first: its acks must stay checked (see claim-read.ts).
    expect(sent).toEqual([
      ['HSET', '{s}:nrs-claims:g', 'claim-reads', '1'],
      ['XREADGROUP', ...claimReadArgs('g', 'c', 5, null, 1_000, 's')],
    ]);
    expect(result.fresh).toEqual([['1-0', ['f', 'a']]]);
  });
});

describe('reportClaimedByRead', () => {
  it('logs and emits reclaimed as a reclaim round does', () => {
    const warnings: string[] = [];
    const emitted: unknown[] = [];
    reportClaimedByRead(
      { logger: { warn: (m) => warnings.push(m) }, events: { emit: (event, payload) => emitted.push([event, payload]) } },
      { stream: 's', group: 'g', consumer: 'c' },
      3,
    );
    expect(warnings).toEqual(['Reclaimed 3 idle entries of stream "s" group "g".']);
    expect(emitted).toEqual([['reclaimed', { stream: 's', group: 'g', consumer: 'c', count: 3 }]]);
  });
});
