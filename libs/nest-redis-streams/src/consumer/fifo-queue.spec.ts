import { FifoQueue } from './fifo-queue.js';

describe('FifoQueue', () => {
  it('returns items in insertion order across compactions, and undefined when empty', () => {
    const queue = new FifoQueue<number>();
    const out: number[] = [];
    let next = 0;
    // Interleave pushes and shifts so the dead front grows past the compaction threshold.
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 100; i++) queue.push(next++);
      for (let i = 0; i < 60; i++) out.push(queue.shift()!);
    }
    while (queue.size > 0) out.push(queue.shift()!);
    expect(out).toEqual(Array.from({ length: next }, (_, i) => i));
    expect(queue.shift()).toBeUndefined();
    queue.push(7);
    queue.clear();
    expect(queue.size).toBe(0);
  });
});
