import { keyBeside } from './slots.js';

/** The errors stream of `group` on `stream`: `{<stream>}:nrs-errors:<group>` (or beside its own hash tag). */
export function handlerErrorsKey(stream: string, group: string): string {
  return keyBeside(stream, `nrs-errors:${group}`);
}
