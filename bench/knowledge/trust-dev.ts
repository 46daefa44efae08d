/**
 * Development sets of the trust benchmark (issue #27), over the Northwind Coffee help centre
 * (DOCUMENTS in help-centre.ts) and the Volna telecom help centre (TELECOM_DOCUMENTS in
 * telecom.ts), English and Russian: the same kinds as trust-held-out.ts but different
 * messages. This is the set to tune the answer decision on; the held-out sets are not.
 *
 * Written on 2026-11-25 by helper session H4, who had not seen the search, confidence or
 * answer-decision code nor any benchmark result. Every near miss was checked against every
 * section of both languages of its help centre. Do not edit these messages, kinds or labels to
 * suit the decision; if the decision is tuned on them, that is what they are for, but a
 * message that is hard for it stays in.
 */
import type { LabelledTrustQuestion, SmallTalkMessage, UnanswerableQuestion } from './trust-sets.js';

export const DEV_UNANSWERABLE: UnanswerableQuestion[] = [
  // ---- Northwind, English, unrelated ---------------------------------------------------
  { question: "what's the capital of mongolia", base: 'northwind', kind: 'unrelated', language: 'en' },
  { question: 'solve 3x + 7 = 22', base: 'northwind', kind: 'unrelated', language: 'en' },
  { question: 'write a haiku about the sea', base: 'northwind', kind: 'unrelated', language: 'en' },
  { question: 'how do i center a div in css', base: 'northwind', kind: 'unrelated', language: 'en' },
  { question: 'who is the president of france right now', base: 'northwind', kind: 'unrelated', language: 'en' },
  { question: 'how do I cancel my spotify premium subscription', base: 'northwind', kind: 'unrelated', language: 'en' },
  { question: 'what time is it in tokyo', base: 'northwind', kind: 'unrelated', language: 'en' },

  // ---- Northwind, English, near misses -------------------------------------------------
  { question: 'do you sell 5 kg bags of beans', base: 'northwind', kind: 'near_miss', language: 'en' },
  { question: 'can i control the machine from my phone, does it have wifi?', base: 'northwind', kind: 'near_miss', language: 'en' },
  { question: 'how much caffeine is in a cup of your house espresso blend', base: 'northwind', kind: 'near_miss', language: 'en' },
  { question: 'will the machine work in the US on 110 volts', base: 'northwind', kind: 'near_miss', language: 'en' },
  { question: 'do you sell oat milk or syrups as well', base: 'northwind', kind: 'near_miss', language: 'en' },
  { question: 'do you run barista workshops or coffee tastings', base: 'northwind', kind: 'near_miss', language: 'en' },
  { question: 'are the coffee bags recyclable or do they go in general waste', base: 'northwind', kind: 'near_miss', language: 'en' },

  // ---- Northwind, Russian, unrelated ---------------------------------------------------
  { question: 'какая погода завтра в питере', base: 'northwind', kind: 'unrelated', language: 'ru' },
  { question: 'кто написал мастера и маргариту', base: 'northwind', kind: 'unrelated', language: 'ru' },
  { question: 'сколько будет 17% от 3500', base: 'northwind', kind: 'unrelated', language: 'ru' },
  { question: 'напиши поздравление с днём рождения для мамы в стихах', base: 'northwind', kind: 'unrelated', language: 'ru' },
  { question: 'как на js проверить что массив пустой', base: 'northwind', kind: 'unrelated', language: 'ru' },
  { question: 'как вернуть деньги за билет ржд', base: 'northwind', kind: 'unrelated', language: 'ru' },
  { question: 'какой фильм посмотреть вечером', base: 'northwind', kind: 'unrelated', language: 'ru' },

  // ---- Northwind, Russian, near misses -------------------------------------------------
  { question: 'у вас есть дрип-пакеты?', base: 'northwind', kind: 'near_miss', language: 'ru' },
  { question: 'вы на вайлдберриз продаётесь? там удобнее заказать', base: 'northwind', kind: 'near_miss', language: 'ru' },
  { question: 'будет распродажа на чёрную пятницу?', base: 'northwind', kind: 'near_miss', language: 'ru' },
  { question: 'эфиопия у вас кислая или нет, какой профиль вкуса', base: 'northwind', kind: 'near_miss', language: 'ru' },
  { question: 'на кофемашине можно делать горячий шоколад?', base: 'northwind', kind: 'near_miss', language: 'ru' },
  { question: 'пачки у вас перерабатываемые?', base: 'northwind', kind: 'near_miss', language: 'ru' },
  { question: 'вы берёте на работу бариста', base: 'northwind', kind: 'near_miss', language: 'ru' },

  // ---- Volna, English, unrelated -------------------------------------------------------
  { question: 'who scored in the arsenal game yesterday', base: 'volna', kind: 'unrelated', language: 'en' },
  { question: 'convert 30 celsius to fahrenheit', base: 'volna', kind: 'unrelated', language: 'en' },
  { question: 'write me a bedtime story about a dragon', base: 'volna', kind: 'unrelated', language: 'en' },
  { question: 'how do i install node on ubuntu', base: 'volna', kind: 'unrelated', language: 'en' },
  { question: "what's the population of brazil", base: 'volna', kind: 'unrelated', language: 'en' },
  { question: 'how do i unblock someone on whatsapp', base: 'volna', kind: 'unrelated', language: 'en' },
  { question: 'whats your favourite film?', base: 'volna', kind: 'unrelated', language: 'en' },

  // ---- Volna, English, near misses -----------------------------------------------------
  { question: 'do you have a data only sim for my ipad', base: 'volna', kind: 'near_miss', language: 'en' },
  { question: 'which router model do you give with fibre 1000, is it wifi 6?', base: 'volna', kind: 'near_miss', language: 'en' },
  { question: 'do you sell phone cases and chargers in your shops', base: 'volna', kind: 'near_miss', language: 'en' },
  { question: 'does the volna tv app work when im abroad in thailand', base: 'volna', kind: 'near_miss', language: 'en' },
  { question: 'do you have free wifi hotspots in the city for customers', base: 'volna', kind: 'near_miss', language: 'en' },
  { question: 'is there a special plan for gamers with low ping', base: 'volna', kind: 'near_miss', language: 'en' },
  { question: 'do you give a discount if i take mobile and home internet together', base: 'volna', kind: 'near_miss', language: 'en' },

  // ---- Volna, Russian, unrelated -------------------------------------------------------
  { question: 'кто сейчас лидирует в рпл', base: 'volna', kind: 'unrelated', language: 'ru' },
  { question: 'реши уравнение x в квадрате равно 49', base: 'volna', kind: 'unrelated', language: 'ru' },
  { question: 'напиши смешное четверостишие про кота', base: 'volna', kind: 'unrelated', language: 'ru' },
  { question: 'как в excel сделать выпадающий список', base: 'volna', kind: 'unrelated', language: 'ru' },
  { question: 'в каком году распался ссср', base: 'volna', kind: 'unrelated', language: 'ru' },
  { question: 'как оплатить штраф гибдд онлайн', base: 'volna', kind: 'unrelated', language: 'ru' },
  { question: 'ты умеешь рисовать картинки?', base: 'volna', kind: 'unrelated', language: 'ru' },

  // ---- Volna, Russian, near misses -----------------------------------------------------
  { question: 'есть ли спутниковое тв для дачи', base: 'volna', kind: 'near_miss', language: 'ru' },
  { question: 'подключаете видеонаблюдение в квартиру?', base: 'volna', kind: 'near_miss', language: 'ru' },
  { question: 'на тарифе старт есть безлимит на мессенджеры и соцсети?', base: 'volna', kind: 'near_miss', language: 'ru' },
  { question: 'есть ли у вас тариф для gps-трекера собаки', base: 'volna', kind: 'near_miss', language: 'ru' },
  { question: 'как включить услугу кто звонил, пока телефон был выключен', base: 'volna', kind: 'near_miss', language: 'ru' },
  { question: 'как отключить рекламные смс от вас', base: 'volna', kind: 'near_miss', language: 'ru' },
  { question: 'есть ли у вас программа лояльности, баллы за оплату связи', base: 'volna', kind: 'near_miss', language: 'ru' },
];

