import t from 'tap';
import { addDocument } from '../support/knowledge.js';
import { signUp, startTestService } from '../support/service.js';

// Issue #42, second round, as a small company's customers meet it ("Test agent" evaluations run the
// answer path a customer's message takes): the words of services find the article that uses
// others, a person asked for by their role is a request for a person, and small talk is greeted.
const svc = await startTestService(t, 'service-words');
const { api } = svc;
const { token } = await signUp(api, 'Harbour Hostel');

async function base(name: string, articles: { title: string; content: string }[]) {
  const kb = (await api('POST', '/api/knowledge-bases', { token, body: { name } })).body.knowledgeBase;
  const ids = new Map<string, number>();
  for (const a of articles) ids.set(a.title, (await addDocument(api, token, kb.id, a)).id);
  const agent = (await api('POST', '/api/agents', { token, body: { name: `${name} bot`, knowledgeBaseId: kb.id } })).body.agent;
  return { agent, ids };
}

type Case = { question: string; decision: string; sources: { documentId: number }[]; outcome: string };
async function ask(agentId: number, ...questions: string[]): Promise<Case[]> {
  const res = await api('POST', `/api/agents/${agentId}/evaluations`, { token, body: { cases: questions.map((question) => ({ question, expect: [] })) } });
  if (res.status !== 201) throw new Error(`evaluation: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.evaluation.cases;
}

const hostel = await base('Hostel', [
  { title: 'Luggage storage', content: 'Guests can leave their luggage at reception on the day they leave, free of charge, until 20:00.' },
  { title: 'Breakfast', content: 'Breakfast is served from 7:00 to 10:00 in the kitchen on the ground floor for 6 EUR.' },
  { title: 'Pets', content: 'Pets are welcome in private rooms for 10 EUR a night.' },
]);
const phones = await base('Ремонт телефонов', [
  { title: 'Замена батареи', content: 'Меняем батарею на iPhone и Android за 40 минут, цена от 1500 рублей.' },
  { title: 'Запись', content: 'Бронирование времени через сайт или по телефону; без брони принимаем в порядке очереди.' },
]);

t.test("a customer's words for what the articles call otherwise find them", async (t) => {
  const [dog] = await ask(hostel.agent.id, 'can I bring my dog?');
  t.match(dog, { decision: 'answer', outcome: 'reply' }, 'dog → pets');
  t.equal(dog?.sources[0]?.documentId, hostel.ids.get('Pets'));
  const [battery, walkIn] = await ask(phones.agent.id, 'телефон не держит заряд, сколько стоит аккумулятор для iphone 11?', 'можно приехать без записи?');
  t.match(battery, { decision: 'answer' }, 'аккумулятор → батарея');
  t.equal(battery?.sources[0]?.documentId, phones.ids.get('Замена батареи'));
  t.match(walkIn, { decision: 'answer' }, 'запись → бронирование');
  t.equal(walkIn?.sources[0]?.documentId, phones.ids.get('Запись'));
});

t.test('a person asked for by their role, or a call back, is handed over; small talk is greeted', async (t) => {
  const cases = await ask(hostel.agent.id, "i'd like to speak to the receptionist please", 'someone call me pls', 'stop the bot');
  for (const c of cases) t.match(c, { decision: 'asked_for_human', outcome: 'handoff' }, c.question);
  const ru = await ask(phones.agent.id, 'соедините с мастером, пожалуйста', 'перезвоните мне по поводу ремонта');
  for (const c of ru) t.match(c, { decision: 'asked_for_human', outcome: 'handoff' }, c.question);
  const talk = await ask(hostel.agent.id, 'thx a lot!', 'good night');
  for (const c of talk) t.match(c, { decision: 'thanks', outcome: 'reply' }, c.question);
  const [staff] = await ask(hostel.agent.id, 'do your staff speak German?');
  t.not(staff!.decision, 'asked_for_human', 'a question that only mentions people is not a request for one');
});
