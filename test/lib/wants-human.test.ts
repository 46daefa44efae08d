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