export const DEV_SMALL_TALK: SmallTalkMessage[] = [
  // English greetings
  { message: 'hi there', kind: 'greeting', language: 'en' },
  { message: 'morning', kind: 'greeting', language: 'en' },
  { message: 'hey hey', kind: 'greeting', language: 'en' },
  { message: 'good day to you', kind: 'greeting', language: 'en' },
  { message: 'hello hello', kind: 'greeting', language: 'en' },
  { message: 'evening!', kind: 'greeting', language: 'en' },
  // English thanks, goodbyes, acknowledgements
  { message: 'thank you', kind: 'thanks', language: 'en' },
  { message: 'many thanks!', kind: 'thanks', language: 'en' },
  { message: 'ok great', kind: 'thanks', language: 'en' },
  { message: 'awesome, thx', kind: 'thanks', language: 'en' },
  { message: 'bye', kind: 'thanks', language: 'en' },
  { message: 'thanks, have a good one', kind: 'thanks', language: 'en' },
  { message: 'alright got it', kind: 'thanks', language: 'en' },
  // Russian greetings
  { message: 'приветик', kind: 'greeting', language: 'ru' },
  { message: 'день добрый', kind: 'greeting', language: 'ru' },
  { message: 'доброго времени суток', kind: 'greeting', language: 'ru' },
  { message: 'здравствуй', kind: 'greeting', language: 'ru' },
  { message: 'вечер добрый!', kind: 'greeting', language: 'ru' },
  // Russian thanks, goodbyes, acknowledgements
  { message: 'огромное спасибо', kind: 'thanks', language: 'ru' },
  { message: 'спасибо, всё ясно', kind: 'thanks', language: 'ru' },
  { message: 'ясно, ок', kind: 'thanks', language: 'ru' },
  { message: 'до свидания', kind: 'thanks', language: 'ru' },
  { message: 'пасиб)', kind: 'thanks', language: 'ru' },
  // Other languages
  { message: 'moin', kind: 'greeting', language: 'de' },
  { message: 'vielen dank', kind: 'thanks', language: 'de' },
  { message: 'muchas gracias', kind: 'thanks', language: 'es' },
  { message: 'salut', kind: 'greeting', language: 'fr' },
  { message: 'доброго ранку', kind: 'greeting', language: 'uk' },
  { message: 'дякую, все зрозуміло', kind: 'thanks', language: 'uk' },
];

