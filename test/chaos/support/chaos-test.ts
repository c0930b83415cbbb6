import { appendFileSync } from 'node:fs';
import { type ChaosRow, Scenario } from './scenario.js';

/** Appends a row for global-teardown.cjs, which prints the table and writes the report. */
export function recordRow(row: ChaosRow): void {
  const file = process.env.CHAOS_ROWS_FILE;
  if (file) appendFileSync(file, `${JSON.stringify(row)}\n`);
}

/** What a scenario body returns: its row, then its assertions (run after the row is recorded). */
export interface ScenarioOutcome {
  row: ChaosRow;
  verify(): void;
}

/**
 * Declares one scenario as a Jest test: opens the Scenario, runs `body` within `timeoutMs`,
 * records its row (a failed row too), runs its assertions, and always cleans up.
 */
export function chaosTest(
  n: number,
  title: string,
  body: (s: Scenario) => Promise<ScenarioOutcome>,
  timeoutMs: number,
  options: { sub?: string; redis?: { appendfsync?: 'always' | 'everysec' } } = {},
): void {
  it(
    `${n}${options.sub ?? ''}. ${title}`,
    async () => {
      const s = await Scenario.open(n, options.sub ?? '', title, options.redis);
      let passed = false;
      let recorded = false;
      try {
        let timer: NodeJS.Timeout | undefined;
        const deadline = new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`Scenario ${n} did not finish within ${timeoutMs - 5_000} ms.`)),
            timeoutMs - 5_000,
          );
        });
        const outcome = await Promise.race([body(s), deadline]).finally(() => clearTimeout(timer));
        try {
          outcome.verify();
          passed = true;
        } finally {
          recordRow({ ...outcome.row, passed });
          recorded = true;
        }
      } catch (err) {
        if (!recorded) {
          const r = await s.reconcile().catch(() => null);
          const row = r && s.row('-', r);
          if (row) recordRow({ ...row, notes: `${row.notes}; ${String((err as Error).message).slice(0, 200)}` });
        }
        process.stderr.write(`Scenario ${n}${options.sub ?? ''} failed (seed ${s.seed}); worker logs kept in ${s.logDir}\n`);
        throw err;
      } finally {
        await s.close(!passed);
      }
    },
    timeoutMs,
  );
}

/** A plain test on a Scenario of its own, without a table row: for minimal reproductions. */
export function scenarioTest(
  title: string,
  body: (s: Scenario) => Promise<void>,
  timeoutMs: number,
  options: { redis?: { appendfsync?: 'always' | 'everysec' } } = {},
): void {
  it(
    title,
    async () => {
      const s = await Scenario.open(0, 'r', title, options.redis);
      let passed = false;
      try {
        await body(s);
        passed = true;
      } finally {
        await s.close(!passed);
      }
    },
    timeoutMs,
  );
}

/** Runs `action` at random intervals in [minMs, maxMs] while `active()` holds, for at most `limitMs`. */
export async function chaosLoop(
  s: Scenario,
  opts: { minMs: number; maxMs: number; active: () => boolean; limitMs: number },
  action: (round: number) => Promise<void>,
): Promise<number> {
  const end = Date.now() + opts.limitMs;
  let round = 0;
  while (opts.active() && Date.now() < end) {
    await new Promise((r) => setTimeout(r, opts.minMs + s.random() * (opts.maxMs - opts.minMs)));
    if (!opts.active()) break;
    await action(round++);
  }
  return round;
}
