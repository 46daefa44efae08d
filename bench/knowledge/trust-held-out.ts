/**
 * Held-out sets of the trust benchmark (issue #27), over the Northwind Coffee help centre
 * (DOCUMENTS in help-centre.ts) and the Volna telecom help centre (TELECOM_DOCUMENTS in
 * telecom.ts), English and Russian: messages the help centre cannot answer, messages that are
 * only small talk, and answerable questions wrapped in a greeting. Never used for tuning: tune
 * on trust-dev.ts only.
 *
 * Written on 2026-11-25 by helper session H4, who had not seen the search, confidence or
 * answer-decision code nor any benchmark result. Every near miss was checked against every
 * section of both languages of its help centre. Do not edit these messages, kinds or labels to
 * suit the decision.
 */
import type { LabelledTrustQuestion, SmallTalkMessage, UnanswerableQuestion } from './trust-sets.js';

export const HELD_OUT_UNANSWERABLE: UnanswerableQuestion[] = [
  // ---- Northwind, English, unrelated ---------------------------------------------------
  { question: 'who won the formula 1 race on sunday', base: 'northwind', kind: 'unrelated', language: 'en' },
  { question: "what's 15% of 240", base: 'northwind', kind: 'unrelated', language: 'en' },
  { question: 'how do i reverse a string in javascript', base: 'northwind', kind: 'unrelated', language: 'en' },
  { question: 'write a limerick about a cat who drinks espresso', base: 'northwind', kind: 'unrelated', language: 'en' },
  { question: 'tell me a joke', base: 'northwind', kind: 'unrelated', language: 'en' },
  { question: 'whats the tallest mountian in africa?', base: 'northwind', kind: 'unrelated', language: 'en' },
  { question: 'my amazon parcel is 3 days late, who should i contact about it', base: 'northwind', kind: 'unrelated', language: 'en' },
  { question: 'how do I delete my instagram account', base: 'northwind', kind: 'unrelated', language: 'en' },
  { question: 'weather in hamburg tomorrow?', base: 'northwind', kind: 'unrelated', language: 'en' },
  { question: 'can you recommend a good book for a long flight, something funny maybe', base: 'northwind', kind: 'unrelated', language: 'en' },
  { question: 'are you a real person or a bot', base: 'northwind', kind: 'unrelated', language: 'en' },
  { question: 'how many calories in a banana', base: 'northwind', kind: 'unrelated', language: 'en' },

  // ---- Northwind, English, near misses -------------------------------------------------
  { question: 'do you guys sell tea too or just coffee', base: 'northwind', kind: 'near_miss', language: 'en' },
  { question: 'is ur coffee organic? fair trade?', base: 'northwind', kind: 'near_miss', language: 'en' },
  { question: 'any nespresso compatible capsules in your range', base: 'northwind', kind: 'near_miss', language: 'en' },
  { question: 'saw the same grinder 20 euros cheaper on amazon, will you price match?', base: 'northwind', kind: 'near_miss', language: 'en' },
  { question: 'can you grind the beans for me before shipping? i only have a french press', base: 'northwind', kind: 'near_miss', language: 'en' },
  { question: 'do you have a shop in munich where I can try the machines before buying one', base: 'northwind', kind: 'near_miss', language: 'en' },
  { question: 'student discount?', base: 'northwind', kind: 'near_miss', language: 'en' },
  { question: "it's a birthday present - can you gift wrap the order and put in a card with a short message?", base: 'northwind', kind: 'near_miss', language: 'en' },
  { question: 'whats the capacity of the water tank in litres', base: 'northwind', kind: 'near_miss', language: 'en' },
  { question: 'can i set up two factor authentication on my account', base: 'northwind', kind: 'near_miss', language: 'en' },
  { question: 'do i get bean points if i refer a freind', base: 'northwind', kind: 'near_miss', language: 'en' },
  { question: 'how long do the beans stay fresh once the bag is opened? fridge or no fridge', base: 'northwind', kind: 'near_miss', language: 'en' },
  { question: 'hi, my brother says you also sell cold brew kits, is that true? would like one for my flat', base: 'northwind', kind: 'near_miss', language: 'en' },
  { question: 'when will the colombian single origin be back in stock', base: 'northwind', kind: 'near_miss', language: 'en' },

  // ---- Northwind, Russian, unrelated ---------------------------------------------------
  { question: 'с каким счётом закончился вчерашний матч спартака', base: 'northwind', kind: 'unrelated', language: 'ru' },
  { question: 'какая столица австралии', base: 'northwind', kind: 'unrelated', language: 'ru' },
  { question: 'сколько будет 48 умножить на 12', base: 'northwind', kind: 'unrelated', language: 'ru' },
  { question: 'напиши стишок про осень и дождь', base: 'northwind', kind: 'unrelated', language: 'ru' },
  { question: 'расскажи анекдот про программистов', base: 'northwind', kind: 'unrelated', language: 'ru' },
  { question: 'как в питоне отсортировать словарь по значению?', base: 'northwind', kind: 'unrelated', language: 'ru' },
  { question: 'какой курс евро на сегодня', base: 'northwind', kind: 'unrelated', language: 'ru' },
  { question: 'как удалить страницу вконтакте навсегда', base: 'northwind', kind: 'unrelated', language: 'ru' },
  { question: 'где отследить посылку с алиэкспресс', base: 'northwind', kind: 'unrelated', language: 'ru' },
  { question: 'посоветуй сериал на выходные', base: 'northwind', kind: 'unrelated', language: 'ru' },
  { question: 'а тебя как зовут вообще?', base: 'northwind', kind: 'unrelated', language: 'ru' },
  { question: 'сколько стоит доставка пиццы в додо', base: 'northwind', kind: 'unrelated', language: 'ru' },

  // ---- Northwind, Russian, near misses -------------------------------------------------
  { question: 'а чай у вас продаётся?', base: 'northwind', kind: 'near_miss', language: 'ru' },
  { question: 'есть кофе без кофеина', base: 'northwind', kind: 'near_miss', language: 'ru' },
  { question: 'капсулы для дольче густо есть в наличии?', base: 'northwind', kind: 'near_miss', language: 'ru' },
  { question: 'где вы обжариваете зерно и какая дата обжарки на пачках', base: 'northwind', kind: 'near_miss', language: 'ru' },
  { question: 'у вас есть магазин в москве куда можно прийти попробовать кофе?', base: 'northwind', kind: 'near_miss', language: 'ru' },
  { question: 'можете смолоть зерно под турку', base: 'northwind', kind: 'near_miss', language: 'ru' },
  { question: 'скидки пенсионерам есть?', base: 'northwind', kind: 'near_miss', language: 'ru' },
  { question: 'можно упаковать заказ как подарок и вложить открытку', base: 'northwind', kind: 'near_miss', language: 'ru' },
  { question: 'как хранить открытую пачку зерна, в холодильнике можно?', base: 'northwind', kind: 'near_miss', language: 'ru' },
  { question: 'есть приложение для заказа на андроид', base: 'northwind', kind: 'near_miss', language: 'ru' },
  { question: 'вы продаёте оптом для кофейни? какие цены если брать от 20 кг в месяц', base: 'northwind', kind: 'near_miss', language: 'ru' },
  { question: 'можно купить восстановленную кофемашину подешевле', base: 'northwind', kind: 'near_miss', language: 'ru' },
  { question: 'сколько стоит самая недорогая кофемашина у вас', base: 'northwind', kind: 'near_miss', language: 'ru' },
  { question: 'добрый день. подскажите, у вас в кофемашинах есть капучинатор или молоко надо взбивать отдельно?', base: 'northwind', kind: 'near_miss', language: 'ru' },

  // ---- Volna, English, unrelated -------------------------------------------------------
  { question: 'how much data does an hour of netflix in 4k use', base: 'volna', kind: 'unrelated', language: 'en' },
  { question: 'who won the tour de france this year', base: 'volna', kind: 'unrelated', language: 'en' },
  { question: 'square root of 144?', base: 'volna', kind: 'unrelated', language: 'en' },
  { question: 'write a python function that checks if a number is prime', base: 'volna', kind: 'unrelated', language: 'en' },
  { question: 'write me a short rap about wifi', base: 'volna', kind: 'unrelated', language: 'en' },
  { question: 'capital of canada', base: 'volna', kind: 'unrelated', language: 'en' },
  { question: 'how do i reset my gmail password', base: 'volna', kind: 'unrelated', language: 'en' },
  { question: 'my vodafone bill is wrong, who do i complain to?', base: 'volna', kind: 'unrelated', language: 'en' },
  { question: 'when does the next iphone come out', base: 'volna', kind: 'unrelated', language: 'en' },
  { question: 'what should i cook for dinner tonight', base: 'volna', kind: 'unrelated', language: 'en' },
  { question: 'honestly i had a really bad day at work', base: 'volna', kind: 'unrelated', language: 'en' },
  { question: 'is it going to snow in vienna this weekend', base: 'volna', kind: 'unrelated', language: 'en' },

  // ---- Volna, English, near misses -----------------------------------------------------
  { question: 'do you sell iphones on monthly payments?', base: 'volna', kind: 'near_miss', language: 'en' },
  { question: 'can you network unlock my phone so it takes a sim from another company', base: 'volna', kind: 'near_miss', language: 'en' },
  { question: 'is it possible to get a static ip on fibre 500', base: 'volna', kind: 'near_miss', language: 'en' },
  { question: 'do you have plans for small businesses, we are 5 people', base: 'volna', kind: 'near_miss', language: 'en' },
  { question: 'student discount on volna plus?', base: 'volna', kind: 'near_miss', language: 'en' },
  { question: 'can I get a landline phone number together with my home internet', base: 'volna', kind: 'near_miss', language: 'en' },
  { question: 'is netflix included in tv premium', base: 'volna', kind: 'near_miss', language: 'en' },
  { question: 'can i pick a memorable number when i sign up', base: 'volna', kind: 'near_miss', language: 'en' },
  { question: 'how do i set up voicemail', base: 'volna', kind: 'near_miss', language: 'en' },
  { question: 'how to forward my calls to another number while im on holiday', base: 'volna', kind: 'near_miss', language: 'en' },
  { question: 'can i use my phone as a hotspot on volna start or is tethering blocked', base: 'volna', kind: 'near_miss', language: 'en' },
  { question: 'do u offer phone insurance? cracked my screen again lol', base: 'volna', kind: 'near_miss', language: 'en' },
  { question: 'how do i block calls from one annoying number', base: 'volna', kind: 'near_miss', language: 'en' },
  { question: "hello, i'm thinking of joining you for mobile. do you give new customers a free phone or some kind of welcome bonus?", base: 'volna', kind: 'near_miss', language: 'en' },

  // ---- Volna, Russian, unrelated -------------------------------------------------------
  { question: 'кто выиграл чемпионат мира по хоккею', base: 'volna', kind: 'unrelated', language: 'ru' },
  { question: 'сколько будет 2 в десятой степени', base: 'volna', kind: 'unrelated', language: 'ru' },
  { question: 'напиши sql запрос который выберет всех пользователей старше 30', base: 'volna', kind: 'unrelated', language: 'ru' },
  { question: 'сочини стих про интернет и любовь', base: 'volna', kind: 'unrelated', language: 'ru' },
  { question: 'какая самая длинная река в мире', base: 'volna', kind: 'unrelated', language: 'ru' },
  { question: 'как восстановить пароль от госуслуг', base: 'volna', kind: 'unrelated', language: 'ru' },
  { question: 'как приготовить сырники чтобы не разваливались', base: 'volna', kind: 'unrelated', language: 'ru' },
  { question: 'мне скучно, давай поболтаем', base: 'volna', kind: 'unrelated', language: 'ru' },
  { question: 'какой курс доллара к рублю', base: 'volna', kind: 'unrelated', language: 'ru' },
  { question: 'у мтс сегодня авария? у мамы интернет не работает', base: 'volna', kind: 'unrelated', language: 'ru' },
  { question: 'почему небо голубое', base: 'volna', kind: 'unrelated', language: 'ru' },
  { question: 'ты нейросеть? какая модель', base: 'volna', kind: 'unrelated', language: 'ru' },

  // ---- Volna, Russian, near misses -----------------------------------------------------
  { question: 'можно ли у вас купить телефон в рассрочку', base: 'volna', kind: 'near_miss', language: 'ru' },
  { question: 'как подключить голосовую почту', base: 'volna', kind: 'near_miss', language: 'ru' },
  { question: 'как сделать переадресацию звонков на другой номер', base: 'volna', kind: 'near_miss', language: 'ru' },
  { question: 'хочу красивый номер с одинаковыми цифрами, сколько стоит?', base: 'volna', kind: 'near_miss', language: 'ru' },
  { question: 'есть тарифы для юрлиц? у нас 10 сотрудников', base: 'volna', kind: 'near_miss', language: 'ru' },
  { question: 'статический айпи можно подключить к домашнему интернету', base: 'volna', kind: 'near_miss', language: 'ru' },
  { question: 'входит ли ivi или кинопоиск в пакет кино', base: 'volna', kind: 'near_miss', language: 'ru' },
  { question: 'как заблокировать спам звонки с незнакомых номеров', base: 'volna', kind: 'near_miss', language: 'ru' },
  { question: 'есть ли у вас страховка телефона от разбитого экрана', base: 'volna', kind: 'near_miss', language: 'ru' },
  { question: 'можно подключить мой номер ещё и на apple watch чтобы звонить без телефона', base: 'volna', kind: 'near_miss', language: 'ru' },
  { question: 'можно раздавать интернет с телефона на ноут на тарифе старт?', base: 'volna', kind: 'near_miss', language: 'ru' },
  { question: 'когда вы отключите 3g', base: 'volna', kind: 'near_miss', language: 'ru' },
  { question: 'во сколько закрывается ваш салон на ленина', base: 'volna', kind: 'near_miss', language: 'ru' },
  { question: 'здравствуйте, а у вас есть акции для новых абонентов? подруга говорила что первые три месяца бесплатно', base: 'volna', kind: 'near_miss', language: 'ru' },
];

