import { Controller, Logger } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { patchFloorOf } from '../../libs/nest-redis-streams/src/redis/capabilities.js';
import { redisClient, startMicroservice, unique } from '../support/helpers.js';

jest.setTimeout(30_000);

function handlerFor(stream: string) {
  @Controller()
  class Handler {
    @EventPattern(stream)
    handle() {}
  }
  return Handler;
}

describe('listen() reports the stream capabilities', () => {
  const redis = redisClient();
  afterAll(() => redis.quit());
  afterEach(() => jest.restoreAllMocks());

  it('logs one capability line, and warns once (not on every listen) when the server is below its patch floor', async () => {
    const log = jest.spyOn(Logger.prototype, 'log');
    const warn = jest.spyOn(Logger.prototype, 'warn');
    const info = await redis.info('server');
    const valkey = /^server_name:valkey/m.test(info);
    const version = /^(?:valkey|redis)_version:(.+)$/m.exec(valkey ? info.replace(/^redis_version:.*$/m, '') : info)![1].trim();
    const floor = patchFloorOf(valkey ? 'valkey' : 'redis', version);

    const servers = [];
    for (let i = 0; i < 2; i++) servers.push(await startMicroservice([handlerFor(unique('caps-listen'))], {}));
    try {
      const lines = log.mock.calls.map(([m]) => String(m)).filter((m) => m.startsWith('Stream capabilities: '));
      expect(lines).toHaveLength(2);
      expect(lines[0]).toContain(`${valkey ? 'valkey' : 'redis'} ${version}`);
      const caps = servers[0].server.getCapabilities()!;
      expect(caps.nodes[0].version).toBe(version);
      expect(caps.nodes[0].patchFloor).toEqual(floor);
      const floorWarnings = warn.mock.calls.map(([m]) => String(m)).filter((m) => m.includes('is below'));
      if (floor.ok) expect(floorWarnings).toEqual([]);
      else {
        expect(floorWarnings).toHaveLength(1);
        expect(floorWarnings[0]).toContain(`${version}`);
        expect(floorWarnings[0]).toContain(
          `is below ${floor.floor}, the first release of its line with the fix for stream payloads in RESTORE`,
        );
      }
    } finally {
      for (const { app } of servers) await app.close();
    }
  });
});
