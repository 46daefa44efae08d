import t from 'tap';
import { promisedAction } from '../../lib/agents/promises.js';

// contract.md § Answers a company can trust: a model reply that promises what no tool did is
// not sent. This labelled set was written before the patterns of lib/agents/promises.ts and is
// asserted whole: a pattern change that breaks one case is a change of behaviour.

interface Case {
  text: string;
  /** The passages the model was given (a promise they support is a fact, not a promise). */
  passages?: string[];
}

const PROMISES: Case[] = [
  // English: a human taking over or contacting the customer
  { text: "I'll transfer you to a human agent now." },
  { text: "I'm transferring you to our support team." },
  { text: 'Let me connect you with a specialist.' },
  { text: 'A colleague will contact you shortly.' },
  { text: 'Someone from our team will get back to you within 24 hours.' },
  { text: 'Our team will call you tomorrow to arrange the repair.' },
  { text: 'One moment, I am connecting you to an operator.' },
  { text: 'Our manager will reach out to you by email.' },
  { text: 'A specialist will be in touch soon.' },
  { text: "I'll have someone call you back." },
  { text: 'I will make sure a human agent follows up with you.' },
  { text: "I'll escalate this to a supervisor right away." },
  { text: 'Please hold while I transfer you.' },
  { text: 'We will get back to you as soon as possible.' },
  { text: "Thanks for waiting! You'll be contacted by our returns team today." },
  { text: 'Sure. Someone will be with you in a minute.' },
  // English: the agent claims to have done what it cannot do
  { text: 'I have forwarded your request to the billing department.' },
  { text: "I've passed on your complaint to the manager." },
  { text: 'I have escalated this to our technical team.' },
  { text: "I'll check with the warehouse and get back to you." },
  { text: 'Let me check on that for you, and I will let you know.' },
  { text: "I've cancelled your order #5512." },
  { text: 'I have refunded the payment to your card.' },
  { text: "Done! I've booked a table for two at 7 pm." },
  { text: 'Your request has been forwarded to our returns team.' },
  { text: "I've scheduled a callback for tomorrow morning." },
  { text: 'I have updated your delivery address.' },
  { text: 'I will let the team know about your issue.' },
  // …even when a passage talks about the same thing: no passage makes "I did it" true.
  { text: "I've cancelled your order.", passages: ['To cancel your order, open My orders and press Cancel.'] },
  // Russian
  { text: 'Я передам ваш вопрос менеджеру.' },
  { text: 'Передала ваш запрос специалисту, ожидайте.' },
  { text: 'Я передал ваш запрос в отдел возвратов.' },
  { text: 'С вами свяжется наш менеджер в течение дня.' },
  { text: 'Вам перезвонят в ближайшее время.' },
  { text: 'Переключаю вас на оператора.' },
  { text: 'Соединяю с менеджером, подождите минутку.' },
  { text: 'Я уточню и вернусь к вам с ответом.' },
  { text: 'Оформила возврат, деньги придут в течение 5 дней.' },
  { text: 'Я отменил ваш заказ.' },
  { text: 'Наш специалист свяжется с вами завтра.' },
  { text: 'Ваша заявка передана в службу поддержки.' },
  { text: 'Сейчас позову коллегу, он вам поможет.' },
  { text: 'Я забронировал для вас столик на 19:00.' },
  { text: 'Мы вам перезвоним в течение часа.' },
  { text: 'Я уточню информацию у склада и напишу вам.' },
  { text: 'Оператор скоро подключится к диалогу.' },
  { text: 'Передаю вас специалисту.' },
  { text: 'Я оформил заявку на возврат.' },
  { text: 'Хорошо, менеджер с вами свяжется.' },
  { text: 'Мы свяжемся с вами, как только товар появится.' },
  // German, Spanish, French
  { text: 'Ich leite Sie an einen Kollegen weiter.' },
  { text: 'Ein Mitarbeiter wird sich in Kürze bei Ihnen melden.' },
  { text: 'Le transfiero con un agente.' },
  { text: 'Un compañero se pondrá en contacto con usted.' },
  { text: 'Je vous transfère à un conseiller.' },
  { text: 'Un conseiller vous recontactera demain.' },
];

