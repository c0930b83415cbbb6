import type { ScriptedRedis } from '../redis/scripts.js';
import { FENCED, ackIfOwned, claimIfOwned, deadLetterIfOwned } from './fenced-writes.js';
import { PartitionFence } from './partition-fence.js';

// How the fenced writes shape their script calls: unfenced without a fence, nothing sent without
// a generation, the fenced script with owner key, member and generation otherwise, and Redis'
// refusal turned into FENCED. The scripts themselves are tested against Redis in test/ownership/.

type WriteScripts = Pick<
  ScriptedRedis,
  | 'nrsClaimIfOwned'
  | 'nrsClaimIfOwnedFenced'
  | 'nrsAckIfOwned'
  | 'nrsAckIfOwnedFenced'
  | 'nrsDeadLetterIfOwned'
  | 'nrsDeadLetterIfOwnedFenced'
>;

class FakeScripts implements WriteScripts {
  readonly sent: Array<[command: keyof WriteScripts, ...args: unknown[]]> = [];
  /** The next answer of any script. */
  answer: unknown = null;

  async nrsClaimIfOwned(...args: Parameters<WriteScripts['nrsClaimIfOwned']>) {
    return this.reply<[string[], string[]]>('nrsClaimIfOwned', args);
  }
  async nrsClaimIfOwnedFenced(...args: Parameters<WriteScripts['nrsClaimIfOwnedFenced']>) {
    return this.reply<[string[], string[]] | null>('nrsClaimIfOwnedFenced', args);
  }
  async nrsAckIfOwned(...args: Parameters<WriteScripts['nrsAckIfOwned']>) {
    return this.reply<string[]>('nrsAckIfOwned', args);
  }
  async nrsAckIfOwnedFenced(...args: Parameters<WriteScripts['nrsAckIfOwnedFenced']>) {
    return this.reply<string[] | null>('nrsAckIfOwnedFenced', args);
  }
  async nrsDeadLetterIfOwned(...args: Parameters<WriteScripts['nrsDeadLetterIfOwned']>) {
    return this.reply<string | null>('nrsDeadLetterIfOwned', args);
  }
  async nrsDeadLetterIfOwnedFenced(...args: Parameters<WriteScripts['nrsDeadLetterIfOwnedFenced']>) {
    return this.reply<string | null | 0>('nrsDeadLetterIfOwnedFenced', args);
  }

  private reply<T>(command: keyof WriteScripts, args: unknown[]): T {
    this.sent.push([command, ...args]);
    return this.answer as T;
  }
}

const OWNER = '{orders:0}:nrs-owner:billing';

function setup(generation?: string | null) {
  const scripts = new FakeScripts();
  const redis = scripts as unknown as ScriptedRedis;
  if (generation === undefined) return { scripts, redis, fence: undefined };
  const fence = new PartitionFence(OWNER, 'c1#start');
  if (generation !== null) fence.grant(generation, performance.now(), 60_000);
  return { scripts, redis, fence };
}

