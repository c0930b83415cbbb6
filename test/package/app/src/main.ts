import { NestFactory } from '@nestjs/core';
import { RedisStreamsServer } from 'nest-redis-streams';
import { AppModule } from './app.module.js';

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create(AppModule, { logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  app.connectMicroservice({ strategy: app.get(RedisStreamsServer) });
  await app.startAllMicroservices();
  await app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1');
  console.log('fixture ready');
}
void bootstrap();
