/**
 * A labelled retrieval set for `npm run bench -- --only knowledge`: the help centre of a
 * made-up company (Northwind Coffee: coffee machines, beans by subscription) in English and
 * in Russian, and questions a customer might ask, phrased in their own words (not copied
 * from the text), some with typos. Each question names the one section that answers it
 * (`doc/section`); a section is short enough to be one chunk.
 *
 * Written once, before the ranking was measured on it, and not edited to suit the ranking.
 */
export interface HelpSection {
  heading: string;
  text: string;
}

export interface HelpDocument {
  key: string;
  language: 'en' | 'ru';
  title: string;
  sections: Record<string, HelpSection>;
}

export interface LabelledQuestion {
  question: string;
  /** `documentKey/sectionKey` of the section that answers it. */
  answer: string;
  typo?: boolean;
}

export const DOCUMENTS: HelpDocument[] = [
  {
    key: 'orders',
    language: 'en',
    title: 'Orders',
    sections: {
      place: { heading: 'Placing an order', text: 'Add the products to your basket and click Checkout. You can check out as a guest or sign in to your account. Before paying you see the delivery options and the total, including any delivery fee. After payment you receive an order confirmation email with your order number.' },
      change: { heading: 'Changing or cancelling an order', text: 'An order can be changed or cancelled free of charge until it is packed, usually within two hours after you placed it. Open the order in your account and choose Edit or Cancel. Once the parcel has been handed to the carrier the order can no longer be cancelled, but you can return it after delivery.' },
      status: { heading: 'Order status', text: 'In your account under My orders every order shows its status: received, packed, shipped or delivered. When the status changes to shipped you get an email with the tracking link of the carrier.' },
      missing: { heading: 'Missing or damaged items', text: 'If something is missing from your parcel or arrived broken, tell us within 7 days of delivery. Send a photo of the damaged item and the packaging through the contact form. We send a replacement or refund the item, whichever you prefer.' },
      invoice: { heading: 'Invoices', text: 'The invoice for every order is attached to the shipping confirmation email as a PDF. You can also download it from My orders at any time. Invoices cannot be changed to another name or address after the order has shipped.' },
    },
  },
  {
    key: 'shipping',
    language: 'en',
    title: 'Shipping and delivery',
    sections: {
      times: { heading: 'Delivery times', text: 'Orders placed on a working day before 2 pm leave our warehouse the same day. Standard delivery within Germany takes 1 to 2 working days, to other EU countries 3 to 5 working days.' },
      costs: { heading: 'Delivery costs', text: 'Standard delivery costs 4.95 euros. Orders of 49 euros or more ship free of charge within the EU. Express delivery is 9.95 euros. Coffee machines always ship free.' },
      express: { heading: 'Express delivery', text: 'With express delivery your order arrives the next working day if you order before 12 noon. Express is available for addresses in Germany and Austria only, and not on Saturdays.' },
      international: { heading: 'Countries we ship to', text: 'We ship to all countries of the European Union, Switzerland, Norway and the United Kingdom. For Switzerland, Norway and the UK customs duties and import taxes may be charged by the local authorities on delivery.' },
      tracking: { heading: 'Tracking a parcel', text: 'The tracking link in your shipping email shows where your parcel is. Tracking information can take up to 24 hours to appear after shipping. If the parcel has not moved for five working days, contact us and we will open an investigation with the carrier.' },
      packstation: { heading: 'Parcel lockers and pickup points', text: 'You can have your order delivered to a DHL Packstation or a post office: enter your Postnummer and the locker number as the address. Coffee machines are too large for lockers and are delivered to your door.' },
    },
  },
  {
    key: 'returns',
    language: 'en',
    title: 'Returns and refunds',
    sections: {
      policy: { heading: 'Return policy', text: 'You can return unopened products within 30 days of delivery for a full refund. Opened coffee beans cannot be returned for hygiene reasons. A machine you have used can be returned within 30 days if it is clean and complete, in its original packaging.' },
      how: { heading: 'How to return an item', text: 'Start the return in My orders by choosing Return items. Print the prepaid return label, pack the items securely and drop the parcel at any DHL shop. Returns from Germany are free; from other countries the return shipping costs 6.95 euros.' },
      refund: { heading: 'Refunds', text: 'We refund the money to the original payment method within 5 working days after the returned parcel reaches our warehouse. Bank transfers can take another 2 to 3 days to show on your statement. Delivery fees are refunded only if you return the whole order.' },
      exchange: { heading: 'Exchanges', text: 'We do not exchange items directly. Return the item for a refund and place a new order for the product you want; this is the fastest way to get it.' },
    },
  },
  {
    key: 'payment',
    language: 'en',
    title: 'Payment',
    sections: {
      methods: { heading: 'Payment methods', text: 'We accept Visa, Mastercard, American Express, PayPal, Apple Pay, Google Pay and Klarna invoice. Cash on delivery is not offered.' },
      klarna: { heading: 'Paying later with Klarna', text: 'With Klarna invoice you pay within 30 days after the goods are shipped. Klarna checks your details when you order and may decline the payment method; in that case please choose another way to pay.' },
      declined: { heading: 'Declined payments', text: 'If your card is declined, check the card number, expiry date and security code, and whether your bank requires 3-D Secure confirmation in its app. Your order is not placed until the payment succeeds, so nothing is charged twice.' },
      currency: { heading: 'Currency and VAT', text: 'All prices are in euros and include German VAT of 19 percent, or 7 percent for coffee beans. Business customers from other EU countries with a valid VAT ID can buy without VAT (reverse charge).' },
    },
  },
  {
    key: 'account',
    language: 'en',
    title: 'Your account',
    sections: {
      password: { heading: 'Resetting your password', text: 'Click Forgot password on the sign-in page and enter your email address. We send a link to set a new password; the link is valid for one hour. Check your spam folder if the email does not arrive within a few minutes.' },
      email: { heading: 'Changing your email address', text: 'Go to Account settings and edit the email field. We send a confirmation link to the new address; the change takes effect once you click it.' },
      delete: { heading: 'Deleting your account', text: 'To delete your account and your personal data, choose Delete account in Account settings. Open orders and an active subscription must be finished or cancelled first. Invoices are kept for ten years because the law requires it.' },
      newsletter: { heading: 'Newsletter', text: 'To stop receiving the newsletter, click Unsubscribe at the bottom of any newsletter or untick the box in Account settings. Emails about your orders are still sent.' },
    },
  },
  {
    key: 'subscription',
    language: 'en',
    title: 'Coffee subscription',
    sections: {
      how: { heading: 'How the subscription works', text: 'Choose your beans, the amount and how often you want them: every 2, 4 or 6 weeks. Each delivery is charged when it ships, and delivery is always free for subscribers.' },
      pause: { heading: 'Pausing or skipping a delivery', text: 'You can skip the next delivery or pause the subscription for up to three months in My subscription. Changes must be made at least two days before the next shipping date.' },
      cancel: { heading: 'Cancelling the subscription', text: 'The subscription can be cancelled at any time in My subscription, without a notice period. A delivery that is already being packed will still be sent and charged.' },
      change: { heading: 'Changing beans or quantity', text: 'Swap the coffee or change the quantity in My subscription; the change applies from the next delivery. You can choose a different roast for every delivery if you like variety.' },
    },
  },
  {
    key: 'machines',
    language: 'en',
    title: 'Coffee machines',
    sections: {
      setup: { heading: 'First use', text: 'Before the first coffee, rinse the water tank, fill it with fresh water and run two cups of water through the machine without coffee. Set the water hardness in the menu using the test strip in the box.' },
      descale: { heading: 'Descaling', text: 'The machine tells you when it needs descaling, usually every 2 to 3 months depending on your water hardness. Use only our liquid descaler and follow the descaling programme in the menu; it takes about 25 minutes.' },
      grinder: { heading: 'Grind setting', text: 'Turn the grind dial only while the grinder is running. A finer grind gives a stronger, slower espresso; if coffee only drips out, set it one step coarser.' },
      warranty: { heading: 'Warranty', text: 'All coffee machines come with a two-year manufacturer warranty from the date of delivery. Registering your machine online extends the warranty to three years. Wear parts such as seals and damage from skipped descaling are not covered.' },
      repair: { heading: 'Repairs', text: 'For a repair, start a service request in My orders. We send a box and a free shipping label; repairs under warranty are free and usually take 10 working days. Out of warranty we send you a quote first.' },
      error: { heading: 'Error messages', text: 'Error E01 means the water tank is empty or not seated properly. E04 means the brewing unit is blocked: switch the machine off, remove the unit and rinse it under running water. If an error keeps coming back, contact our service team.' },
    },
  },
  {
    key: 'loyalty',
    language: 'en',
    title: 'Rewards and gift cards',
    sections: {
      points: { heading: 'Bean points', text: 'Every euro you spend earns one bean point. 100 points give you a 5 euro voucher for your next order. Points expire 24 months after they were earned.' },
      giftcards: { heading: 'Gift cards', text: 'Gift cards are available from 10 to 200 euros and are sent by email. They are valid for three years and can be combined with other payment methods, but cannot be used for the subscription.' },
      vouchers: { heading: 'Discount codes', text: 'Enter a discount code in the basket before checkout. Only one code can be used per order, and codes cannot be applied to orders that have already been placed.' },
    },
  },
  {
    key: 'business',
    language: 'en',
    title: 'Business customers',
    sections: {
      account: { heading: 'Business accounts', text: 'Companies can open a business account to order on invoice with 14 days payment terms. Send us your company registration and VAT ID; approval takes one or two working days.' },
      office: { heading: 'Office machines', text: 'For offices we lease bean-to-cup machines from 39 euros a month including maintenance. The minimum lease term is 12 months.' },
    },
  },
  {
    key: 'privacy',
    language: 'en',
    title: 'Privacy and contact',
    sections: {
      data: { heading: 'Your data', text: 'We use your data only to process your orders and, if you agreed, for our newsletter. We never sell it. You can ask for a copy of all data we hold about you through the contact form.' },
      contact: { heading: 'Contacting customer service', text: 'Our customer service team answers by chat and email Monday to Friday from 8 am to 6 pm. By phone you reach us on +49 30 1234567 on working days from 9 am to 5 pm.' },
    },
  },

  // ---- Russian help centre -------------------------------------------------------------
  {
    key: 'dostavka',
    language: 'ru',
    title: 'Доставка',
    sections: {
      sroki: { heading: 'Сроки доставки', text: 'Заказы, оформленные до 14:00 по московскому времени, мы отправляем в тот же день. По Москве и Санкт-Петербургу курьер привозит заказ на следующий день, в другие города России доставка занимает от 2 до 7 рабочих дней.' },
      stoimost: { heading: 'Стоимость доставки', text: 'Курьерская доставка стоит 390 рублей, в пункт выдачи — 190 рублей. При заказе от 3000 рублей доставка бесплатная. Кофемашины доставляем бесплатно всегда.' },
      pvz: { heading: 'Пункты выдачи', text: 'Заказ можно получить в одном из более чем 5000 пунктов выдачи СДЭК и Boxberry. Посылка хранится в пункте 7 дней, после чего возвращается к нам. Для получения нужен код из СМС.' },
      kurer: { heading: 'Курьерская доставка', text: 'Курьер звонит за час до приезда. Вы можете выбрать интервал доставки: с 9 до 14 или с 14 до 21 часа. Если вас не будет дома, перенесите доставку по ссылке в СМС.' },
      otslezhivanie: { heading: 'Отслеживание заказа', text: 'Трек-номер приходит в письме и СМС после отправки. Статус посылки обновляется в личном кабинете в разделе «Мои заказы» в течение суток.' },
      strany: { heading: 'Доставка в другие страны', text: 'Мы доставляем заказы в Беларусь, Казахстан и Армению. Срок доставки — от 7 до 14 дней, стоимость рассчитывается при оформлении заказа.' },
    },
  },
  {
    key: 'oplata',
    language: 'ru',
    title: 'Оплата',
    sections: {
      sposoby: { heading: 'Способы оплаты', text: 'Оплатить заказ можно картой «Мир», Visa или Mastercard российских банков, через Систему быстрых платежей (СБП) или наличными курьеру. В пунктах выдачи принимаются наличные и карты.' },
      rassrochka: { heading: 'Рассрочка', text: 'Кофемашины стоимостью от 15000 рублей можно купить в рассрочку на 6 или 12 месяцев без переплаты. Заявка оформляется онлайн при оформлении заказа, решение банка приходит за несколько минут.' },
      chek: { heading: 'Чеки', text: 'Электронный чек приходит на электронную почту сразу после оплаты. Бумажный чек курьер выдаёт при получении заказа.' },
      oshibka: { heading: 'Не проходит оплата', text: 'Если платёж не проходит, проверьте баланс карты и лимиты в приложении банка. Деньги не списываются, пока оплата не подтверждена. При повторной ошибке попробуйте оплатить через СБП.' },
    },
  },
  {
    key: 'vozvrat',
    language: 'ru',
    title: 'Возврат и обмен',
    sections: {
      usloviya: { heading: 'Условия возврата', text: 'Товар надлежащего качества можно вернуть в течение 14 дней после получения, если сохранены упаковка и товарный вид. Вскрытые пачки кофе возврату не подлежат.' },
      kak: { heading: 'Как оформить возврат', text: 'Оформите заявку на возврат в личном кабинете, распечатайте накладную и сдайте товар в любой пункт выдачи СДЭК. Отправка возврата для вас бесплатна.' },
      dengi: { heading: 'Возврат денег', text: 'Деньги возвращаются тем же способом, которым был оплачен заказ, в течение 10 дней после того, как товар поступил на наш склад. При оплате наличными мы переводим деньги на карту по реквизитам из заявки.' },
      brak: { heading: 'Брак и повреждения', text: 'Если товар пришёл повреждённым или с браком, сообщите нам в течение 7 дней и приложите фотографии. Мы заменим товар или вернём деньги, расходы на пересылку берём на себя.' },
    },
  },
  {
    key: 'garantiya',
    language: 'ru',
    title: 'Гарантия и сервис',
    sections: {
      srok: { heading: 'Гарантийный срок', text: 'На все кофемашины действует гарантия производителя 2 года с даты покупки. Гарантия не распространяется на уплотнители и повреждения, возникшие из-за отсутствия очистки от накипи.' },
      servis: { heading: 'Сервисные центры', text: 'Гарантийный ремонт выполняют авторизованные сервисные центры в 40 городах России. Адреса центров есть на странице «Сервис». Возьмите с собой гарантийный талон и чек.' },
      remont: { heading: 'Сроки ремонта', text: 'Гарантийный ремонт занимает до 45 дней по закону, обычно — около двух недель. Если ремонт невозможен, мы заменим кофемашину или вернём деньги.' },
      nakip: { heading: 'Очистка от накипи', text: 'Кофемашину нужно чистить от накипи каждые 2–3 месяца. Используйте только жидкое средство от накипи и запустите программу очистки в меню; она длится около 25 минут.' },
    },
  },
  {
    key: 'kabinet',
    language: 'ru',
    title: 'Личный кабинет',
    sections: {
      parol: { heading: 'Восстановление пароля', text: 'На странице входа нажмите «Забыли пароль?» и укажите телефон или почту. Мы пришлём код для входа, после чего вы сможете задать новый пароль.' },
      telefon: { heading: 'Смена номера телефона', text: 'Номер телефона меняется в настройках профиля. На новый номер придёт СМС с кодом подтверждения.' },
      udalenie: { heading: 'Удаление аккаунта', text: 'Чтобы удалить аккаунт и персональные данные, напишите в поддержку с почты, указанной в профиле. Мы удалим данные в течение 30 дней, кроме сведений, которые обязаны хранить по закону.' },
    },
  },
  {
    key: 'bonusy',
    language: 'ru',
    title: 'Бонусная программа',
    sections: {
      nachislenie: { heading: 'Начисление бонусов', text: 'За каждую покупку начисляем 5% бонусами. Бонусы появляются на счёте через 14 дней после получения заказа.' },
      spisanie: { heading: 'Как потратить бонусы', text: 'Бонусами можно оплатить до 30% стоимости следующего заказа: 1 бонус равен 1 рублю. Бонусы действуют один год с момента начисления.' },
      sertifikaty: { heading: 'Подарочные сертификаты', text: 'Электронные подарочные сертификаты номиналом от 1000 до 20000 рублей действуют один год. Сертификат нельзя обменять на деньги, но можно использовать частями.' },
    },
  },
  {
    key: 'podpiska',
    language: 'ru',
    title: 'Подписка на кофе',
    sections: {
      usloviya: { heading: 'Как работает подписка', text: 'Выберите сорт, количество и периодичность: раз в 2, 4 или 6 недель. Оплата списывается при каждой отправке, доставка для подписчиков бесплатная.' },
      pauza: { heading: 'Пауза и отмена', text: 'Подписку можно поставить на паузу до трёх месяцев или отменить в личном кабинете в любой момент. Изменения нужно внести не позднее чем за два дня до отправки.' },
    },
  },
  {
    key: 'yurlica',
    language: 'ru',
    title: 'Для юридических лиц',
    sections: {
      schet: { heading: 'Оплата по счёту', text: 'Юридические лица и ИП могут оплачивать заказы по безналичному расчёту. Счёт выставляется после оформления заказа, закрывающие документы передаются через ЭДО или с курьером.' },
      arenda: { heading: 'Аренда кофемашин для офиса', text: 'Для офисов мы сдаём кофемашины в аренду от 3500 рублей в месяц с обслуживанием. Минимальный срок договора — 6 месяцев.' },
    },
  },
];

