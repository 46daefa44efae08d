// The "Test agent" page in Chromium against the real service: cases that expect phrases and
// cases marked "Must hand off", the results in words (what the agent did, how sure it was,
// where the answer came from, pass or fail and why) and the summary.
import { mkdirSync } from 'node:fs';
import t from 'tap';
import { goTo, launchBrowser, signedInPage } from '../support/browser.js';
import { addDocument } from '../support/knowledge.js';
import { startTestService } from '../support/service.js';

const SHOTS = process.env.DASHBOARD_SCREENSHOTS; // a directory to save screenshots into
if (SHOTS) mkdirSync(SHOTS, { recursive: true });

const svc = await startTestService(t, 'web_test_agent');
const { api } = svc;
const browser = await launchBrowser(t);

t.test('must-hand-off cases beside phrase cases; results say what the agent did and why a case failed', async (t) => {
  const { page, problems, token } = await signedInPage(t, browser, svc, 'Tent Co');
  const kb = (await api('POST', '/api/knowledge-bases', { token, body: { name: 'Help centre', language: 'english' } })).body.knowledgeBase;
  await addDocument(api, token, kb.id, {
    title: 'Shop',
    content: '## Opening hours\n\nWe are open from 9 am to 6 pm, Monday to Saturday.\n\n## Returns\n\nItems can be returned within 30 days with the receipt.',
  });
  t.equal((await api('POST', '/api/agents', { token, body: { name: 'Tent bot', knowledgeBaseId: kb.id } })).status, 201);

  await goTo(page, 'Test agent');
  await page.getByText('tick Must hand off for a question the agent must not answer', { exact: false }).waitFor();
  await page.getByLabel('Agent').selectOption({ label: 'Tent bot' });
  const fill = async (n: number, question: string, phrases: string | null) => {
    if (n > 1) await page.getByRole('button', { name: 'Add case' }).click();
    await page.getByLabel(`Question ${n}`).fill(question);
    if (phrases === null) await page.getByLabel(`Must hand off (case ${n})`).check();
    else await page.getByLabel(`Expected phrases ${n}`).fill(phrases);
  };
  await fill(1, 'When do you open?', '9 am, Saturday');
  await fill(2, 'Who won the football match last night?', null);
  await fill(3, 'When do you open on Saturday?', null);
  // About this business, and the help centre does not say: no answer (a question not about the
  // business at all, like the football one, is declined as out of scope instead).
  await fill(4, 'Do you gift wrap items?', 'gift wrap');
  // A near miss: shares a word with the returns, which do not say ("Are you open on Sunday?" is
  // answered now: "Monday to Saturday" says it).
  await fill(5, 'Can I exchange a damaged item for a new one?', null);
  t.ok(await page.getByLabel('Expected phrases 2').isDisabled(), 'a must-hand-off case has no phrases');
  t.equal(await page.getByLabel('Expected phrases 2').getAttribute('placeholder'), 'the agent must not answer');
  await page.getByLabel('Must hand off (case 3)').uncheck();
  t.notOk(await page.getByLabel('Expected phrases 3').isDisabled(), 'unticked: phrases again');
  await page.getByLabel('Must hand off (case 3)').check();

  await page.getByRole('button', { name: 'Run all' }).click();
  await page.getByText('Test finished: 3 passed, 2 failed.').waitFor();
  t.equal(await page.locator('.summary strong').textContent(), '3 passed, 2 failed · questions to answer: 1 of 2 passed · must hand off: 2 of 3 handed off');

  const rows = page.getByRole('table', { name: 'Test results' }).locator('tbody tr');
  t.equal(await rows.count(), 5);
  const cells = async (i: number) => (await rows.nth(i).locator('td').allInnerTexts()).map((c) => c.replace(/\s+/g, ' ').trim());
  const [question, did, answer, sources, result] = await cells(0);
  t.equal(question, 'When do you open? Expects: 9 am, Saturday');
  t.match(did, /^Answered from the knowledge base confidence \d{1,3} %$/, 'the outcome in words, with the confidence');
  t.equal(answer, 'We are open from 9 am to 6 pm, Monday to Saturday.');
  t.equal(sources, 'Shop');
  t.equal(result, 'Pass The answer has every expected phrase.');

  const football = await cells(1);
  t.equal(football[0], 'Who won the football match last night? Must hand off');
  t.match(football[1], /^Not answered: out of scope/, 'not about this business: declined, no handoff');
  t.notMatch(football[1], /confidence \d+ %$/, 'no confidence badge for a reply the agent did not give');
  t.equal(football[3], '—');
  t.equal(football[4], 'Pass It did not answer, as it must not.');

  const saturday = await cells(2);
  t.match(saturday[1], /^Answered from the knowledge base/);
  t.equal(saturday[4], 'Fail It answered a question it must not answer.');

  const giftWrap = await cells(3);
  t.match(giftWrap[1], /^Not answered: handed to a person/);
  t.equal(giftWrap[4], 'Fail It found no answer.');
  t.equal(await rows.nth(3).locator('.why.doc-error').count(), 1, 'a failure reason stands out');

  const exchange = await cells(4);
  t.match(exchange[1], /^Not answered: handed to a person Closest passage: Shop \(confidence \d+ %\)$/, 'a near miss shows the passage that was not good enough');
  t.equal(exchange[4], 'Pass It did not answer, as it must not.');

  // The confidence's colour: as sure as the API says.
  const evaluation = (await api('GET', `/api/agents/${(await api('GET', '/api/agents', { token })).body.agents[0].id}/evaluations?limit=1`, { token })).body.evaluations[0];
  const confidence = evaluation.cases[0].confidence as number;
  const badge = rows.nth(0).locator('.confidence');
  t.equal(await badge.textContent(), `confidence ${Math.round(confidence * 100)} %`);
  t.match(await badge.getAttribute('class'), confidence >= 0.75 ? /confidence-high/ : confidence >= 0.5 ? /confidence-medium/ : /confidence-low/);
  for (const [i, c] of (evaluation.cases as { confidence: number | null; bestMatch: { title: string; confidence: number } | null }[]).entries()) {
    const closest = rows.nth(i).locator('.closest');
    if (c.confidence === null && c.bestMatch) t.equal(await closest.textContent(), `Closest passage: ${c.bestMatch.title} (confidence ${Math.round(c.bestMatch.confidence * 100)} %)`, `case ${i + 1}: the passage that was not good enough`);
    else t.equal(await closest.count(), 0, `case ${i + 1}: no closest passage`);
  }
  if (SHOTS) await page.screenshot({ path: `${SHOTS}/test-agent.png`, fullPage: true });

  await page.reload();
  await page.getByRole('table', { name: 'Test results' }).waitFor();
  t.equal(await page.locator('.summary strong').textContent(), '3 passed, 2 failed · questions to answer: 1 of 2 passed · must hand off: 2 of 3 handed off', 'the latest run is shown again');
  t.same(problems, []);
});

