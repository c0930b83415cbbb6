import { NestFactory } from '@nestjs/core';
import { RedisStreamsServer } from 'nest-redis-streams';
import { AppModule } from './app.module.js';
import { checkMigrations } from './migrations.check.js';

async function bootstrap(): Promise<void> {
  // Before Nest starts, as an app applying its tables at start does; the package check reads this line.
  console.log(`fixture migrations ${await checkMigrations()}`);
  const app = await NestFactory.create(AppModule, { logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  app.connectMicroservice({ strategy: app.get(RedisStreamsServer) });
  await app.startAllMicroservices();
  await app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1');
  console.log('fixture ready');
}
void bootstrap();
