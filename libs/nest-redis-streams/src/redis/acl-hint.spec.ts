import { aclFixFor, aclUserOf, explainAclError } from './acl-hint.js';

describe('ACL hints', () => {
  it('turns a refused command into the ACL SETUSER line that grants it (subcommands included)', () => {
    const refused = new Error("NOPERM this user has no permissions to run the 'xautoclaim' command");
    expect(aclFixFor(refused, 'nrs-consumer')).toBe('ACL SETUSER nrs-consumer +xautoclaim');
    expect(aclFixFor(new Error("NOPERM User app has no permissions to run the 'xinfo|stream' command"), 'app')).toBe(
      'ACL SETUSER app +xinfo|stream',
    );
    expect(explainAclError(refused, 'nrs-consumer')).toBe(
      'NOPERM this user has no permissions to run the \'xautoclaim\' command. Redis user "nrs-consumer" lacks this permission; ' +
        'grant it with `ACL SETUSER nrs-consumer +xautoclaim` (README "Production kit" lists what each role needs).',
    );
  });

  it('names key patterns for a refused key, and leaves other errors alone', () => {
    const key = new Error('NOPERM this user has no permissions to access one of the keys used as arguments');
    expect(aclFixFor(key, 'p')).toMatch(/^ACL SETUSER p ~<keyPrefix>\* ~\{<keyPrefix>\*/);
    expect(aclFixFor(new Error('ERR no such key'), 'p')).toBeNull();
    expect(explainAclError(new Error('ERR no such key'), 'p')).toBe('ERR no such key');
  });

  it('finds the user in a URL or in options, never anything else of the URL', () => {
    expect(aclUserOf('redis://nrs-producer:secret@redis:6379')).toBe('nrs-producer');
    expect(aclUserOf('rediss://:only-a-password@redis:6380')).toBe('default');
    expect(aclUserOf({ host: 'redis', username: 'nrs-consumer', password: 'x' })).toBe('nrs-consumer');
    expect(aclUserOf({ cluster: [{ host: 'a', port: 1 }], clusterOptions: { redisOptions: { username: 'c' } } })).toBe('c');
    expect(aclUserOf(undefined)).toBe('default');
  });
});