const NOT_PROMISES: Case[] = [
  // Facts from the passages, in the passage's words
  { text: 'The courier will call you about an hour before delivery.', passages: ['Our courier calls you about an hour before delivery to agree on the time.'] },
  { text: 'We send you an email with the tracking link as soon as your parcel ships.', passages: ['As soon as your parcel ships, we send you an email with the tracking link.'] },
  { text: 'Our team will contact you within 24 hours after you submit the return form.', passages: ['After you submit the return form, our team will contact you within 24 hours to arrange a pickup.'] },
  { text: 'If a parcel arrives damaged, our team will replace it free of charge.', passages: ['If a parcel arrives damaged, our team replaces it free of charge.'] },
  { text: 'After you place an order, a manager will call you to confirm it.', passages: ['Every order is confirmed by phone: after you place an order, a manager calls you to confirm it.'] },
  { text: 'Курьер позвонит вам за час до доставки.', passages: ['Курьер звонит вам за час до доставки, чтобы согласовать время.'] },
  { text: 'После оформления заказа менеджер свяжется с вами для подтверждения.', passages: ['После оформления заказа с вами свяжется менеджер для подтверждения.'] },
  { text: 'Мы отправим вам письмо с трек-номером, как только посылка будет отправлена.', passages: ['Как только посылка отправлена, мы отправляем вам письмо с трек-номером.'] },
  // Questions to the customer
  { text: 'Would you like me to transfer you to an operator?' },
  { text: 'Do you want a colleague to contact you?' },
  { text: 'Could you tell me your order number so I can look at the delivery options?' },
  { text: 'Хотите, я переключу вас на оператора?' },
  { text: 'Хотите, чтобы с вами связался менеджер?' },
  // Advice: what the customer can do
  { text: 'You can contact our support at support@example.com.' },
  { text: 'If you prefer, you can call us at +1 555 0100 from 9 to 6.' },
  { text: 'Please contact your bank if the payment is still pending.' },
  { text: 'You can ask to speak to an operator at any time by writing "operator".' },
  { text: 'To cancel your order, open My orders and press Cancel.' },
  { text: 'You can request a refund in your account under Orders → Refund.' },
  { text: 'To book a table, use the form on our website.' },
  { text: 'If you would like, I can hand you over to a colleague.' },
  { text: 'Вы можете связаться с поддержкой по телефону 8 800 000-00-00.' },
  { text: 'Чтобы оформить возврат, заполните заявление в личном кабинете.' },
  { text: 'Если посылка не пришла, напишите нам на почту help@example.ru.' },
  { text: 'Вы можете позвонить нам с 9 до 18.' },
  { text: 'Связаться с оператором можно через кнопку «Позвать оператора» в приложении.' },
  { text: 'Уточните, пожалуйста, номер заказа.' },
  // Plain answers, greetings, thanks
  { text: 'Our shop is open from 9 am to 6 pm, Monday to Saturday.' },
  { text: 'Hello! How can I help you today?' },
  { text: "You're welcome! Have a great day." },
  { text: 'Returns are accepted within 30 days of delivery.' },
  { text: 'Refunds are processed within 5 working days after we receive the item.' },
  { text: 'Delivery takes 2–4 working days.' },
  { text: 'Our managers answer phone calls from 9 to 18.' },
  { text: "Sorry, I don't know that." },
  { text: 'Thanks for your message! What would you like to know about our delivery?' },
  { text: 'Здравствуйте! Чем могу помочь?' },
  { text: 'Возврат возможен в течение 14 дней.' },
  { text: 'Пожалуйста! Обращайтесь.' },
  { text: 'Деньги возвращаются на карту в течение 5–10 рабочих дней.' },
  { text: 'Оператор доступен с 9 до 21 по будням.' },
  { text: 'Мы работаем ежедневно с 10 до 20.' },
  { text: 'Доставка по Москве занимает 1–2 дня.' },
  { text: 'Das Geschäft ist von 9 bis 18 Uhr geöffnet.' },
  { text: 'Puede contactarnos por correo electrónico.' },
  { text: 'Vous pouvez nous appeler au 01 23 45 67 89.' },
];

