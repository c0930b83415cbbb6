import {
  type CanActivate,
  type ExecutionContext,
  ForbiddenException,
  HttpException,
  HttpStatus,
  Inject,
  Injectable,
  type Type,
} from '@nestjs/common';
import { ModuleRef, Reflector } from '@nestjs/core';
import { type Observable, firstValueFrom, isObservable } from 'rxjs';
import type { ConsoleAccess, ConsoleGuardFunction, RedisStreamsConsoleOptions } from './console-options.interface.js';
import type { StreamOperations } from '../operations/stream-operations.js';
import {
  CONSOLE_DEFAULTS,
  CONSOLE_MESSAGES,
  CONSOLE_OPERATIONS,
  CONSOLE_OPTIONS,
  CONSOLE_SESSION,
  CONSOLE_WRITE,
} from './console.constants.js';
import { CsrfToken } from './csrf-token.js';

/** The request as both adapters show it (Express and Fastify both parse JSON bodies and lower-case headers). */
export interface ConsoleRequest {
  method?: string;
  headers: Record<string, string | string[] | undefined>;
  body?: Record<string, unknown>;
  user?: unknown;
  nrsConsoleActor?: string;
  /** What the guard is asked about: a Nest `CanActivate` guard reads it here ('write' for writes and the session's probe). */
  nrsConsoleAccess?: ConsoleAccess;
  /** On `GET api/session`: whether the guard (and the options) would let this caller write, and if not why. */
  nrsConsoleWrite?: { allowed: boolean; reason: string | null };
}

type ResolvedGuard = CanActivate | ConsoleGuardFunction;

/** Longest stream, group or target name, and parameters, kept in a refusal record (the body is untrusted). */
const REFUSAL_FIELD_MAX = 200;
const REFUSAL_PARAMS_MAX = 1_000;

/**
 * Every console API request passes here. Reads: the user's guard, if any. Writes, in this order:
 * read-only (global, then the stream's: 405), no guard configured (403, writes are off), CSRF
 * (same-site and the session token: 403), then the user's guard (403); each refusal is recorded
 * in `<auditStream>:refused` (who, which action on what, why). The name the guard gives (or
 * `identify`) is kept on the request for the audit stream. On the session request the guard is
 * asked a second time, about writes, so the page shows only the actions it would allow.
 */
@Injectable()
export class ConsoleAccessGuard implements CanActivate {
  private userGuard: Promise<ResolvedGuard | null> | null = null;

  constructor(
    @Inject(CONSOLE_OPTIONS) private readonly options: RedisStreamsConsoleOptions,
    @Inject(CONSOLE_OPERATIONS) private readonly ops: StreamOperations,
    private readonly csrf: CsrfToken,
    private readonly reflector: Reflector,
    private readonly moduleRef: ModuleRef,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<ConsoleRequest>();
    const action = this.reflector.get<string | undefined>(CONSOLE_WRITE, context.getHandler());
    const access: ConsoleAccess = action ? 'write' : 'read';
    const refuse = (err: unknown): Promise<never> => (action ? this.recordRefusal(request, action, err) : Promise.reject(err));
    if (action)
      await Promise.resolve()
        .then(() => this.checkWrite(request))
        .catch(refuse);
    const guard = await this.resolveGuard();
    const verdict = guard ? await this.ask(guard, context, request, access).catch(refuse) : true;
    if (verdict === false) await refuse(new ForbiddenException(CONSOLE_MESSAGES.denied));
    request.nrsConsoleActor = typeof verdict === 'string' && verdict ? verdict : this.identify(request);
    if (this.reflector.get<boolean>(CONSOLE_SESSION, context.getHandler()))
      request.nrsConsoleWrite = await this.writeVerdict(guard, context, request);
    return true;
  }

  /** Asks the user's guard; a Nest guard finds the access asked about in `request.nrsConsoleAccess`. */
  private async ask(
    guard: ResolvedGuard,
    context: ExecutionContext,
    request: ConsoleRequest,
    access: ConsoleAccess,
  ): Promise<boolean | string> {
    request.nrsConsoleAccess = access;
    return typeof guard === 'function' ? guard(request, access) : toPromise(guard.canActivate(context));
  }

