import { execFile } from 'node:child_process';
import { join } from 'node:path';

// The README runs the operator command as `npx nest-redis-streams …` in this repository too: npm
// must have linked it into node_modules/.bin at `npm ci` (the library's bin is a launcher file that
// exists before the build), and the launcher must reach the built command.
const root = join(__dirname, '../..');

function npx(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('npx', ['--no-install', 'nest-redis-streams', ...args], { cwd: root, timeout: 50_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

describe('npx nest-redis-streams in the repository', () => {
  it('is linked by npm ci and prints the usage', async () => {
    const run = await npx(['--help']);
    expect(run.stderr).not.toContain('not found');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Usage: nest-redis-streams <command>');
  }, 60_000);
});
