import type { Locator } from 'playwright-core';

/** The widget's bubble for its default greeting, as bubbleTexts reads it (web/widget/widget.js DEFAULT_GREETING). */
export const DEFAULT_GREETING_BUBBLE = 'AssistantHi! How can we help you today?';

/** The widget log's bubbles as read, each message's time left out (it is the clock's); the greeting first. */
export const bubbleTexts = (log: Locator): Promise<string[]> =>
  log.locator('li').evaluateAll((lis) =>
    lis.map((li) => {
      const copy = li.cloneNode(true) as Element;
      copy.querySelectorAll('time').forEach((time) => time.remove());
      return (copy.textContent ?? '').trim();
    }),
  );
