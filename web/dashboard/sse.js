// Server-Sent Events over fetch(): EventSource cannot send an Authorization header, and the
// token must never go into the URL. Reconnects (with Last-Event-ID) until aborted.
import { authFetch } from './api.js';
import { h } from './dom.js';

/** Parses an SSE byte stream; calls onEvent({ type, data, id }) per dispatched event. */
export async function readSse(body, onEvent, onRetry) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let data = [];
  let type = '';
  let id = null;
  const line = (text) => {
    if (text === '') {
      if (data.length) onEvent({ type: type || 'message', data: data.join('\n'), id });
      data = [];
      type = '';
      return;
    }
    if (text.startsWith(':')) return;
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') type = value;
    else if (field === 'id' && !value.includes('\0')) id = value;
    else if (field === 'retry' && /^\d+$/.test(value)) onRetry?.(Number(value));
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    // Split on CRLF, CR or LF; a trailing CR may be the first half of a CRLF, so keep it.
    let m;
    const re = /\r\n|\r(?!$)|\n/g;
    let start = 0;
    while ((m = re.exec(buffer))) {
      line(buffer.slice(start, m.index));
      start = m.index + m[0].length;
    }
    buffer = buffer.slice(start);
  }
}

/**
 * Follows an SSE endpoint until `signal` aborts. onState('open' | 'reconnecting' | 'error', err?)
 * reports the connection; onEvent gets each event. 4xx answers other than 401 (refreshed by
 * authFetch) stop the stream: reconnecting would not help.
 */
export function followSse(path, { signal, onEvent, onState }) {
  let retryMs = 2000;
  let lastId = null;
  let failures = 0;
  // The abort listener goes with the wait: a page that reconnects for hours does not pile them up on its signal.
  const wait = (ms) =>
    new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
    });

  (async () => {
    while (!signal.aborted) {
      try {
        const headers = { accept: 'text/event-stream' };
        if (lastId !== null) headers['last-event-id'] = lastId;
        const res = await authFetch(path, { headers, signal });
        if (!res.ok) {
          let message = `The live stream answered ${res.status}.`;
          try {
            message = (await res.json()).error?.message ?? message;
          } catch {
            /* not JSON */
          }
          if (res.status >= 400 && res.status < 500) {
            onState?.('error', new Error(message));
            return;
          }
          throw new Error(message);
        }
        failures = 0;
        onState?.('open');
        await readSse(
          res.body,
          (ev) => {
            if (ev.id !== null) lastId = ev.id;
            onEvent(ev);
          },
          (ms) => (retryMs = ms),
        );
      } catch (err) {
        if (signal.aborted || err?.name === 'AbortError') return;
        if (err?.status === 401) {
          onState?.('error', err);
          return;
        }
      }
      if (signal.aborted) return;
      failures++;
      onState?.('reconnecting');
      await wait(Math.min(retryMs * 2 ** Math.min(failures - 1, 3), 15_000));
    }
  })();
}

/**
 * The "Live" line of a page that follows a stream: `el` to show, `onState` for followSse.
 * `onOpen` runs at each (re)connection, to catch up on what was missed meanwhile.
 */
export function liveStatus(onOpen) {
  const el = h('span', { class: 'live muted small', role: 'status' }, 'Connecting…');
  const onState = (s, err) => {
    if (s === 'open') {
      el.textContent = 'Live';
      el.classList.add('on');
      onOpen();
    } else {
      el.classList.remove('on');
      el.textContent = s === 'reconnecting' ? 'Reconnecting…' : `Live updates unavailable${err?.message ? `: ${err.message}` : ''}`;
    }
  };
  return { el, onState };
}