export const HELD_OUT_SMALL_TALK: SmallTalkMessage[] = [
  // English greetings
  { message: 'hi', kind: 'greeting', language: 'en' },
  { message: 'hello!', kind: 'greeting', language: 'en' },
  { message: 'good morning', kind: 'greeting', language: 'en' },
  { message: 'hey there :)', kind: 'greeting', language: 'en' },
  { message: 'hiya', kind: 'greeting', language: 'en' },
  { message: 'Good evening', kind: 'greeting', language: 'en' },
  { message: 'hey', kind: 'greeting', language: 'en' },
  { message: 'hello there', kind: 'greeting', language: 'en' },
  { message: 'good afternoon!', kind: 'greeting', language: 'en' },
  { message: 'heyyy', kind: 'greeting', language: 'en' },
  // English thanks, goodbyes, acknowledgements
  { message: 'thanks, that helps', kind: 'thanks', language: 'en' },
  { message: 'ok thank you bye', kind: 'thanks', language: 'en' },
  { message: 'thank you so much!', kind: 'thanks', language: 'en' },
  { message: 'thx', kind: 'thanks', language: 'en' },
  { message: 'great, thanks a lot', kind: 'thanks', language: 'en' },
  { message: 'cheers', kind: 'thanks', language: 'en' },
  { message: 'perfect thank you', kind: 'thanks', language: 'en' },
  { message: 'got it, thanks', kind: 'thanks', language: 'en' },
  { message: 'ok', kind: 'thanks', language: 'en' },
  { message: "that's all, have a nice day", kind: 'thanks', language: 'en' },
  { message: 'ty :)', kind: 'thanks', language: 'en' },
  // Russian greetings
  { message: 'привет', kind: 'greeting', language: 'ru' },
  { message: 'добрый вечер', kind: 'greeting', language: 'ru' },
  { message: 'Здравствуйте', kind: 'greeting', language: 'ru' },
  { message: 'добрый день!', kind: 'greeting', language: 'ru' },
  { message: 'доброе утро', kind: 'greeting', language: 'ru' },
  { message: 'здрасте', kind: 'greeting', language: 'ru' },
  { message: 'приветствую', kind: 'greeting', language: 'ru' },
  { message: 'хай', kind: 'greeting', language: 'ru' },
  // Russian thanks, goodbyes, acknowledgements
  { message: 'спасибо большое!', kind: 'thanks', language: 'ru' },
  { message: 'понятно, спасибо', kind: 'thanks', language: 'ru' },
  { message: 'спасибо', kind: 'thanks', language: 'ru' },
  { message: 'благодарю', kind: 'thanks', language: 'ru' },
  { message: 'спс', kind: 'thanks', language: 'ru' },
  { message: 'ок, спасибо, до свидания', kind: 'thanks', language: 'ru' },
  { message: 'всё понятно', kind: 'thanks', language: 'ru' },
  { message: 'отлично, спасибо за помощь', kind: 'thanks', language: 'ru' },
  // Other languages
  { message: 'hallo', kind: 'greeting', language: 'de' },
  { message: 'guten tag', kind: 'greeting', language: 'de' },
  { message: 'danke schön', kind: 'thanks', language: 'de' },
  { message: 'hola', kind: 'greeting', language: 'es' },
  { message: 'buenos días', kind: 'greeting', language: 'es' },
  { message: 'gracias!', kind: 'thanks', language: 'es' },
  { message: 'bonjour', kind: 'greeting', language: 'fr' },
  { message: 'merci beaucoup', kind: 'thanks', language: 'fr' },
  { message: 'привіт', kind: 'greeting', language: 'uk' },
  { message: 'дякую!', kind: 'thanks', language: 'uk' },
];

