import {
  BadRequestException,
  ConflictException,
  HttpException,
  InternalServerErrorException,
  NotFoundException,
  ServiceUnavailableException,
} from '@nestjs/common';
import { AuditIncompleteError } from '../operations/errors/audit-incomplete.error.js';
import { aclFixFor, explainAclError } from '../redis/acl-hint.js';
import { OperationError } from '../operations/errors/operation.error.js';
import { OPERATIONS_MESSAGES } from '../operations/operations.messages.js';
import type { CursorTarget } from '../operations/group-cursor.js';
import { parseCount, parseStreamId, parseTime, requireName } from '../operations/stream-position.js';
import { OPERATIONS_DEFAULTS } from '../operations/operations.constants.js';

/** How an ACL hint names the Redis user the console connects as. */
const CONSOLE_USER = "<the console's Redis user>";

/** Status of a request whose client left before the answer (nginx's "client closed request"). */
const CLIENT_CLOSED = 499;

/**
 * Runs an operation and turns its refusals into HTTP answers: 400 bad input, 404 missing, 409
 * refused or a conflict (the entry changed while the write ran), 503 not run because the audit stream refused its record or the ACL refused a command
 * (naming the grant), 500 done but its outcome not audited (the message says what was done). A read stopped because the client left ends quietly.
 */
export async function answer<T>(run: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (signal?.aborted) throw new HttpException('The client closed the request: the read was stopped.', CLIENT_CLOSED);
    if (err instanceof AuditIncompleteError) throw new InternalServerErrorException(err.message);
    // The ACL of the console's Redis user refused a command: say which, and the grant (not a bare 500).
    if (aclFixFor(err, CONSOLE_USER) !== null) throw new ServiceUnavailableException(explainAclError(err, CONSOLE_USER));
    if (!(err instanceof OperationError)) throw err;
    if (err.kind === 'bad-request') throw new BadRequestException(err.message);
    if (err.kind === 'not-found') throw new NotFoundException(err.message);
    if (err.kind === 'unavailable') throw new ServiceUnavailableException(err.message);
    throw new ConflictException(err.message);
  }
}

/** Query and body values arrive as unknown: each is checked where it is read. */
export type Input = Record<string, unknown> | undefined;

export const name = (input: Input, key: string) => requireName(input?.[key], key);
export const optionalName = (input: Input, key: string) =>
  input?.[key] === undefined || input?.[key] === '' ? undefined : name(input, key);
export const id = (input: Input, key = 'id') => parseStreamId(String(input?.[key] ?? ''), key);
export const optionalId = (input: Input, key: string) => (input?.[key] ? id(input, key) : undefined);
export const optionalTime = (input: Input, key: string) => (input?.[key] ? parseTime(input[key]) : undefined);
export const count = (input: Input) => parseCount(input?.count, OPERATIONS_DEFAULTS.pageSize, OPERATIONS_DEFAULTS.maxPageSize);

/** A partition count (1 to `maxPartitions`), or undefined to let the read find them. */
export function optionalPartitions(input: Input): number | undefined {
  const raw = input?.partitions;
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!/^\d+$/.test(String(raw)) || !Number.isSafeInteger(n) || n < 1 || n > OPERATIONS_DEFAULTS.maxPartitions)
    throw new OperationError('bad-request', OPERATIONS_MESSAGES.badPartitions(raw, OPERATIONS_DEFAULTS.maxPartitions));
  return n;
}

/** `true`/`1` or `false`/`0`/absent; anything else is refused naming the parameter. */
export function optionalFlag(input: Input, key: string): boolean {
  const raw = input?.[key];
  if (raw === undefined || raw === '' || raw === false || raw === 'false' || raw === '0') return false;
  if (raw === true || raw === 'true' || raw === '1') return true;
  throw new OperationError('bad-request', `${key} must be true or false, got ${JSON.stringify(raw)}.`);
}

/** `{ id }`, `{ time }` or `{ end: true }`, exactly one. */
export function cursorTarget(input: Input): CursorTarget {
  const given = ['id', 'time', 'end'].filter((k) => input?.[k] !== undefined && input?.[k] !== '' && input?.[k] !== false);
  if (given.length !== 1)
    throw new OperationError('bad-request', 'Give exactly one of id, time or end (true) for the new group cursor.');
  if (given[0] === 'id') return { id: id(input) };
  if (given[0] === 'time') return { time: parseTime(input?.time) };
  return { end: true };
}

/** The dashboard link, checked at start-up: only an absolute http(s) URL becomes a link on the page. */
export function grafanaLink(url: string | undefined): string | null {
  if (url === undefined || url === '') return null;
  let parsed: URL | null = null;
  try {
    parsed = new URL(url);
  } catch {
    // Refused below, naming the value.
  }
  if (!parsed || !['http:', 'https:'].includes(parsed.protocol))
    throw new Error(`grafanaUrl must be an absolute http(s) URL (the Grafana dashboard), got ${JSON.stringify(url)}.`);
  return parsed.href;
}
