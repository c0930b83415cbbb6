import { parseArgs } from 'node:util';
import { UsageError } from './errors/usage.error.js';

/** Option specs in `node:util` parseArgs form. */
export type OptionSpecs = Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }>;

/** Options every command takes. */
export const COMMON_OPTIONS: OptionSpecs = {
  url: { type: 'string' },
  cluster: { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  actor: { type: 'string' },
  'dead-letter-stream': { type: 'string' },
};

/** Parsed command line of one command. */
export interface Parsed {
  positionals: string[];
  values: Record<string, string | boolean | string[] | undefined>;
}

/** Parses strictly: an unknown option or a missing value is a UsageError naming it. */
export function parse(command: string, argv: string[], options: OptionSpecs): Parsed {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { ...COMMON_OPTIONS, ...options },
      allowPositionals: true,
      strict: true,
    });
    return { values: values as Parsed['values'], positionals };
  } catch (err) {
    throw new UsageError(`${(err as Error).message.replace(/\.$/, '')}. Run "nest-redis-streams ${command} --help".`);
  }
}

/** A whole number option (>= min); undefined when absent. */
export function intOption(parsed: Parsed, name: string, min = 0): number | undefined {
  const raw = parsed.values[name];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (typeof raw !== 'string' || !/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min) {
    throw new UsageError(`--${name} must be a whole number >= ${min}, got "${String(raw)}".`);
  }
  return n;
}

export function stringOption(parsed: Parsed, name: string): string | undefined {
  const raw = parsed.values[name];
  return typeof raw === 'string' ? raw : undefined;
}

/** The positional arguments a command needs, by name, or a UsageError listing what is missing. */
export function positionals(command: string, parsed: Parsed, names: string[], extra = false): string[] {
  const given = parsed.positionals;
  if (given.length < names.length) {
    const missing = names.slice(given.length).map((n) => `<${n}>`);
    throw new UsageError(`"${command}" needs ${missing.join(' ')}. Run "nest-redis-streams ${command} --help".`);
  }
  if (!extra && given.length > names.length) {
    throw new UsageError(`"${command}" takes ${names.map((n) => `<${n}>`).join(' ')}; unexpected "${given[names.length]}".`);
  }
  return given;
}
