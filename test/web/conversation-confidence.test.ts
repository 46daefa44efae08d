// The conversation view shows, next to each agent reply answered from the knowledge base, how
// sure the agent was ("confidence 82 %", coloured), and nothing beside replies without one
// (small talk, the polite line for a question not about this business). A real conversation: the Chat2Desk stand-in, a worker with
// the built-in agent, in Chromium against the real service.
import { mkdirSync } from 'node:fs';
import t from 'tap';
import { launchBrowser, signedInPage } from '../support/browser.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { addDocument } from '../support/knowledge.js';
import { startTestService } from '../support/service.js';
import { createHelpdeskIntegration, eventually, messageEnvelope, publishEnvelope, startTestWorker } from '../support/worker.js';

const SHOTS = process.env.DASHBOARD_SCREENSHOTS; // a directory to save screenshots into
if (SHOTS) mkdirSync(SHOTS, { recursive: true });

const svc = await startTestService(t, 'web_confidence');
const { api } = svc;
const helpdesk = await startChat2DeskStub(t);
await startTestWorker(t, svc);
const browser = await launchBrowser(t);

interface Message {
  role: string;
  text: string;
  confidence: number | null;
}

t.test('agent replies show their confidence in words and colour; other messages show none', async (t) => {
  const { page, problems, token, companyId } = await signedInPage(t, browser, svc, 'Tent Co');
  const kb = (await api('POST', '/api/knowledge-bases', { token, body: { name: 'Help centre', language: 'english' } })).body.knowledgeBase;
  await addDocument(api, token, kb.id, {
    title: 'Shop',
    content: '## Opening hours\n\nWe are open from 9 am to 6 pm, Monday to Saturday.\n\n## Returns\n\nItems can be returned within 30 days with the receipt.',
  });
  // A low threshold lets a doubtful passage through, so both colours show; the fallback text keeps the bot on
  // should a question find no answer.
  const agent = (await api('POST', '/api/agents', { token, body: { name: 'Tent bot', knowledgeBaseId: kb.id, onNoAnswer: 'fallback', relevanceThreshold: 0.2 } })).body.agent;
  const integration = await createHelpdeskIntegration(svc, { token, companyId }, helpdesk, 'Desk', agent.id);

  // "Are you open on Sunday?" is answered surely now ("Monday to Saturday" says it); a question that shares
  // only "returned items" with the article is answered from it, doubtfully (it does not say who pays the delivery). The football question is not about this
  // business: a polite line, no answer from the knowledge (contract.md § Answers that find what the help centre says).
  const questions = ['When do you open?', 'Do you refund the delivery fee for returned items?', 'Who won the football match last night?', 'thanks, that helps'];
  let conversationId = 0;
  let messages: Message[] = [];
  for (const [i, question] of questions.entries()) {
    await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'client-9', question));
    messages = await eventually(async () => {
      const conv = (await api('GET', '/api/conversations', { token })).body.conversations?.find((c: { clientId: string }) => c.clientId === 'client-9');
      if (!conv) return null;
      conversationId = conv.id;
      const list: Message[] = (await api('GET', `/api/conversations/${conv.id}/messages`, { token })).body.messages;
      return list.filter((m) => m.role === 'agent').length === i + 1 ? list : null;
    }, 20_000, `the answer to "${question}"`);
  }
  const replies = messages.filter((m) => m.role === 'agent');
  const [sure, doubtful, declined, thanks] = replies;
  t.ok(sure!.confidence! >= 0.75, `a clear answer: ${sure!.confidence}`);
  t.ok(doubtful!.confidence! < 0.5, `a doubtful answer: ${doubtful!.confidence}`);
  t.match(doubtful!.text, /Items can be returned within 30 days/, 'answered from the returns, doubtfully');
  t.equal(declined!.confidence, null, 'the out-of-scope line has no confidence');
  t.equal(thanks!.confidence, null, 'nor has small talk');

  await page.goto(`${svc.url}/#/conversations/${conversationId}`);
  const shown = page.locator('.msg.from-agent');
  await shown.nth(3).waitFor();
  t.equal(await shown.count(), 4);
  const badge = (i: number) => shown.nth(i).locator('.msg-meta .confidence');
  t.equal(await badge(0).textContent(), `confidence ${Math.round(sure!.confidence! * 100)} %`, 'in words a support lead reads');
  t.match(await badge(0).getAttribute('class'), /\bconfidence-high\b/, 'a sure answer is green');
  t.match(await badge(0).getAttribute('title'), /How sure the agent is that its source answers the question/);
  t.equal(await badge(1).textContent(), `confidence ${Math.round(doubtful!.confidence! * 100)} %`);
  t.match(await badge(1).getAttribute('class'), /\bconfidence-low\b/, 'a doubtful one is red');
  t.equal(await badge(2).count(), 0, 'nothing beside the out-of-scope line');
  t.equal(await badge(3).count(), 0, 'nothing beside a reply to thanks');
  t.equal(await page.locator('.msg.from-customer .confidence').count(), 0, 'nothing beside customer messages');
  t.match(await shown.nth(0).locator('.msg-meta').textContent(), /^Agent · .+ · confidence \d+ %$/);
  if (SHOTS) await page.screenshot({ path: `${SHOTS}/conversation-confidence.png`, fullPage: true });
  t.same(problems, []);
});
