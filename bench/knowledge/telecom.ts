/**
 * A second, independent labelled retrieval set for the knowledge benchmark: the help centre
 * of a made-up mobile and home-internet provider (Volna) in English and in Russian, and
 * questions a customer might ask in a chat, phrased in their own words, some with typos.
 * Each question names the one section that answers it (`doc/section`).
 *
 * Written on 2026-11-23 by someone who had not seen the ranking code, its results or the
 * questions it misses, to measure whether ranking improvements generalise. Do not edit the
 * documents, questions or labels to suit the ranking.
 */
import type { HelpDocument, LabelledQuestion } from './help-centre.js';

export const TELECOM_DOCUMENTS: HelpDocument[] = [
  {
    key: 'plans',
    language: 'en',
    title: 'Mobile plans',
    sections: {
      range: { heading: 'Our mobile plans', text: 'Volna Start costs 12 euros a month and includes 10 GB of data. Volna Plus costs 20 euros with 30 GB, and Volna Unlimited costs 30 euros with no data cap. All three plans include unlimited calls and texts to national numbers and have no minimum term.' },
      change: { heading: 'Changing your plan', text: 'You can move to another plan at any time in the Volna app under My plan. An upgrade starts immediately and you pay the difference for the rest of the month. A downgrade starts on the first day of your next billing month, and you can downgrade only once per month.' },
      extra: { heading: 'Running out of data', text: 'We send you a text when you have used 80 percent and 100 percent of your data. After that you can keep browsing at a reduced speed of 64 kbit/s at no cost, or buy a 5 GB booster for 5 euros in the app. Boosters are valid until the end of the billing month.' },
    },
  },
  {
    key: 'roaming',
    language: 'en',
    title: 'Roaming',
    sections: {
      eu: { heading: 'Roaming in the EU', text: 'In all EU countries and in Norway, Iceland and Liechtenstein you use your plan just as you do at home, at no extra cost. On Volna Unlimited, fair use allows up to 25 GB of data per month in these countries; after that, each extra GB costs 2 euros.' },
      world: { heading: 'Travelling outside the EU', text: 'In the UK, Switzerland, Turkey and the USA the World Day Pass applies: 6 euros for each day you use your phone, including 1 GB of data and 60 minutes of calls. In all other countries data costs 10 euros per 100 MB. The day pass starts automatically with your first call or data use that day.' },
      onoff: { heading: 'Turning roaming on or off', text: 'Roaming is switched on by default on monthly plans. Prepaid customers must switch it on in the app under Settings > Roaming before travelling. To avoid any charges abroad, switch roaming off in the app and also turn off Data roaming in your phone settings.' },
    },
  },
  {
    key: 'sim',
    language: 'en',
    title: 'SIM and eSIM',
    sections: {
      esim: { heading: 'Getting an eSIM', text: 'Order an eSIM in the Volna app under SIM > Switch to eSIM. You receive a QR code by email within 15 minutes; scan it in your phone settings while connected to Wi-Fi. Your plastic SIM stops working as soon as the eSIM is active. The first two eSIM profiles each year are free, further ones cost 5 euros.' },
      lost: { heading: 'Lost or stolen SIM', text: 'If your phone or SIM card is lost or stolen, block the SIM immediately in the app or by calling 1212 from any phone. A replacement SIM costs 10 euros and is posted within two working days, or is free in a Volna shop. You keep your number and your remaining balance.' },
      pin: { heading: 'PIN and PUK', text: 'Your SIM comes with the PIN 0000, which you can change in your phone settings. After three wrong PIN entries the SIM is locked and you need the eight-digit PUK, shown on the card holder and in the app under SIM details. After ten wrong PUK entries the SIM is permanently blocked and must be replaced.' },
    },
  },
  {
    key: 'porting',
    language: 'en',
    title: 'Keeping your number',
    sections: {
      in: { heading: 'Bringing your number to Volna', text: 'To move your number from another provider, ask your current provider for a switching code. Enter the code when you order your Volna SIM; the code is valid for 30 days. Do not cancel your old contract yourself: it ends automatically when the number moves to us.' },
      day: { heading: 'On the switching day', text: 'We text you the switching date, normally the next working day after your new SIM arrives. Between 8 am and 12 noon on that day your old SIM stops working; then put in the Volna SIM and restart the phone. Calls and texts may not work for up to two hours during the switch.' },
      out: { heading: 'Taking your number to another provider', text: 'Request a switching code in the app under Account > Leave Volna or by texting CODE to 1212. The code is valid for 30 days, and your new provider uses it to move the number. Your Volna contract ends on the switching day; if you are still in a minimum term, an early termination fee applies.' },
    },
  },
  {
    key: 'billing',
    language: 'en',
    title: 'Bills and payments',
    sections: {
      bill: { heading: 'Your monthly bill', text: 'Your bill is issued on the first day of each month and appears in the app as a PDF. It shows your plan fee for the coming month and any extra charges from the previous month, such as calls abroad or data boosters. Your first bill is usually higher because it also covers part of the month you joined.' },
      pay: { heading: 'Paying your bill', text: 'Bills are paid by direct debit on the 10th of the month; you can also pay by card in the app. If a direct debit fails, we try again after five days and add a 5 euro fee. If a bill is still unpaid after 30 days, we restrict outgoing calls and data until it is paid.' },
      topup: { heading: 'Prepaid top-up', text: 'Top up your prepaid balance in the app by card, with vouchers sold in supermarkets and petrol stations, or set up auto top-up, which adds 10 euros whenever your balance falls below 5 euros. The minimum top-up is 10 euros. Your balance stays valid for 12 months after your last top-up.' },
      charges: { heading: 'Unexpected charges', text: 'Charges for premium-rate numbers or for services bought through your phone bill appear under Third-party services on your bill. You can block these services free of charge in the app under Spending controls. To dispute a charge, contact us within 60 days of the bill date.' },
    },
  },
  {
    key: 'home',
    language: 'en',
    title: 'Home internet',
    sections: {
      availability: { heading: 'Checking availability', text: 'Enter your address on our website to see which connection is available at your home. Fibre offers up to 1 Gbit/s; where there is no fibre yet, we offer DSL with up to 100 Mbit/s. The check also shows the earliest possible installation date.' },
      plans: { heading: 'Home internet plans', text: 'Fibre 100 costs 30 euros a month, Fibre 500 costs 40 euros and Fibre 1000 costs 55 euros. All home internet plans have a minimum term of 24 months and include a Wi-Fi router at no extra cost. There is no data limit on any plan.' },
      install: { heading: 'Installation appointment', text: 'After you order, a technician installs the connection within ten working days. You choose a morning slot from 8 am to 12 noon or an afternoon slot from 12 to 5 pm, and someone aged 18 or over must be at home. Standard installation is free; each extra network socket costs 49 euros.' },
      moving: { heading: 'Moving home', text: 'Tell us about your move at least four weeks in advance in the app under Home > Moving. If Volna home internet is available at your new address, we move your service free of charge. If it is not available there, you can end the contract without an early termination fee.' },
    },
  },
  {
    key: 'router',
    language: 'en',
    title: 'Router and Wi-Fi',
    sections: {
      setup: { heading: 'Setting up the router', text: 'Connect the WAN port of the router to the fibre box on the wall with the grey cable, then plug in the power. After about ten minutes the light turns steady white and the router is online. The Wi-Fi name and password are printed on the sticker under the router.' },
      slow: { heading: 'Slow or unstable Wi-Fi', text: 'Place the router in a central, open spot, not in a cupboard and away from microwaves. Connect to the 5 GHz network near the router for speed and to the 2.4 GHz network for range through walls. For large homes we rent mesh extenders for 5 euros a month each.' },
      wifipass: { heading: 'Changing the Wi-Fi name and password', text: 'Open the Volna app and go to Home > Wi-Fi, or log in to the router at 192.168.1.1 with the admin password from the sticker. After you change the network name or password, all your devices must reconnect with the new details.' },
      lights: { heading: 'What the router lights mean', text: 'A steady white light means everything works. A blinking red light means the router gets no signal from the line: check the cable to the fibre box and restart the router. A blinking orange light means a software update is running; do not unplug the router until it stops.' },
    },
  },
  {
    key: 'outages',
    language: 'en',
    title: 'Outages, faults and coverage',
    sections: {
      map: { heading: 'Checking for outages', text: 'The outage map in the app and on our website shows known faults in mobile and home services. Enter your postcode to see whether your area is affected and when the repair is expected to be finished. You can subscribe to text updates for that outage.' },
      fault: { heading: 'Reporting a fault', text: 'If your home internet is down and there is no outage in your area, restart the router and then report the fault in the app. If our line test finds a problem, a technician visits within two working days. The visit is free, unless the cause is your own equipment or wiring, in which case it costs 69 euros.' },
      credit: { heading: 'Compensation for outages', text: 'If your home internet does not work for more than two full days because of a fault on our side, we credit your next bill with one thirtieth of the monthly fee for each day without service. The credit is added automatically once the fault has been reported and fixed.' },
      coverage: { heading: 'Mobile coverage', text: 'Our coverage map shows 4G and 5G coverage by address. 5G is available in 40 cities, and 4G reaches 99 percent of the population. If you have a weak signal indoors, turn on Wi-Fi calling in your phone settings to make calls over your home Wi-Fi at no extra cost.' },
    },
  },
  {
    key: 'tv',
    language: 'en',
    title: 'Volna TV',
    sections: {
      packages: { heading: 'TV packages', text: 'Volna TV is available to home internet customers. TV Basic has 60 channels for 10 euros a month; TV Premium has 150 channels including live football for 25 euros a month. You can change the package once a month in the app; the change applies from the next day.' },
      devices: { heading: 'TV box and app', text: 'Watch on your television with the Volna TV box, rented for 3 euros a month, or with the Volna TV app on smart TVs, phones, tablets and computers. You can register up to four devices, and two of them can stream at the same time.' },
      replay: { heading: 'Replay and recording', text: 'Every channel can be watched up to seven days back with Replay. TV Basic includes 50 hours of cloud recording and TV Premium 200 hours. Recordings are kept for 12 months and are deleted if you cancel your TV package.' },
    },
  },
  {
    key: 'contract',
    language: 'en',
    title: 'Contract and cancellation',
    sections: {
      cancel: { heading: 'Cancelling a contract', text: 'After the minimum term, contracts can be cancelled with 30 days notice in the app under Account > Contract, or by letter. If you cancel during the minimum term, you pay half of the remaining monthly fees as an early termination fee. We confirm the end date by email.' },
      withdraw: { heading: 'Cancelling within 14 days', text: 'If you signed up online or by phone, you can withdraw from a new contract within 14 days without giving a reason. Call us or use the withdrawal form in the app, and send back any equipment you received. You only pay for what you used until then.' },
      equipment: { heading: 'Returning equipment', text: 'Routers, mesh extenders and TV boxes remain the property of Volna and must be returned within 30 days after your contract ends. We email you a free return label; drop the parcel at any post office. If we do not receive a router we charge 120 euros, for a TV box 80 euros.' },
    },
  },

  // ---- Russian help centre -------------------------------------------------------------
  {
    key: 'tarify',
    language: 'ru',
    title: 'Тарифы',
    sections: {
      lineyka: { heading: 'Тарифы для смартфона', text: '«Волна Старт» стоит 350 ₽ в месяц и включает 15 ГБ интернета и 300 минут на звонки по России. В «Волна Макс» за 650 ₽ — 40 ГБ и 800 минут, а на тарифе «Безлимит» за 900 ₽ интернет не ограничен. Звонки на номера Волны на всех тарифах бесплатные.' },
      smena: { heading: 'Смена тарифа', text: 'Сменить тариф можно в приложении «Моя Волна» в разделе «Тариф». Первая смена в течение 30 дней бесплатна, каждая следующая стоит 50 ₽. Новый тариф начинает действовать сразу, а остатки минут и гигабайт старого тарифа при переходе сгорают.' },
      ostatki: { heading: 'Перенос остатков', text: 'Неиспользованные гигабайты автоматически переносятся на следующий месяц, если абонентская плата списана вовремя. Перенесённый трафик расходуется в первую очередь и сгорает в конце следующего месяца. Минуты на следующий месяц не переносятся.' },
      zagranitsa: { heading: 'Связь за границей', text: 'В поездках по России тариф действует без доплат. Для поездок за границу подключите пакет «Путешествие»: 3 ГБ на 7 дней за 990 ₽ в Турции, ОАЭ, Таиланде и ещё 40 странах. Без пакета мегабайт за границей стоит 50 ₽, а минута звонка — 99 ₽.' },
    },
  },
  {
    key: 'nomer',
    language: 'ru',
    title: 'SIM-карта и номер',
    sections: {
      zamena: { heading: 'Замена SIM-карты', text: 'Если SIM-карта потерялась, сломалась или не подходит по размеру к новому телефону, замените её в любом салоне Волны. Замена бесплатная, номер и баланс сохраняются. При себе нужен паспорт владельца номера; по нотариальной доверенности карту может получить другой человек.' },
      esim: { heading: 'eSIM', text: 'Оформить eSIM можно в приложении «Моя Волна» с подтверждением личности через Госуслуги или в салоне. После оформления придёт QR-код: отсканируйте его в настройках телефона при подключённом Wi-Fi. Заранее проверьте, что ваш телефон поддерживает eSIM, — список моделей есть на сайте.' },
      mnp: { heading: 'Переход со своим номером', text: 'Чтобы перейти в Волну со своим номером, подайте заявление онлайн или в салоне и выберите дату перехода — не раньше чем через 8 дней. Услуга бесплатна. У прежнего оператора не должно быть долга, иначе перенос номера отменят. До дня перехода пользуйтесь старой SIM-картой.' },
    },
  },
  {
    key: 'balans',
    language: 'ru',
    title: 'Баланс и оплата',
    sections: {
      popolnenie: { heading: 'Пополнение счёта', text: 'Пополнить баланс без комиссии можно в приложении картой или через СБП, а также наличными в салонах Волны. Подключите автоплатёж, и мы будем пополнять счёт на выбранную сумму, когда баланс опустится ниже 50 ₽ или в день списания абонентской платы.' },
      obeshchanny: { heading: 'Обещанный платёж', text: 'Если деньги закончились, а пополнить счёт прямо сейчас нельзя, возьмите обещанный платёж до 300 ₽ в приложении или наберите *106#. Он действует 3 дня, комиссия — 10% от суммы. Новый обещанный платёж доступен только после погашения предыдущего.' },
      podpiski: { heading: 'Платные подписки', text: 'Если с баланса списываются деньги за непонятные подписки, проверьте их в приложении в разделе «Подписки» или наберите *152#. Отключить подписку можно там же. Чтобы новые платные подписки не подключались, включите бесплатную услугу «Запрет контента».' },
    },
  },
  {
    key: 'dom',
    language: 'ru',
    title: 'Домашний интернет',
    sections: {
      podklyuchenie: { heading: 'Подключение', text: 'Проверьте на сайте, можно ли подключить интернет в вашем доме, и оставьте заявку. Монтажник приезжает в течение трёх дней в удобное время и бесплатно проводит в квартиру до 30 метров кабеля, каждый следующий метр — 30 ₽. Договор подписывается на месте, понадобится паспорт.' },
      router: { heading: 'Wi-Fi роутер', text: 'Роутер можно взять в аренду за 99 ₽ в месяц или выкупить за 3500 ₽. Монтажник при подключении настраивает роутер и Wi-Fi. Имя сети и пароль указаны на наклейке снизу роутера, поменять их можно в приложении в разделе «Домашний интернет».' },
      skorost: { heading: 'Низкая скорость', text: 'Скорость, указанная в тарифе, гарантируется по кабелю, а по Wi-Fi она обычно ниже. Чтобы проверить скорость, подключите компьютер к роутеру кабелем и запустите тест на сайте. Если по кабелю скорость меньше 80% от тарифной, оставьте заявку — мастер приедет бесплатно.' },
    },
  },
  {
    key: 'svyaz',
    language: 'ru',
    title: 'Проблемы со связью',
    sections: {
      netseti: { heading: 'Нет мобильной связи', text: 'Если телефон не ловит сеть, включите и выключите авиарежим и перезагрузите телефон. Проверьте баланс: при долге исходящие звонки и интернет блокируются. Если связи нет у всех вокруг, посмотрите карту аварий в приложении — там указано, когда связь восстановят.' },
      zayavka: { heading: 'Не работает домашний интернет', text: 'Перезагрузите роутер и проверьте, горит ли индикатор интернета. Если не помогло, оставьте заявку в приложении или позвоните на 8 800 100-10-10 — мастер приедет в течение суток. Если интернета не было больше суток по нашей вине, мы пересчитаем абонентскую плату за эти дни.' },
      pokrytie: { heading: 'Зона покрытия', text: 'Карта покрытия на сайте показывает, где работают 4G и 5G. Сеть 5G пока доступна в Москве, Санкт-Петербурге и Казани. Если на даче слабый сигнал, купите в салоне комплект усилителя с внешней антенной за 7900 ₽ — он работает на расстоянии до 15 км от вышки.' },
    },
  },
  {
    key: 'televidenie',
    language: 'ru',
    title: 'Интерактивное ТВ',
    sections: {
      pakety: { heading: 'Пакеты каналов', text: 'Базовый пакет включает 200 каналов и стоит 299 ₽ в месяц. Дополнительно можно подключить пакеты «Кино» за 249 ₽ и «Детский» за 99 ₽ в месяц. Они подключаются и отключаются в приложении в любой день, а оплата списывается посуточно.' },
      pristavka: { heading: 'Приставка и Smart TV', text: 'Смотреть ТВ можно через приставку Волны, аренда которой стоит 100 ₽ в месяц, или в приложении «Волна ТВ» на телевизорах Samsung, LG и устройствах с Android TV. К одной подписке можно привязать до 5 устройств.' },
      kontrol: { heading: 'Родительский контроль', text: 'Каналы для взрослых по умолчанию закрыты PIN-кодом 0000. Поменяйте его в настройках приставки или приложения в разделе «Родительский контроль». Там же можно закрыть PIN-кодом любые другие каналы или ограничить просмотр по возрастному рейтингу.' },
    },
  },
  {
    key: 'dogovor',
    language: 'ru',
    title: 'Договор',
    sections: {
      rastorzhenie: { heading: 'Расторжение договора', text: 'Расторгнуть договор можно только лично в салоне с паспортом, через приложение это сделать нельзя. Остаток денег на балансе мы вернём на банковскую карту в течение 10 дней по заявлению. После расторжения номер хранится ещё 90 дней, затем его могут передать другому абоненту.' },
      pereoformlenie: { heading: 'Переоформление номера', text: 'Чтобы переоформить номер на другого человека, приходите в салон вместе с ним; нужны паспорта обоих. Услуга бесплатна и занимает около 15 минут. Баланс, тариф и подключённые услуги переходят к новому владельцу вместе с номером.' },
      oborudovanie: { heading: 'Возврат оборудования', text: 'Арендованные роутер и ТВ-приставку нужно вернуть в любой салон в течение 14 дней после расторжения договора, вместе с блоком питания. Если оборудование не вернуть, мы спишем его стоимость: 3500 ₽ за роутер и 4000 ₽ за приставку.' },
      blokirovka: { heading: 'Добровольная блокировка', text: 'Если вы уезжаете надолго, номер можно заблокировать в приложении на срок до 180 дней. Первые 30 дней блокировка бесплатна, затем стоит 1 ₽ в сутки. Пока номер заблокирован, абонентская плата не списывается, а номер остаётся за вами.' },
    },
  },
  {
    key: 'profil',
    language: 'ru',
    title: 'Личный кабинет и данные',
    sections: {
      vhod: { heading: 'Вход в приложение', text: 'Войти в приложение «Моя Волна» можно по номеру телефона и коду из СМС. Если SIM-карты нет под рукой, войдите через Госуслуги. Приложение бесплатное и при использовании не расходует интернет-трафик из пакета.' },
      dannye: { heading: 'Изменение персональных данных', text: 'Если вы сменили фамилию или паспорт, обновите данные в салоне или в приложении через Госуслуги. Без актуальных данных мы не сможем заменить SIM-карту или переоформить номер. Данные по договору может изменить только его владелец.' },
      semya: { heading: 'Семейный доступ', text: 'Объедините до 5 номеров Волны в группу в разделе «Семья» приложения. Владелец группы оплачивает все номера одним счётом, делится гигабайтами и видит баланс каждого участника. Добавить в группу номер ребёнка можно, если он оформлен на вас.' },
    },
  },
];

