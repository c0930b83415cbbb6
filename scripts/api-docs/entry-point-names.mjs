// A TypeDoc plugin: names each module of the reference by the import path a user writes
// (`nest-redis-streams`, `nest-redis-streams/console`, ...) instead of its entry file's name.
import { Converter } from 'typedoc';

/** @param {import('typedoc').Application} app */
export function load(app) {
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    for (const module of context.project.children ?? []) {
      module.name = module.name === 'index' ? 'nest-redis-streams' : `nest-redis-streams/${module.name}`;
    }
  });
}