t.test('the labelled set is large enough and holds both languages', async (t) => {
  t.ok(PROMISES.length >= 40, `${PROMISES.length} promises`);
  t.ok(NOT_PROMISES.length >= 40, `${NOT_PROMISES.length} non-promises`);
  const cyrillic = (c: Case) => /[а-я]/i.test(c.text);
  t.ok(PROMISES.filter(cyrillic).length >= 15 && NOT_PROMISES.filter(cyrillic).length >= 15, 'Russian on both sides');
});

t.test('every promise is found, and named by the phrase that promises', async (t) => {
  for (const c of PROMISES) {
    const found = promisedAction(c.text, c.passages ?? []);
    t.ok(found, `promise: ${c.text}`);
    if (found) t.ok(found.length <= 120 && found.trim() === found && found.length > 0, `a short phrase: ${found}`);
  }
});

t.test('no non-promise is taken for one', async (t) => {
  for (const c of NOT_PROMISES) t.equal(promisedAction(c.text, c.passages ?? []), null, `not a promise: ${c.text}`);
});

t.test('a fact is grounded only by a passage that says it', async (t) => {
  const text = 'The courier will call you about an hour before delivery.';
  t.ok(promisedAction(text, []), 'with no passage, the model made it up');
  t.ok(promisedAction(text, ['Opening hours: 9 am to 6 pm.']), 'an unrelated passage grounds nothing');
  t.equal(promisedAction(text, ['Our courier calls you about an hour before delivery.']), null);
  t.ok(promisedAction('A colleague will contact you.', ['A colleague will contact you after you submit the return form.']), 'too few of its words to be the passage\'s fact');
  t.equal(promisedAction('Our team will reply within 24 hours.', ['We reply to every message within 24 hours.']), null, 'who does it may be worded otherwise');
  t.ok(promisedAction('A manager will call you tomorrow about your order.', ['The courier calls you about an hour before delivery.']), 'the same act, another fact');
});

// Found while writing the patterns (not part of the labelled set above): polite phrasings
// that sound like an act but promise nothing.
t.test('polite phrasings are not promises', async (t) => {
  for (const text of [
    "I'd like to inform you that the shop is closed on Sundays.",
    'Let me know if you need anything else.',
    'Our managers will be happy to see you in the shop.',
    'Менеджеры помогут подобрать размер в магазине.',
    "I'll be glad to help with anything else.",
  ]) {
    t.equal(promisedAction(text, []), null, text);
  }
});

t.test('a promise anywhere in a longer reply counts; the phrase is as written, normalised', async (t) => {
  const reply = 'Our shop is open from 9 am to 6 pm. Would you like directions? I’ll transfer you to a colleague who knows the area.';
  t.equal(promisedAction(reply, []), "i'll transfer you");
  t.equal(promisedAction('ПЕРЕКЛЮЧАЮ ВАС НА ОПЕРАТОРА', []), 'переключаю вас');
  t.equal(promisedAction('С вами свЯжется менеджер', []), 'с вами свяжется');
  t.equal(promisedAction('', []), null);
});

t.test('a very long reply is read at its start and its end, quickly', async (t) => {
  const filler = 'Our shop is open from 9 am to 6 pm, Monday to Saturday. '.repeat(40_000);
  const started = performance.now();
  t.equal(promisedAction(`${filler}I'll transfer you to a colleague now.`, []), "i'll transfer you", 'a promise at the end of 2 MB');
  t.equal(promisedAction(`Я передам ваш вопрос менеджеру. ${filler}`, []), 'передам', 'and at the start');
  t.equal(promisedAction(filler, []), null);
  t.ok(performance.now() - started < 500, `three 2 MB replies checked in ${Math.round(performance.now() - started)} ms`);
});