export const TELECOM_QUESTIONS: LabelledQuestion[] = [
  // English
  { question: 'cheapest plan you have?', answer: 'plans/range' },
  { question: 'can I go to a smaller plan in the middle of the month?', answer: 'plans/change' },
  { question: 'how do i get more data befor the month ends', answer: 'plans/extra', typo: true },
  { question: 'going to spain next week, will using my phone there cost extra?', answer: 'roaming/eu' },
  { question: 'how much is it to use my phone in new york', answer: 'roaming/world' },
  { question: "my mobile data doesnt work in italy, I'm on prepaid", answer: 'roaming/onoff' },
  { question: 'can I get rid of the plastic sim and use a digital one', answer: 'sim/esim' },
  { question: 'phone got stolen at the train staton, what do I do', answer: 'sim/lost', typo: true },
  { question: 'typed the wrong code 3 times and now the sim is locked', answer: 'sim/pin' },
  { question: 'where do i find my PUK numbr', answer: 'sim/pin', typo: true },
  { question: "I'm with another network, can I keep my number when I join?", answer: 'porting/in' },
  { question: "my old sim just stopped working, I'm in the middle of switching to you", answer: 'porting/day' },
  { question: 'moving to another operator, how do I take my number with me', answer: 'porting/out' },
  { question: 'why is my first bill so high?', answer: 'billing/bill' },
  { question: 'direct debit bounced, will you charge me extra?', answer: 'billing/pay' },
  { question: 'can it top up automaticaly when im low', answer: 'billing/topup', typo: true },
  { question: "there's a charge on my bill for some game subscription I never ordered", answer: 'billing/charges' },
  { question: 'is fibre available in my street?', answer: 'home/availability' },
  { question: 'how long am I tied in for home broadband', answer: 'home/plans' },
  { question: 'do I have to take a day off for the engineer to come?', answer: 'home/install' },
  { question: 'how much for an extra netwrok socket in the bedroom', answer: 'home/install', typo: true },
  { question: "we're moving flat in march, what happens to my internet", answer: 'home/moving' },
  { question: 'just got the router, which cable goes where?', answer: 'router/setup' },
  { question: 'wifi keeps dropping in the bedroom upstairs', answer: 'router/slow' },
  { question: 'my neighbour knows my wifi password, how do i change it', answer: 'router/wifipass' },
  { question: 'router is flashing red', answer: 'router/lights' },
  { question: 'orange light blinkin on the router, is it broken?', answer: 'router/lights', typo: true },
  { question: 'is there a known problem in my area right now?', answer: 'outages/map' },
  { question: "internet's been dead since yesterday, nothing on the outage map", answer: 'outages/fault' },
  { question: 'internet was off for 4 days, do I get money back?', answer: 'outages/credit' },
  { question: 'terrible signal inside my house, calls keep breaking up', answer: 'outages/coverage' },
  { question: 'do you have 5g in my citty', answer: 'outages/coverage', typo: true },
  { question: 'which tv package has the football', answer: 'tv/packages' },
  { question: 'can my kids watch on the tablet while I watch the TV?', answer: 'tv/devices' },
  { question: 'missed the match last night, can I still watch it?', answer: 'tv/replay' },
  { question: 'what does it cost to leave before the contract is up', answer: 'contract/cancel' },
  { question: 'signed up on the phone 5 days ago and changed my mind', answer: 'contract/withdraw' },
  { question: 'what do I do with the router after I cancel?', answer: 'contract/equipment' },

  // Russian
  { question: 'какой самый дешёвый тариф и что в него входит', answer: 'tarify/lineyka' },
  { question: 'если перейду на другой тариф, что будет с оставшимися гигами?', answer: 'tarify/smena' },
  { question: 'не потратил интернет за месяц, он пропадёт?', answer: 'tarify/ostatki' },
  { question: 'лечу в Турцию, как не разориться на интернете', answer: 'tarify/zagranitsa' },
  { question: 'скоко стоит звонок из за границы', answer: 'tarify/zagranitsa', typo: true },
  { question: 'купил новый айфон, симка не влазит', answer: 'nomer/zamena' },
  { question: 'хочу электронную симку вместо обычной', answer: 'nomer/esim' },
  { question: 'хочу перейти к вам от другого оператора, номер сохранится?', answer: 'nomer/mnp' },
  { question: 'как закинуть деньги на телефон без комиссии', answer: 'balans/popolnenie' },
  { question: 'деньги кончились, а позвонить срочно надо', answer: 'balans/obeshchanny' },
  { question: 'как взять обещаный платеж', answer: 'balans/obeshchanny', typo: true },
  { question: 'каждый день списывают по 30 рублей непонятно за что', answer: 'balans/podpiski' },
  { question: 'сколько стоит провести интернет в кваритру', answer: 'dom/podklyuchenie', typo: true },
  { question: 'нужно ли покупать роутер или можно взять у вас', answer: 'dom/router' },
  { question: 'по тарифу 500 мегабит, а по вайфаю еле 100', answer: 'dom/skorost' },
  { question: 'телефон пишет нет сети', answer: 'svyaz/netseti' },
  { question: 'второй день нет интернета дома, вернёте деньги?', answer: 'svyaz/zayavka' },
  { question: 'как вызвать мастера если пропал интернет', answer: 'svyaz/zayavka' },
  { question: 'на даче связь плохая, что можно сделать', answer: 'svyaz/pokrytie' },
  { question: 'ловит ли у вас 5g в питере', answer: 'svyaz/pokrytie' },
  { question: 'есть ли у вас каналы с мультиками для ребёнка', answer: 'televidenie/pakety' },
  { question: 'можно смотреть тв без приставки на телевизоре LG', answer: 'televidenie/pristavka' },
  { question: 'какой пароль на каналы 18+', answer: 'televidenie/kontrol' },
  { question: 'хочу отказаться от ваших услуг совсем, можно через приложение?', answer: 'dogovor/rastorzhenie' },
  { question: 'вернут ли деньги с баланса если растогнуть договор', answer: 'dogovor/rastorzhenie', typo: true },
  { question: 'хочу отдать свой номер маме', answer: 'dogovor/pereoformlenie' },
  { question: 'куда сдать роутер после отключения', answer: 'dogovor/oborudovanie' },
  { question: 'уезжаю на полгода, не хочу платить за связь, но номер терять жалко', answer: 'dogovor/blokirovka' },
  { question: 'как зайти в приложение если симка в другом телефоне', answer: 'profil/vhod' },
  { question: 'вышла замуж, поменяла фамилию, что делать', answer: 'profil/dannye' },
  { question: 'можно ли платить за телефоны всей семьи одним счетом', answer: 'profil/semya' },
  { question: 'как поделится гигабайтами с сыном', answer: 'profil/semya', typo: true },
];
