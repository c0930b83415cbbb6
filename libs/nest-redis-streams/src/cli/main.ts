#!/usr/bin/env node
import { escapeControls } from './output.js';
import { runCli } from './run-cli.js';
import { redactUrls } from '../redis/redact-url.js';

// The `nest-redis-streams` command: see run-cli.ts. Exit codes are in cli.constants.ts.
runCli(process.argv.slice(2), process.env).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`${escapeControls(redactUrls(err instanceof Error ? err.message : String(err)))}\n`);
    process.exitCode = 4;
  },
);
