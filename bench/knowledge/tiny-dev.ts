/**
 * The development set of the tiny help centres (issue #42): what the answer decision was
 * tuned on. The bases and questions of the issue's own findings (four one-line articles, the
 * demo's five, numbers in questions, Lisbon, off-topic chat), and a few more written by the
 * developer. Held-out figures come from held-out-tiny-en.ts / held-out-tiny-ru.ts only.
 */
import type { TinyBase } from './held-out-tiny.js';

export const TINY_DEV_BASES: TinyBase[] = [
  {
    key: 'four-lines',
    name: 'Shoe shop',
    language: 'en',
    articles: [
      { key: 'returns', title: 'Returns', content: 'Returns are accepted within 30 days with a receipt.' },
      { key: 'hours', title: 'Opening hours', content: 'We are open Monday to Friday 9:00-19:00 and Saturday 10:00-16:00. Closed on Sunday.' },
      { key: 'shipping', title: 'Shipping', content: 'We ship to Portugal, Spain and France within 5 days. Shipping costs 4.90 EUR, free from 50 EUR.' },
      { key: 'sizes', title: 'Sizes', content: 'Our shoes follow EU sizes from 35 to 47. If you are between two sizes, take the larger one.' },
    ],
    questions: [
      { text: 'Do you accept returns?', kind: 'answerable', answer: 'returns' },
      { text: 'can I return my shoes', kind: 'answerable', answer: 'returns' },
      { text: 'what time do you close on saturday', kind: 'answerable', answer: 'hours' },
      { text: 'when are you open?', kind: 'answerable', answer: 'hours' },
      { text: 'when are you open? (17)', kind: 'answerable', answer: 'hours' },
      { text: 'what are your opening hours? (ref 42)', kind: 'answerable', answer: 'hours' },
      { text: 'Do you ship to Lisbon?', kind: 'answerable', answer: 'shipping' },
      { text: 'how much is delivery to Madrid, order 5521', kind: 'answerable', answer: 'shipping' },
      { text: "I'm usually a 41.5, which size should I order?", kind: 'answerable', answer: 'sizes' },
      { text: 'the boots pinch, can I bring them back?', kind: 'paraphrase', answer: 'returns' },
      { text: 'What is the capital of France?', kind: 'off_topic' },
      { text: 'write me a poem about autumn', kind: 'off_topic' },
      { text: 'do you sell handbags too?', kind: 'unanswerable' },
      { text: 'can I pay with bitcoin?', kind: 'unanswerable' },
      { text: 'hi there!', kind: 'greeting' },
      { text: 'I want to talk to a person', kind: 'human' },
    ],
  },
  {
    key: 'demo',
    name: 'Kitchen appliances shop',
    language: 'en',
    articles: [
      { key: 'delivery', title: 'Delivery', content: 'We deliver within Germany in 2-3 working days. Express delivery (next working day) costs 9.90 EUR. We do not deliver on weekends.' },
      { key: 'payment', title: 'Payment', content: 'You can pay by credit card, PayPal or Klarna (pay in 30 days). Invoices are sent by email after each order.' },
      { key: 'warranty', title: 'Warranty and repairs', content: 'All appliances have a two-year warranty. If a device stops working, send us a photo and your order number and we will arrange a repair or a replacement.' },
      { key: 'contact', title: 'Contact', content: 'Call us on +49 30 1234 5678 (Mon-Fri 9-17) or write to help@kitchen.example.' },
      { key: 'returns', title: 'Returns', content: 'Unused items can be sent back within 14 days for a full refund. Return shipping is free.' },
    ],
    questions: [
      { text: 'Is express delivery available?', kind: 'answerable', answer: 'delivery' },
      { text: 'What is your phone number?', kind: 'answerable', answer: 'contact' },
      { text: 'My blender is broken, what do I do?', kind: 'answerable', answer: 'warranty' },
      { text: 'Can I pay with Klarna?', kind: 'answerable', answer: 'payment' },
      { text: 'Do you deliver on weekends?', kind: 'answerable', answer: 'delivery' },
      { text: 'where is my invoice for order 20931?', kind: 'answerable', answer: 'payment' },
      { text: 'the toaster I got last week does not heat anymore', kind: 'paraphrase', answer: 'warranty' },
      { text: 'how do I reach you guys', kind: 'paraphrase', answer: 'contact' },
      { text: "I changed my mind about the kettle, can I get my money back?", kind: 'answerable', answer: 'returns' },
      { text: 'how long does it take?', kind: 'ambiguous', options: ['delivery', 'returns'] },
      { text: 'What is the weather in Berlin?', kind: 'off_topic' },
      { text: 'who won the football yesterday', kind: 'off_topic' },
      { text: 'do you have a shop in Munich I can visit?', kind: 'unanswerable' },
      { text: 'do you sell spare parts for coffee machines?', kind: 'unanswerable' },
      { text: 'thanks, bye', kind: 'greeting' },
    ],
  },
  {
    key: 'salon',
    name: 'Hair salon',
    language: 'en',
    articles: [
      { key: 'booking', title: 'Booking an appointment', content: 'Book online on our website or call 0161 496 0000. Please cancel at least 24 hours ahead, otherwise we charge half the price.' },
      { key: 'prices', title: 'Prices', content: "Women's cut from 45 GBP, men's cut 25 GBP, colour from 70 GBP. Children under 12 pay 15 GBP." },
    ],
    questions: [
      { text: 'how much is a haircut for my son, he is 8', kind: 'answerable', answer: 'prices' },
      { text: "I can't make it tomorrow at 3, what happens?", kind: 'paraphrase', answer: 'booking' },
      { text: 'can I get an appointment for Friday?', kind: 'answerable', answer: 'booking' },
      { text: 'do you do nails as well?', kind: 'unanswerable' },
      { text: 'how do I make pancakes', kind: 'off_topic' },
      { text: 'good morning', kind: 'greeting' },
    ],
  },
  {
    key: 'pekarnya',
    name: 'Пекарня',
    language: 'ru',
    articles: [
      { key: 'hours', title: 'Часы работы', content: 'Мы работаем каждый день с 8:00 до 20:00, в воскресенье до 18:00.' },
      { key: 'delivery', title: 'Доставка', content: 'Доставляем заказы по Казани от 1000 рублей, доставка 200 рублей, бесплатно от 3000 рублей.' },
      { key: 'cakes', title: 'Торты на заказ', content: 'Торты на заказ принимаем за 2 дня, предоплата 50%. Телефон для заказа: +7 843 000-00-00.' },
    ],
    questions: [
      { text: 'до скольки вы работаете в воскресенье?', kind: 'answerable', answer: 'hours' },
      { text: 'сколько стоит доставка на ул. Баумана 12?', kind: 'answerable', answer: 'delivery' },
      { text: 'можно заказать торт на субботу? меня зовут Ольга', kind: 'answerable', answer: 'cakes' },
      { text: 'привезёте ко мне домой?', kind: 'paraphrase', answer: 'delivery' },
      { text: 'какая столица Австралии', kind: 'off_topic' },
      { text: 'есть ли у вас безглютеновый хлеб?', kind: 'unanswerable' },
      { text: 'здравствуйте', kind: 'greeting' },
      { text: 'позовите оператора', kind: 'human' },
    ],
  },
];
