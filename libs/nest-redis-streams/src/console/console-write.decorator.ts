import { SetMetadata } from '@nestjs/common';
import { CONSOLE_WRITE } from './console.constants.js';

/** Marks a console API handler as a write: read-only, guard and CSRF checks apply. */
export const ConsoleWrite = () => SetMetadata(CONSOLE_WRITE, true);
