import { type ClaimReadEntry, reportClaimedByRead, splitClaimRead } from './claim-read.js';

describe('splitClaimRead', () => {
  it('tells new entries from claimed ones, counting this delivery, and never hands back what this process holds', () => {
    const entries: ClaimReadEntry[] = [
      ['1-0', ['f', 'a'], 5_000, 1],
      ['2-0', ['f', 'b'], 6_000, 3],
      ['3-0', ['f', 'c'], 0, 0],
    ];
    const result = splitClaimRead(entries, (id) => id === '2-0', '17');
    expect(result).toEqual({
      fresh: [['3-0', ['f', 'c']]],
      claimed: [{ id: '1-0', fields: ['f', 'a'], deliveries: 2, idleMs: 5_000 }],
      alreadyHeld: ['2-0'],
      epoch: '17',
      claimableInMs: -1,
    });
    // The reply's rows are let go (see takeRows).
    expect(entries).toEqual([]);
  });

  it('takes over an idle entry whose count was given back to 0 (handed back unstarted), counting this delivery as its first', () => {
    const entries: ClaimReadEntry[] = [['4-0', ['f', 'd'], 900, 0]];
    expect(splitClaimRead(entries, () => false)).toMatchObject({
      fresh: [],
      claimed: [{ id: '4-0', fields: ['f', 'd'], deliveries: 1, idleMs: 900 }],
    });
  });

  it('reads no entries as nothing, and a plain read (two elements per entry) as new entries', () => {
    expect(splitClaimRead(undefined, () => false)).toEqual({
      fresh: [],
      claimed: [],
      alreadyHeld: [],
      epoch: '',
      claimableInMs: -1,
    });
    expect(splitClaimRead([['1-0', ['f', 'a']]], () => false, '9').fresh).toEqual([['1-0', ['f', 'a']]]);
  });

  it('keeps a claimed entry whose payload is gone (fields null) and reads a missing idle time as 0', () => {
    const entries = [['1-0', null, undefined, 2]] as unknown as ClaimReadEntry[];
    expect(splitClaimRead(entries, () => false).claimed).toEqual([{ id: '1-0', fields: null, deliveries: 3, idleMs: 0 }]);
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
