import { aclFixFor, aclUserOf, explainAclError, isPermissionError, isScriptPermissionError } from './acl-hint.js';

describe('ACL hints', () => {
  it('turns a refused command into the ACL SETUSER line that grants it (subcommands included)', () => {
    const refused = new Error("NOPERM this user has no permissions to run the 'xautoclaim' command");
    expect(aclFixFor(refused, 'nrs-consumer')).toBe('ACL SETUSER nrs-consumer +xautoclaim');
    expect(aclFixFor(new Error("NOPERM User app has no permissions to run the 'xinfo|stream' command"), 'app')).toBe(
      'ACL SETUSER app +xinfo|stream',
    );
    expect(explainAclError(refused, 'nrs-consumer')).toBe(
      'NOPERM this user has no permissions to run the \'xautoclaim\' command. Redis user "nrs-consumer" lacks this permission; ' +
        'grant it with `ACL SETUSER nrs-consumer +xautoclaim` (docs/production.md, "Production kit", lists what each role needs).',
    );
  });

  it('tells an ACL refusal from other errors, whatever the server words it', () => {
    expect(isPermissionError(new Error("NOPERM this user has no permissions to run the 'watch' command"))).toBe(true);
    expect(isPermissionError(new Error("NOPERM User app has no permissions to run the 'multi' command"))).toBe(true);
    expect(isPermissionError(new Error('ERR EXEC without MULTI'))).toBe(false);
    expect(isPermissionError(new Error('Connection is closed.'))).toBe(false);
    expect(isPermissionError('NOPERM as a string, not an Error')).toBe(false);
  });

  it('names key patterns for a refused key, and leaves other errors alone', () => {
    const key = new Error('NOPERM this user has no permissions to access one of the keys used as arguments');
    expect(aclFixFor(key, 'p')).toMatch(/^ACL SETUSER p ~<keyPrefix>\* ~\{<keyPrefix>\*/);
    expect(aclFixFor(new Error('ERR no such key'), 'p')).toBeNull();
    expect(explainAclError(new Error('ERR no such key'), 'p')).toBe('ERR no such key');
  });

  it('reads the 7.2+ shapes (Redis 8, Valkey 9): a capitalised key refusal, a named key, a refusal inside a script', () => {
    expect(aclFixFor(new Error('NOPERM No permissions to access a key'), 'p')).toMatch(
      /^ACL SETUSER p ~<keyPrefix>\* ~\{<keyPrefix>\*/,
    );
    expect(aclFixFor(new Error("NOPERM User p has no permissions to access the 'x' key"), 'p')).toMatch(
      /^ACL SETUSER p ~<keyPrefix>/,
    );
    expect(aclFixFor(new Error('NOPERM No permissions to access a channel'), 'p')).toBe('ACL SETUSER p &<channel>');
    const script = new Error(
      "ERR ACL failure in script: User nrs-lacking has no permissions to run the 'xgroup|create' command script: 1f2e, on @user_script:9.",
    );
    expect(isScriptPermissionError(script)).toBe(true);
    expect(
      isScriptPermissionError(new Error("ERR The user executing the script can't run this command or subcommand script: 1f2e")),
    ).toBe(true);
    expect(isScriptPermissionError(new Error('ERR no such key'))).toBe(false);
  });

  it('finds the user in a URL or in options, never anything else of the URL', () => {
    expect(aclUserOf('redis://nrs-producer:secret@redis:6379')).toBe('nrs-producer');
    expect(aclUserOf('rediss://:only-a-password@redis:6380')).toBe('default');
    expect(aclUserOf({ host: 'redis', username: 'nrs-consumer', password: 'x' })).toBe('nrs-consumer');
    expect(aclUserOf({ cluster: [{ host: 'a', port: 1 }], clusterOptions: { redisOptions: { username: 'c' } } })).toBe('c');
    expect(aclUserOf(undefined)).toBe('default');
  });
});
