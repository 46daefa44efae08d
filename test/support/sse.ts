/** One Server-Sent Event as a test reads it: its name and its data, parsed as JSON. */
export interface SseEvent {
  event: string;
  data: any;
}

/**
 * Reads a Server-Sent Events body as it comes (a fetch answer's `body`), handing each event
 * (a block with `event:` and `data:` lines) to `onEvent`; comments (`: heartbeat`) and the
 * `retry:` line are passed over. Resolves true when the server ended the body, false when the
 * client hung up (the fetch aborted).
 */
export async function readEvents(body: NonNullable<Response['body']>, onEvent: (e: SseEvent) => void): Promise<boolean> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return true;
      buffer += value;
      let cut;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (event && data !== undefined) onEvent({ event, data: JSON.parse(data) });
      }
    }
  } catch {
    return false;
  }
}
