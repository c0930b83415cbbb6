import { ENVELOPE } from '../constants.js';
import type { FieldPairs } from './entries.js';
import type { SearchScope } from './expression/index.js';
import type { ScannedEntry } from './search-sources.js';
import { idTime } from './stream-position.js';

/** Parses JSON text; undefined when it is not JSON (or nests too deep for the parser). */
function json(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Field name → value (the first of duplicate names), in an object without a prototype. */
function fieldObject(fields: FieldPairs | null): Record<string, string> | undefined {
  if (!fields) return undefined;
  const out = Object.create(null) as Record<string, string>;
  for (const [name, value] of fields) if (!Object.hasOwn(out, name)) out[name] = value;
  return out;
}

/**
 * What a condition sees of one entry: `id`, `time`, `fields`, `headers` (the envelope's headers),
 * `payload` (its `data` decoded as JSON, else the text as is), and `pending` or `deadLetter` where
 * the search reads a PEL or a dead-letter stream. It is built from the fields the caller will be
 * shown (after redaction), and decodes `headers` and `payload` only when the condition reads them.
 */
export function searchScope(entry: ScannedEntry, fields: FieldPairs | null): SearchScope {
  const cache = new Map<string, unknown>();
  const compute = (name: string): unknown => {
    switch (name) {
      case 'id':
        return entry.id;
      case 'time':
        return idTime(entry.id);
      case 'fields':
        return fieldObject(fields);
      case 'headers': {
        const headers = json((compute('fields') as Record<string, string> | undefined)?.[ENVELOPE.headers]);
        return headers !== null && typeof headers === 'object' && !Array.isArray(headers) ? headers : undefined;
      }
      case 'payload': {
        const data = (compute('fields') as Record<string, string> | undefined)?.[ENVELOPE.data];
        const decoded = json(data);
        return decoded === undefined ? data : decoded;
      }
      case 'pending':
        return entry.pending;
      case 'deadLetter':
        return entry.deadLetter;
      default:
        return undefined;
    }
  };
  return {
    root(name) {
      if (!cache.has(name)) cache.set(name, compute(name));
      return cache.get(name);
    },
  };
}
