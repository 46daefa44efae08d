// The Conversations page: the Inbox (#/conversations), or one conversation
// (#/conversations/<id>).
export async function render(root, ctx) {
  if (ctx.params[0]) return (await import('./conversation-view.js')).render(root, ctx, ctx.params[0]);
  return (await import('./inbox.js')).render(root, ctx);
}
