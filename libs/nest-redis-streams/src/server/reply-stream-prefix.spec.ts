import { resolveServerOptions } from './resolve-options.js';
import { replyStreamName, replyStreamPrefix } from '../keys/index.js';

describe('reply stream names', () => {
  it("puts a client's reply stream under the prefix a server with the same keyPrefix answers on", () => {
    const stream = replyStreamName('app:', 'host-1', '9b2f');
    expect(stream).toBe('app:nrs:replies:host-1:9b2f');
    expect(stream.startsWith(resolveServerOptions({ consumer: 'pod-1', keyPrefix: 'app:' }).replyStreamPrefix)).toBe(true);
    expect(replyStreamPrefix('')).toBe('nrs:replies:');
  });

  it('leaves an explicit server replyStreamPrefix as given', () => {
    expect(
      resolveServerOptions({ consumer: 'pod-1', keyPrefix: 'app:', replyStreamPrefix: 'shared:replies:' }).replyStreamPrefix,
    ).toBe('shared:replies:');
  });
});
