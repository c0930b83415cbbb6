import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { RedisStreamsHealthIndicator, RedisStreamsServer } from 'nest-redis-streams';

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly streams: RedisStreamsHealthIndicator,
    private readonly server: RedisStreamsServer,
  ) {}

  @Get('ready')
  @HealthCheck()
  ready() {
    return this.health.check([() => this.streams.isReady('redis-streams', this.server)]);
  }
}
