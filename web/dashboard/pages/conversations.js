// The Conversations page: the Inbox (#/conversations), or one conversation
// (#/conversations/<id>) with the Inbox list beside it. The list stays while the reader goes
// from conversation to conversation (its view, search and scroll kept): only the conversation
// is drawn anew. Under 1200 px the list is hidden (styles.css) and the page scrolls as a whole.
import { h, replace } from '../dom.js';

export async function render(root, ctx) {
  if (!ctx.params[0]) return (await import('./inbox.js')).render(root, ctx);
  const [inbox, view] = await Promise.all([import('./inbox.js'), import('./conversation-view.js')]);
  const list = h('aside', { class: 'split-list', 'aria-label': 'Inbox list' });
  const conversation = h('div', { class: 'split-conversation' });

  /** The open conversation's own controller: switching ends its streams, leaving the list's. */
  let opened = null;
  async function open(id) {
    opened?.abort();
    const controller = new AbortController();
    opened = controller;
    // In the document before it is drawn: the messages pane scrolls to the newest as soon as they come.
    const page = h('div', { class: 'conversation-page' });
    replace(conversation, page);
    try {
      await view.render(page, { ...ctx, signal: controller.signal }, id);
    } catch (err) {
      if (err?.name === 'AbortError' || opened !== controller) return;
      replace(conversation, h('h1', {}, `Conversation ${id}`), h('p', { role: 'alert', class: 'error' }, err?.message ?? String(err)));
    }
  }
  ctx.signal.addEventListener('abort', () => opened?.abort(), { once: true });

  const switchTo = (id) => {
    // The address names the open conversation (a reload or a shared link opens it) without a
    // navigation: the shell would draw the list anew. Back and Forward navigate as usual.
    history.pushState(null, '', `#/conversations/${encodeURIComponent(id)}`);
    open(id);
  };
  root.classList.add('split');
  root.append(list, conversation);
  await Promise.all([inbox.render(list, { ...ctx, beside: { current: ctx.params[0], open: switchTo } }), open(ctx.params[0])]);
}
