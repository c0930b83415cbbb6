// `npm run test:nemesis -- --seeds N --budget-s S [--seed K]` (docs/RELIABILITY.md, "The nemesis"):
// runs every kept regression seed (regression-seeds.json) and N fresh seeds, starting no fresh seed
// once S seconds are spent; or only seed K. Prints each seed's plan on one line and its verdict;
// exits 1 when a promise broke, with the seed and the history excerpt that shows it.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatRecord } from './checker.js';
import { describePlan, makePlan } from './plan.js';
import { type SeedResult, removeRun, runSeed } from './run-seed.js';

/** A seed that once broke a promise, with what it found; every run replays it. */
interface KeptSeed {
  seed: number;
  found: string;
}

const SOURCE = join(dirname(fileURLToPath(import.meta.url)), '../../../test/nemesis');
/** A fresh seed is not started when less than this is left of the budget. */
const SEED_ESTIMATE_S = 60;

function parseArgs(argv: string[]) {
  const value = (name: string) => {
    const at = argv.indexOf(name);
    if (at < 0) return undefined;
    const raw = Number(argv[at + 1]);
    if (!Number.isInteger(raw) || raw < 0) {
      console.error(`${name} takes a whole number, got ${JSON.stringify(argv[at + 1])}.`);
      process.exit(2);
    }
    return raw;
  };
  return { seeds: value('--seeds') ?? 1, budgetS: value('--budget-s') ?? 240, seed: value('--seed') };
}

function report(result: SeedResult): void {
  const verdict = result.error ? 'HARNESS ERROR' : result.violations.length === 0 ? 'ok' : 'BROKEN';
  console.log(`  verdict ${verdict} after ${(result.ms / 1_000).toFixed(1)}s (${result.history.length} history records)`);
  if (result.error) console.log(`  ${result.error}\n  run folder kept: ${result.dir}`);
  if (result.violations.length === 0) return;
  const origin = Math.min(...result.history.map((r) => r.t));
  for (const v of result.violations.slice(0, 5)) {
    console.log(`  seed ${result.plan.seed} broke "${v.promise}" in group ${v.group}: ${v.detail}`);
    for (const r of v.excerpt) console.log(`    ${formatRecord(r, origin)}`);
  }
  if (result.violations.length > 5) console.log(`  ... and ${result.violations.length - 5} more`);
  console.log(`  replay: npm run test:nemesis -- --seed ${result.plan.seed}   (history and logs kept in ${result.dir})`);
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const kept = JSON.parse(readFileSync(join(SOURCE, 'regression-seeds.json'), 'utf8')) as KeptSeed[];
  // Fresh seeds from the time (printed, so any of them can be replayed).
  const base = Number(process.env.NEMESIS_SEED_BASE ?? Date.now() % 1_000_000_000);
  const fresh = Array.from({ length: args.seeds }, (_, i) => base + i);
  const queue =
    args.seed !== undefined
      ? [{ seed: args.seed, kept: true }]
      : [...kept.map((k) => ({ seed: k.seed, kept: true })), ...fresh.map((seed) => ({ seed, kept: false }))];
  const started = Date.now();
  let broken = 0;
  for (const { seed, kept: isKept } of queue) {
    const spentS = (Date.now() - started) / 1_000;
    if (!isKept && spentS + SEED_ESTIMATE_S > args.budgetS) {
      console.log(`seed=${seed} skipped: ${spentS.toFixed(0)}s of the ${args.budgetS}s budget spent`);
      continue;
    }
    console.log(`${isKept ? '[kept] ' : ''}${describePlan(makePlan(seed))}`);
    const result = await runSeed(seed);
    report(result);
    if (result.error || result.violations.length > 0) broken++;
    else removeRun(result.dir);
  }
  console.log(`nemesis: ${queue.length} seeds, ${broken} broken, ${((Date.now() - started) / 1_000).toFixed(0)}s`);
  process.exit(broken > 0 ? 1 : 0);
}

void main();
