import t from 'tap';
import { cosine, localModel } from '../../lib/knowledge/local-model.js';

// The shipped sentence model, distilled into static vectors (lib/knowledge/local-model.ts).
t.test('texts by meaning: unit vectors, Latin script only, numbers ignored', async (t) => {
  t.ok(await localModel.load(), 'the model loads (distilled once per machine)');
  const v = localModel.embed('Do you accept returns?')!;
  t.equal(v.length, localModel.dims);
  t.ok(Math.abs(cosine(v, v) - 1) < 1e-5, 'a unit vector');
  t.equal(localModel.embed('Можно вернуть товар?'), null, 'Cyrillic is not the model’s to read');
  t.equal(localModel.embed('Есть ли у вас Wi-Fi и TV в номере?'), null, 'nor a Russian text naming Wi-Fi');
  t.equal(localModel.embed('12345 !!!'), null, 'no word, no vector');
  const withNumber = localModel.embed('where is my order 4411?')!;
  t.ok(cosine(withNumber, localModel.embed('where is my order?')!) > 0.999, 'an order number changes nothing');
  const returns = localModel.embed('Returns are accepted within 30 days with a receipt.')!;
  const hours = localModel.embed('We are open Monday to Friday 9:00-19:00.')!;
  t.ok(cosine(v, returns) > cosine(v, hours), 'a question is nearer the passage about it');
  t.ok(cosine(localModel.embed('Do you ship to Lisbon?')!, localModel.embed('We ship to Portugal, Spain and France within 5 days.')!) > 0.3, 'Lisbon is near Portugal');
});
