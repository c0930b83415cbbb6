import { Controller, Get, Header, Inject } from '@nestjs/common';
import { RedisStreamsServer, collectServerStats, formatStatsTable } from 'nest-redis-streams';
import { register } from 'prom-client';
import { TRANSPORT } from './transport.token.js';

/** What operators look at: Prometheus metrics and a readable table of every stream and group. */
@Controller()
export class OpsController {
  constructor(@Inject(TRANSPORT) private readonly server: RedisStreamsServer) {}

  @Get('metrics')
  @Header('Content-Type', register.contentType)
  metrics(): Promise<string> {
    return register.metrics();
  }

  /** Pending, oldest idle, lag, dead letters and consumers of every stream/group, as text. */
  @Get('streams')
  @Header('Content-Type', 'text/plain; charset=utf-8')
  async streams(): Promise<string> {
    const measured = await collectServerStats(this.server, 100, 2_000);
    const rows = measured.flatMap(({ stats }) => (stats instanceof Error ? [] : [stats]));
    return `${formatStatsTable(rows)}\n`;
  }
}