t.test('a question back: "asked which one", with the articles offered; not an answer', async (t) => {
  const { page, problems, token } = await signedInPage(t, browser, svc, 'Swap Co');
  const kb = (await api('POST', '/api/knowledge-bases', { token, body: { name: 'Help centre', language: 'english' } })).body.knowledgeBase;
  await addDocument(api, token, kb.id, { title: 'Returns', content: 'Items can be returned within 30 days for a refund to your card.' });
  await addDocument(api, token, kb.id, { title: 'Exchanges', content: 'Items can be exchanged within 30 days for another size or colour.' });
  t.equal((await api('POST', '/api/agents', { token, body: { name: 'Swap bot', knowledgeBaseId: kb.id } })).status, 201);

  await goTo(page, 'Test agent');
  await page.getByLabel('Agent').selectOption({ label: 'Swap bot' });
  await page.getByLabel('Question 1').fill('Can I return or exchange items?');
  await page.getByLabel('Must hand off (case 1)').check();
  await page.getByRole('button', { name: 'Add case' }).click();
  await page.getByLabel('Question 2').fill('Can I return or exchange items?');
  await page.getByLabel('Expected phrases 2').fill('30 days');
  await page.getByRole('button', { name: 'Run all' }).click();
  await page.getByText('Test finished: 1 passed, 1 failed.').waitFor();
  const rows = page.getByRole('table', { name: 'Test results' }).locator('tbody tr');
  const cells = async (i: number) => (await rows.nth(i).locator('td').allInnerTexts()).map((c) => c.replace(/\s+/g, ' ').trim());
  const [, did, , sources, result] = await cells(0);
  t.equal(did, 'Not answered yet: asked which one: Returns / Exchanges', 'the options in the order offered');
  t.equal(sources, '—');
  t.equal(result, 'Pass It did not answer, as it must not.');
  const phrased = await cells(1);
  t.equal(phrased[4], 'Fail It asked which article was meant instead of answering.');
  t.same(problems, []);
});
