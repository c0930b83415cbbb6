/**
 * Waits until `register`'s resolver is called or `timeoutMs` passes, whichever is first. The
 * consumer parks its loop or its shutdown this way (a slot frees, a grant arrives) without a
 * timer outliving the wait.
 */
export async function waitForSignal(register: (resolve: () => void) => void, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await new Promise<void>((resolve) => {
    register(resolve);
    timer = setTimeout(resolve, timeoutMs);
  });
  clearTimeout(timer);
}
