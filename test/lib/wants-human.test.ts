import t from 'tap';
import { wantsHuman } from '../../lib/agents/builtin.js';

// contract.md § Behaviour: the built-in agent hands off when the customer asks for a human
// (`operator`, `human`, `agent`, `оператор`, `человек`), and not when the word means something else.
t.test('the words of contract.md ask for a person, alone or in a request', async (t) => {
  for (const text of ['operator', 'human', 'agent', 'оператор', 'человек', 'Agent!', 'an agent', 'I want an agent', 'need a live agent', 'Оператора позовите', 'Человек!', 'can I talk to a human?']) {
    t.ok(wantsHuman(text), text);
  }
});

t.test('the same words meaning something else do not', async (t) => {
  for (const text of ['travel agent fees', 'is your agent software free?', 'мобильный оператор', 'стол на 10 человек', 'tour operators nearby', 'human resources department']) {
    t.notOk(wantsHuman(text), text);
  }
});

t.test('more ways of asking for a person (issue #42: the bot hands over as asked)', async (t) => {
  for (const text of ['is there anyone I can talk to', 'connect me to support', 'transfer me to an agent', 'can someone call me back?', 'i want to speak to your manager', 'speak to customer service',
    'можно с кем-нибудь поговорить?', 'позовите кого-нибудь живого', 'хочу поговорить с администратором', 'соедините с администратором']) {
    t.ok(wantsHuman(text), text);
  }
  for (const text of ['how do I contact support about a refund?', 'can I book the administrator course?', 'запишите меня к врачу на пятницу', 'call me when the parcel ships']) {
    t.notOk(wantsHuman(text), text);
  }
});
