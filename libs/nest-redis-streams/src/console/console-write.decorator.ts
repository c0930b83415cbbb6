import { SetMetadata } from '@nestjs/common';
import { CONSOLE_SESSION, CONSOLE_WRITE } from './console.constants.js';

/**
 * Marks a console API handler as a write: read-only, guard and CSRF checks apply. `action` is the
 * name a refusal is audited under (the same as the write's own audit record).
 */
export const ConsoleWrite = (action: string) => SetMetadata(CONSOLE_WRITE, action);

/** Marks the session handler: the guard is asked about writes there, and its answer kept for the page. */
export const ConsoleSession = () => SetMetadata(CONSOLE_SESSION, true);
