import { probeCapabilities, summarizeCapabilities } from '../../libs/nest-redis-streams/src/redis/capabilities.js';
import { startConsoleApp } from '../console/console-app.js';
import { testContext } from '../support/helpers.js';

jest.setTimeout(30_000);

describe('console capabilities', () => {
  const { redis, closers } = testContext();

  it("serves what the server's nodes offer and their patch floors, as probed", async () => {
    const console = await startConsoleApp({});
    closers.push(() => console.app.close());
    const { status, body } = await console.get('capabilities');
    expect(status).toBe(200);
    expect(body).toEqual(summarizeCapabilities(await probeCapabilities(redis)));
    expect(body.nodes[0]).toEqual(expect.objectContaining({ server: expect.stringMatching(/^(redis|valkey)$/) }));
  });
});