export const QUESTIONS: LabelledQuestion[] = [
  // English
  { question: 'how do I buy something without making an account?', answer: 'orders/place' },
  { question: 'I ordered the wrong grinder an hour ago, can I still cancel?', answer: 'orders/change' },
  { question: 'where can I see if my order has been sent?', answer: 'orders/status' },
  { question: 'my mug arrived smashed, what now', answer: 'orders/missing' },
  { question: 'I need a receipt for my company expenses', answer: 'orders/invoice' },
  { question: 'how many days until my package gets here in Germany?', answer: 'shipping/times' },
  { question: 'is shipping free?', answer: 'shipping/costs' },
  { question: 'can I get it tomorrow?', answer: 'shipping/express' },
  { question: 'do you deliver to London?', answer: 'shipping/international' },
  { question: 'will I pay import tax in Switzerland', answer: 'shipping/international' },
  { question: 'the tracking number shows nothing', answer: 'shipping/tracking' },
  { question: 'can you send it to a Packstation?', answer: 'shipping/packstation' },
  { question: 'I opened a bag of beans and dont like them, can I send it back?', answer: 'returns/policy' },
  { question: 'where do I get a return label', answer: 'returns/how' },
  { question: 'when do I get my money back after returning?', answer: 'returns/refund' },
  { question: 'can I swap the machine for a different colour', answer: 'returns/exchange' },
  { question: 'do you take PayPal', answer: 'payment/methods' },
  { question: 'can I pay cash when it arrives?', answer: 'payment/methods' },
  { question: 'buy now pay later possible?', answer: 'payment/klarna' },
  { question: 'my credit card keeps getting rejected', answer: 'payment/declined' },
  { question: 'are prices including tax?', answer: 'payment/currency' },
  { question: 'I forgot my password', answer: 'account/password' },
  { question: 'how do I update the email on my profile', answer: 'account/email' },
  { question: 'please remove all my personal information', answer: 'account/delete' },
  { question: 'stop sending me marketing emails', answer: 'account/newsletter' },
  { question: 'how often do subscription beans come?', answer: 'subscription/how' },
  { question: 'I am on holiday next month, can I skip a shipment?', answer: 'subscription/pause' },
  { question: 'how do I end my coffee subscription', answer: 'subscription/cancel' },
  { question: 'can I try a darker roast in my next box', answer: 'subscription/change' },
  { question: 'what should I do before making the first espresso', answer: 'machines/setup' },
  { question: 'how often do I need to remove limescale?', answer: 'machines/descale' },
  { question: 'coffee comes out really slowly, just drops', answer: 'machines/grinder' },
  { question: 'how long is the guarantee on the machine', answer: 'machines/warranty' },
  { question: 'my machine is broken, how do I get it fixed', answer: 'machines/repair' },
  { question: 'display says E04', answer: 'machines/error' },
  { question: 'what are bean points worth?', answer: 'loyalty/points' },
  { question: 'can I use a gift card for my subscription', answer: 'loyalty/giftcards' },
  { question: 'can I use two promo codes at once', answer: 'loyalty/vouchers' },
  { question: 'we are a company, can we pay on invoice?', answer: 'business/account' },
  { question: 'do you rent machines to offices', answer: 'business/office' },
  { question: 'do you sell my data', answer: 'privacy/data' },
  { question: 'what is your phone number', answer: 'privacy/contact' },
  // English with typos
  { question: 'how long does shiping take to austria', answer: 'shipping/times', typo: true },
  { question: 'i want a refnd for my order', answer: 'returns/refund', typo: true },
  { question: 'how to reset pasword', answer: 'account/password', typo: true },
  { question: 'descailing my machine', answer: 'machines/descale', typo: true },
  { question: 'paus my subscripton', answer: 'subscription/pause', typo: true },
  { question: 'warrenty for coffe machine', answer: 'machines/warranty', typo: true },
  { question: 'which paymnet methods do you acept', answer: 'payment/methods', typo: true },

  // Russian
  { question: 'когда привезут заказ в Санкт-Петербург?', answer: 'dostavka/sroki' },
  { question: 'сколько стоит привезти заказ домой?', answer: 'dostavka/stoimost' },
  { question: 'можно забрать заказ самому в пункте СДЭК?', answer: 'dostavka/pvz' },
  { question: 'сколько дней посылка лежит в пункте выдачи', answer: 'dostavka/pvz' },
  { question: 'курьер приедет вечером?', answer: 'dostavka/kurer' },
  { question: 'где посмотреть трек номер', answer: 'dostavka/otslezhivanie' },
  { question: 'вы отправляете в Казахстан?', answer: 'dostavka/strany' },
  { question: 'можно заплатить через СБП?', answer: 'oplata/sposoby' },
  { question: 'есть ли рассрочка на кофемашину', answer: 'oplata/rassrochka' },
  { question: 'где взять чек об оплате', answer: 'oplata/chek' },
  { question: 'карта не проходит при оплате', answer: 'oplata/oshibka' },
  { question: 'можно ли вернуть кофемолку если не понравилась', answer: 'vozvrat/usloviya' },
  { question: 'как отправить товар обратно', answer: 'vozvrat/kak' },
  { question: 'когда вернут деньги за возврат', answer: 'vozvrat/dengi' },
  { question: 'пришла разбитая чашка', answer: 'vozvrat/brak' },
  { question: 'какая гарантия на кофемашину', answer: 'garantiya/srok' },
  { question: 'где отремонтировать кофемашину в Казани', answer: 'garantiya/servis' },
  { question: 'сколько длится ремонт по гарантии', answer: 'garantiya/remont' },
  { question: 'как почистить машину от накипи', answer: 'garantiya/nakip' },
  { question: 'не могу войти, забыл пароль', answer: 'kabinet/parol' },
  { question: 'как поменять телефон в профиле', answer: 'kabinet/telefon' },
  { question: 'удалите мои персональные данные', answer: 'kabinet/udalenie' },
  { question: 'сколько бонусов дают за покупку', answer: 'bonusy/nachislenie' },
  { question: 'можно оплатить весь заказ бонусами?', answer: 'bonusy/spisanie' },
  { question: 'подарочный сертификат можно обменять на деньги?', answer: 'bonusy/sertifikaty' },
  { question: 'как часто приходит кофе по подписке', answer: 'podpiska/usloviya' },
  { question: 'хочу приостановить подписку', answer: 'podpiska/pauza' },
  { question: 'мы ИП, можно оплатить по безналу?', answer: 'yurlica/schet' },
  { question: 'сколько стоит аренда кофемашины в офис', answer: 'yurlica/arenda' },
  // Russian with typos
  { question: 'сколко стоит доставка', answer: 'dostavka/stoimost', typo: true },
  { question: 'как вернуть деньги за заказ', answer: 'vozvrat/dengi' },
  { question: 'гарантиия на кофемашину', answer: 'garantiya/srok', typo: true },
  { question: 'востановить пароль', answer: 'kabinet/parol', typo: true },
  { question: 'рассрочка на кофемашыну', answer: 'oplata/rassrochka', typo: true },
  { question: 'отслеживане посылки', answer: 'dostavka/otslezhivanie', typo: true },
];
