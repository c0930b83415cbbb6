import { Controller, Get, Inject } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { RedisStreamsHealthIndicator, RedisStreamsServer } from 'nest-redis-streams';
import { TRANSPORT } from './transport.token.js';

/** Kubernetes probes: liveness restarts a wedged pod; readiness reports backlog and dead letters. */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly streams: RedisStreamsHealthIndicator,
    @Inject(TRANSPORT) private readonly server: RedisStreamsServer,
  ) {}

  @Get('live')
  @HealthCheck()
  live() {
    return this.health.check([() => this.streams.isLive('redis-streams', this.server)]);
  }

  @Get('ready')
  @HealthCheck()
  ready() {
    return this.health.check([
      () => this.streams.isReady('redis-streams', this.server, { maxOldestIdleMs: 60_000, maxPending: 5_000, maxLag: 5_000 }),
    ]);
  }
}