  /** Would a write by this caller pass (CSRF aside: the page gets the token with a yes)? */
  private async writeVerdict(
    guard: ResolvedGuard | null,
    context: ExecutionContext,
    request: ConsoleRequest,
  ): Promise<{ allowed: boolean; reason: string | null }> {
    if (this.options.readOnly) return { allowed: false, reason: CONSOLE_MESSAGES.readOnly };
    if (!guard) return { allowed: false, reason: CONSOLE_MESSAGES.noGuard };
    try {
      const verdict = await this.ask(guard, context, request, 'write');
      return verdict === false
        ? { allowed: false, reason: CONSOLE_MESSAGES.writesDenied(request.nrsConsoleActor ?? 'anonymous') }
        : { allowed: true, reason: null };
    } catch (err) {
      return { allowed: false, reason: err instanceof Error ? err.message : String(err) };
    } finally {
      request.nrsConsoleAccess = 'read';
    }
  }

  /**
   * Records a refused write (read-only, no guard, cross-site, CSRF, the guard's no) in the refusal
   * stream, then throws the refusal on. Should the record fail, the answer says so.
   */
  private async recordRefusal(request: ConsoleRequest, action: string, err: unknown): Promise<never> {
    const body = request.body && typeof request.body === 'object' ? request.body : {};
    const text = (value: unknown) => (typeof value === 'string' ? value.slice(0, REFUSAL_FIELD_MAX) : '');
    let actor = 'anonymous';
    try {
      actor = this.identify(request);
    } catch {
      // identify may expect a user the guard did not set: the refusal is still recorded.
    }
    const intent = {
      actor,
      action,
      stream: text(body.stream),
      group: text(body.group),
      target: text(body.id ?? body.consumer ?? body.from),
      params: JSON.stringify(body).slice(0, REFUSAL_PARAMS_MAX),
    };
    const message = err instanceof Error ? err.message : String(err);
    const failure = await this.ops.audit.refuse(intent, message).then(
      () => null,
      (auditErr: unknown) => (auditErr instanceof Error ? auditErr.message : String(auditErr)),
    );
    if (failure === null || !(err instanceof HttpException)) throw err;
    throw new HttpException(`${message} (This refusal could not be recorded in the audit: ${failure}.)`, err.getStatus());
  }

  private checkWrite(request: ConsoleRequest): void {
    if (this.options.readOnly) throw new HttpException(CONSOLE_MESSAGES.readOnly, HttpStatus.METHOD_NOT_ALLOWED);
    const stream = request.body?.stream;
    const config = this.options.streams?.find((s) => typeof s === 'object' && s.stream === stream);
    if (typeof stream === 'string' && typeof config === 'object' && config.readOnly) {
      throw new HttpException(CONSOLE_MESSAGES.streamReadOnly(stream), HttpStatus.METHOD_NOT_ALLOWED);
    }
    if (!this.options.guard) throw new ForbiddenException(CONSOLE_MESSAGES.noGuard);
    // Browsers send Sec-Fetch-Site on every request; a cross-site one is refused before the token check.
    if (request.headers['sec-fetch-site'] === 'cross-site') throw new ForbiddenException(CONSOLE_MESSAGES.crossSite);
    if (!this.csrf.matches(request.headers[CONSOLE_DEFAULTS.csrfHeader])) throw new ForbiddenException(CONSOLE_MESSAGES.csrf);
  }

  private resolveGuard(): Promise<ResolvedGuard | null> {
    this.userGuard ??= (async () => {
      const guard = this.options.guard;
      if (!guard) return null;
      if (typeof guard !== 'function' || typeof (guard as Type<CanActivate>).prototype?.canActivate !== 'function') {
        return guard as ResolvedGuard;
      }
      const type = guard as Type<CanActivate>;
      try {
        // A guard class the app provides is reused; otherwise it is built with the app's injector.
        return this.moduleRef.get(type, { strict: false });
      } catch {
        return this.moduleRef.create(type);
      }
    })();
    return this.userGuard;
  }

  private identify(request: ConsoleRequest): string {
    if (this.options.identify) return this.options.identify(request);
    const user = request.user as Record<string, unknown> | string | undefined;
    if (typeof user === 'string' && user) return user;
    for (const key of ['username', 'name', 'email', 'id', 'sub']) {
      const value = (user as Record<string, unknown> | undefined)?.[key];
      if (typeof value === 'string' || typeof value === 'number') return String(value);
    }
    return 'anonymous';
  }
}

/** A Nest guard may answer with a boolean, a promise or an observable (its first value counts). */
function toPromise(value: boolean | Promise<boolean> | Observable<boolean>): Promise<boolean> {
  return isObservable(value) ? firstValueFrom(value) : Promise.resolve(value);
}
