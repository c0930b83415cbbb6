import { Controller, Get, Header, NotFoundException, Param, Req, StreamableFile, UseInterceptors } from '@nestjs/common';
import { ConsoleAssets, consolePage } from './console-assets.js';
import { ConsoleHeadersInterceptor } from './console-headers.interceptor.js';

/** The page and its assets. The page finds its API from its own script's URL, so any prefix works. */
@Controller()
@UseInterceptors(ConsoleHeadersInterceptor)
export class ConsolePageController {
  private readonly assets = new ConsoleAssets();

  @Get()
  @Header('Content-Type', 'text/html; charset=utf-8')
  page(@Req() req: { originalUrl?: string; url?: string }): string {
    const url = req.originalUrl ?? req.url ?? '/';
    return consolePage(url.split('?')[0].replace(/\/+$/, ''));
  }

  @Get('assets/:file')
  asset(@Param('file') file: string): StreamableFile {
    const found = this.assets.read(file);
    if (!found) throw new NotFoundException(`The console has no asset "${file}".`);
    return new StreamableFile(found.body, { type: found.type, length: found.body.length });
  }
}
