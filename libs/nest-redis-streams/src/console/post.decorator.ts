import { HttpCode, Post as NestPost, applyDecorators } from '@nestjs/common';

/** A POST that answers 200 with its result (Nest's default 201 says "created", which these are not). */
export const Post = (path: string) => applyDecorators(NestPost(path), HttpCode(200));