export const DEV_GREETED_QUESTIONS: LabelledTrustQuestion[] = [
  // Northwind, English
  { question: 'hi, how long is the password reset link valid?', base: 'northwind', answer: 'account/password' },
  { question: 'hello, what payment terms do business customers get?', base: 'northwind', answer: 'business/account' },
  { question: 'hey! how many points do i need for a voucher', base: 'northwind', answer: 'loyalty/points' },
  { question: 'good morning, how long does a repair under warranty take?', base: 'northwind', answer: 'machines/repair' },
  // Northwind, Russian
  { question: 'здравствуйте, сколько стоит доставка в пункт выдачи?', base: 'northwind', answer: 'dostavka/stoimost' },
  { question: 'привет! на сколько месяцев можно взять рассрочку на кофемашину?', base: 'northwind', answer: 'oplata/rassrochka' },
  { question: 'добрый день, бумажный чек курьер даёт?', base: 'northwind', answer: 'oplata/chek' },
  { question: 'здравствуйте, сколько действует подарочный сертификат?', base: 'northwind', answer: 'bonusy/sertifikaty' },
  // Volna, English
  { question: 'hi! how many devices can watch volna tv at the same time?', base: 'volna', answer: 'tv/devices' },
  { question: 'hello, how much is the 5 gb booster?', base: 'volna', answer: 'plans/extra' },
  { question: 'hey, how many days do I have to dispute a charge on my bill?', base: 'volna', answer: 'billing/charges' },
  { question: 'good evening, on which day does my monthly bill come out?', base: 'volna', answer: 'billing/bill' },
  // Volna, Russian
  { question: 'здравствуйте, через сколько дней можно назначить переход со своим номером?', base: 'volna', answer: 'nomer/mnp' },
  { question: 'привет, сколько стоит пакет путешествие?', base: 'volna', answer: 'tarify/zagranitsa' },
  { question: 'добрый день, какой номер телефона поддержки по домашнему интернету?', base: 'volna', answer: 'svyaz/zayavka' },
  { question: 'доброе утро, можно переоформить номер на мужа?', base: 'volna', answer: 'dogovor/pereoformlenie' },
];
