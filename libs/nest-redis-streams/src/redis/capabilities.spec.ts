import type { Redis } from 'ioredis';
import { CAPABILITY_MESSAGES, collectTokens, combine, patchFloorOf, probeNode } from './capabilities.js';

/** A node that answers each probe command with a reply or an error, by its first words. */
function fakeNode(answers: Record<string, unknown>, info = 'redis_version:8.6.3\r\n'): Redis {
  const reply = (key: string) => {
    const value = answers[key];
    return value instanceof Error ? Promise.reject(value) : Promise.resolve(value);
  };
  return {
    options: { host: '10.0.0.1', port: 6379 },
    info: () => Promise.resolve(info),
    call: (command: string, ...args: unknown[]) => reply(`${command} ${String(args[0])}`),
  } as unknown as Redis;
}

const NEW_SERVER = {
  'XREADGROUP GROUP': new Error('NOGROUP No such key'),
  'XADD k': null,
  'XTRIM k': 0,
  'COMMAND INFO': [['xcfgset'], ['xackdel'], ['xdelex'], null],
};

describe('probeNode', () => {
  it('reads each capability from how the server answers its argument', async () => {
    const caps = await probeNode(fakeNode(NEW_SERVER), 'k');
    expect(caps).toMatchObject({ node: '10.0.0.1:6379', server: 'redis', version: '8.6.3' });
    expect(caps).toMatchObject({ claim: true, idmp: true, ackDelete: true, trimConditions: true, nack: false });
    expect(Object.values(caps.detectedBy)).toEqual(['probe', 'probe', 'probe', 'probe', 'probe']);
  });

  it('finds nothing on a server that takes the arguments for syntax errors or ids (7.0)', async () => {
    const caps = await probeNode(
      fakeNode({
        'XREADGROUP GROUP': new Error('ERR syntax error'),
        'XADD k': new Error('ERR Invalid stream ID specified as stream command argument'),
        'XTRIM k': new Error('ERR syntax error'),
        'COMMAND INFO': [null, null, null, null],
      }),
      'k',
    );
    expect(caps).toMatchObject({ claim: false, idmp: false, ackDelete: false, trimConditions: false, nack: false });
  });

  it('names Valkey by its own version, not the 7.2.4 it reports for compatibility', async () => {
    const info = 'redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\n';
    const caps = await probeNode(fakeNode(NEW_SERVER, info), 'k');
    expect(caps).toMatchObject({ server: 'valkey', version: '9.1.2', patchFloor: { ok: true } });
  });

  it('falls back to COMMAND DOCS when the probe key is not allowed, and to absent when that is refused too', async () => {
    const noperm = new Error("NOPERM No permissions to access a key used by the 'xadd' command");
    const docs = [
      'xadd',
      [
        'summary',
        's',
        'arguments',
        [
          ['name', 'key'],
          ['name', 'idmp', 'token', 'IDMP'],
        ],
      ],
    ];
    const caps = await probeNode(
      fakeNode({ ...NEW_SERVER, 'XREADGROUP GROUP': noperm, 'XADD k': noperm, 'COMMAND DOCS': docs }),
      'k',
    );
    expect(caps.idmp).toBe(true);
    expect(caps.detectedBy.idmp).toBe('command-docs');
    // XREADGROUP's docs are the same fake XADD docs: no CLAIM in them.
    expect(caps.claim).toBe(false);
    const denied = await probeNode(
      fakeNode({ ...NEW_SERVER, 'XADD k': noperm, 'COMMAND DOCS': new Error('NOPERM this user has no permissions') }),
      'k',
    );
    expect(denied).toMatchObject({ idmp: false, detectedBy: { idmp: 'refused' } });
    expect(CAPABILITY_MESSAGES.report({ nodes: [denied], all: combine([denied]) })).toContain(
      'not allowed to probe XADD IDMP: counted as absent',
    );
  });
});

describe('combine', () => {
  it('counts a capability only when every node has it (a rolling upgrade mixes versions)', async () => {
    const a = await probeNode(fakeNode(NEW_SERVER), 'k');
    const b = { ...a, claim: false };
    expect(combine([a, b])).toEqual({ claim: false, idmp: true, ackDelete: true, trimConditions: true, nack: false });
    expect(combine([])).toEqual({ claim: false, idmp: false, ackDelete: false, trimConditions: false, nack: false });
  });
});

describe('patchFloorOf', () => {
  it('compares with the floor of the same line', () => {
    expect(patchFloorOf('redis', '8.6.3')).toEqual({ ok: false, floor: '8.6.6' });
    expect(patchFloorOf('redis', '8.6.6')).toEqual({ ok: true, floor: null });
    expect(patchFloorOf('redis', '7.4.10')).toEqual({ ok: false, floor: '7.4.11' });
    expect(patchFloorOf('redis', '8.4.6')).toEqual({ ok: true, floor: null });
    expect(patchFloorOf('valkey', '9.1.1')).toEqual({ ok: false, floor: '9.1.2' });
    expect(patchFloorOf('valkey', '9.1.2')).toEqual({ ok: true, floor: null });
  });

  it('sends a line without a fixed release to the next listed line, and trusts newer lines', () => {
    expect(patchFloorOf('redis', '7.0.15')).toEqual({ ok: false, floor: '7.4.11' });
    expect(patchFloorOf('redis', '8.0.3')).toEqual({ ok: false, floor: '8.2.9' });
    expect(patchFloorOf('valkey', '8.1.4')).toEqual({ ok: false, floor: '9.1.2' });
    expect(patchFloorOf('redis', '8.8.0')).toEqual({ ok: true, floor: null });
    expect(patchFloorOf('valkey', '9.2.0')).toEqual({ ok: true, floor: null });
    expect(patchFloorOf('redis', '')).toEqual({ ok: true, floor: null });
  });
});

describe('collectTokens', () => {
  it('keeps argument names and tokens of nested blocks, lower-cased', () => {
    const tokens = new Set<string>();
    collectTokens(['xtrim', ['arguments', [['name', 'trim', 'arguments', [['name', 'acked', 'token', 'ACKED']]]]]], tokens);
    expect([...tokens].sort()).toEqual(['acked', 'trim']);
  });
});