describe('fenced writes', () => {
  describe('claimIfOwned', () => {
    it('without a fence: the unfenced script, ids last, its answer as it is', async () => {
      const { scripts, redis, fence } = setup();
      scripts.answer = [['2-0'], []];
      await expect(claimIfOwned(redis, fence, 's', 'g', 'c', 0, -1, ['1-0', '2-0'])).resolves.toEqual([['2-0'], []]);
      expect(scripts.sent).toEqual([['nrsClaimIfOwned', 's', 'g', 'c', 0, -1, '1-0', '2-0']]);
    });

    it('with a generation held: the fenced script with owner key, member and generation before the group', async () => {
      const { scripts, redis, fence } = setup('7');
      scripts.answer = [[], ['1-0']];
      await expect(claimIfOwned(redis, fence, 's', 'g', 'c', 500, 3, ['1-0'])).resolves.toEqual([[], ['1-0']]);
      expect(scripts.sent).toEqual([['nrsClaimIfOwnedFenced', 's', OWNER, 'c1#start', '7', 'g', 'c', 500, 3, '1-0']]);
    });

    it('answers FENCED when Redis refuses the generation', async () => {
      const { scripts, redis, fence } = setup('7');
      scripts.answer = null;
      await expect(claimIfOwned(redis, fence, 's', 'g', 'c', 0, -1, ['1-0'])).resolves.toBe(FENCED);
    });

    it('sends nothing without a generation and reports every id lost (the entries are not this instance’s)', async () => {
      const { scripts, redis, fence } = setup(null);
      await expect(claimIfOwned(redis, fence, 's', 'g', 'c', 0, -1, ['1-0', '2-0'])).resolves.toEqual([['1-0', '2-0'], []]);
      expect(scripts.sent).toEqual([]);
    });
  });

  describe('ackIfOwned', () => {
    it('without a fence: the unfenced script with the id range, ids last', async () => {
      const { scripts, redis, fence } = setup();
      scripts.answer = [];
      await expect(ackIfOwned(redis, fence, 's', 'g', 'c', '1-0', '3-0', ['1-0', '3-0'])).resolves.toEqual([]);
      expect(scripts.sent).toEqual([['nrsAckIfOwned', 's', 'g', 'c', '1-0', '3-0', '1-0', '3-0']]);
    });

    it('with a generation held: the fenced script, and FENCED when refused', async () => {
      const { scripts, redis, fence } = setup('2');
      scripts.answer = ['3-0'];
      await expect(ackIfOwned(redis, fence, 's', 'g', 'c', '1-0', '3-0', ['1-0', '3-0'])).resolves.toEqual(['3-0']);
      expect(scripts.sent).toEqual([['nrsAckIfOwnedFenced', 's', OWNER, 'c1#start', '2', 'g', 'c', '1-0', '3-0', '1-0', '3-0']]);
      scripts.answer = null;
      await expect(ackIfOwned(redis, fence, 's', 'g', 'c', '1-0', '1-0', ['1-0'])).resolves.toBe(FENCED);
    });

    it('sends nothing without a generation and answers every id not acked, each once', async () => {
      const { scripts, redis, fence } = setup(null);
      await expect(ackIfOwned(redis, fence, 's', 'g', 'c', '1-0', '2-0', ['1-0', '2-0', '1-0'])).resolves.toEqual(['1-0', '2-0']);
      expect(scripts.sent).toEqual([]);
    });
  });

  describe('deadLetterIfOwned', () => {
    const rest = ['2', 'dlq:reason', 'max-deliveries', 'f', 'v'];

    it('without a fence: the unfenced script, the metadata and fallback last', async () => {
      const { scripts, redis, fence } = setup();
      scripts.answer = '9-0';
      await expect(deadLetterIfOwned(redis, fence, 's', 's:dlq', 'g', 'c', '1-0', '1', rest)).resolves.toBe('9-0');
      expect(scripts.sent).toEqual([['nrsDeadLetterIfOwned', 's', 's:dlq', 'g', 'c', '1-0', '1', ...rest]]);
    });

    it('with a generation held: the owner key after the dead-letter stream, member and generation before the group', async () => {
      const { scripts, redis, fence } = setup('5');
      scripts.answer = '9-0';
      await expect(deadLetterIfOwned(redis, fence, 's', 's:dlq', 'g', 'c', '1-0', '0', rest)).resolves.toBe('9-0');
      expect(scripts.sent).toEqual([
        ['nrsDeadLetterIfOwnedFenced', 's', 's:dlq', OWNER, 'c1#start', '5', 'g', 'c', '1-0', '0', ...rest],
      ]);
    });

    it('tells a refused generation (0: FENCED) from an entry that is not this consumer’s (null)', async () => {
      const { scripts, redis, fence } = setup('5');
      scripts.answer = 0;
      await expect(deadLetterIfOwned(redis, fence, 's', 's:dlq', 'g', 'c', '1-0', '1', rest)).resolves.toBe(FENCED);
      scripts.answer = null;
      await expect(deadLetterIfOwned(redis, fence, 's', 's:dlq', 'g', 'c', '1-0', '1', rest)).resolves.toBeNull();
    });

    it('sends nothing without a generation and answers null (not owned)', async () => {
      const { scripts, redis, fence } = setup(null);
      await expect(deadLetterIfOwned(redis, fence, 's', 's:dlq', 'g', 'c', '1-0', '1', rest)).resolves.toBeNull();
      expect(scripts.sent).toEqual([]);
    });
  });
});