export const HELD_OUT_GREETED_QUESTIONS: LabelledTrustQuestion[] = [
  // Northwind, English
  { question: 'hi! how long is the klarna payment window?', base: 'northwind', answer: 'payment/klarna' },
  { question: 'hello, is the machine delivered to my door or to a locker?', base: 'northwind', answer: 'shipping/packstation' },
  { question: 'good morning :) how many days do i have to send back unopened beans', base: 'northwind', answer: 'returns/policy' },
  { question: 'hey there, does the subscription ship free?', base: 'northwind', answer: 'subscription/how' },
  { question: 'hi, what does error E01 mean', base: 'northwind', answer: 'machines/error' },
  { question: 'good evening, how long are gift cards valid for?', base: 'northwind', answer: 'loyalty/giftcards' },
  // Northwind, Russian
  { question: 'здравствуйте, какой код нужен чтобы забрать посылку из сдэка?', base: 'northwind', answer: 'dostavka/pvz' },
  { question: 'привет, а курьер звонит перед приездом?', base: 'northwind', answer: 'dostavka/kurer' },
  { question: 'добрый день! сколько длится программа очистки от накипи?', base: 'northwind', answer: 'garantiya/nakip' },
  { question: 'добрый вечер, бонусами можно оплатить сколько процентов заказа?', base: 'northwind', answer: 'bonusy/spisanie' },
  { question: 'здравствуйте, обслуживание входит в аренду кофемашины для офиса?', base: 'northwind', answer: 'yurlica/arenda' },
  { question: 'приветик) сколько идёт посылка в ереван?', base: 'northwind', answer: 'dostavka/strany' },
  // Volna, English
  { question: 'hi there, how much is a replacement sim if i lose mine?', base: 'volna', answer: 'sim/lost' },
  { question: 'hello! what does the world day pass include?', base: 'volna', answer: 'roaming/world' },
  { question: 'good afternoon, how do i switch off roaming so i dont get charged abroad', base: 'volna', answer: 'roaming/onoff' },
  { question: "hey, what's the minimum top up for prepaid?", base: 'volna', answer: 'billing/topup' },
  { question: 'hi, how much is tv basic a month?', base: 'volna', answer: 'tv/packages' },
  { question: 'morning! how long do recordings stay in the cloud', base: 'volna', answer: 'tv/replay' },
  // Volna, Russian
  { question: 'здравствуйте, сколько стоит аренда роутера?', base: 'volna', answer: 'dom/router' },
  { question: 'добрый день, на сколько дней даётся обещанный платёж?', base: 'volna', answer: 'balans/obeshchanny' },
  { question: 'привет! сколько стоит пакет детский?', base: 'volna', answer: 'televidenie/pakety' },
  { question: 'здравствуйте, на какой срок можно добровольно заблокировать номер?', base: 'volna', answer: 'dogovor/blokirovka' },
  { question: 'доброе утро, сколько номеров можно объединить в семейную группу?', base: 'volna', answer: 'profil/semya' },
  { question: 'добрый вечер, монтажник бесплатно протянет кабель в квартиру?', base: 'volna', answer: 'dom/podklyuchenie' },
];
