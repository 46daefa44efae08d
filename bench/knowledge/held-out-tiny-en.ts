/**
 * Held-out evaluation set (English): tiny help-centre bases as a brand-new small
 * company would type them (2-6 short articles each, no settings), plus one medium
 * base of 18 articles, each with realistic customer messages labelled by kind
 * (answerable, paraphrase, unanswerable, off_topic, ambiguous, greeting, human).
 *
 * Written on 2026-11-29 by a helper who saw no code and no results; never tune on
 * it; do not edit to suit the bot.
 */
import type { TinyBase } from './held-out-tiny.js';

export const TINY_BASES_EN: TinyBase[] = [
  // ---------------------------------------------------------------- 4 articles
  {
    key: 'bakery',
    name: 'Crumb & Co Bakery',
    language: 'en',
    articles: [
      {
        key: 'hours',
        title: 'Opening hours',
        content:
          'We are open Monday to Friday 7:00-18:00 and Saturday 8:00-14:00. Closed on Sundays and public holidays.',
      },
      {
        key: 'custom-cakes',
        title: 'Custom cakes',
        content:
          'Custom cakes must be ordered at least 3 days in advance, in the shop or by phone on 020 7946 0321. Prices start at £35 for a 6-inch cake. A 50% deposit is paid when you order.',
      },
      {
        key: 'allergens',
        title: 'Allergens and gluten-free',
        content:
          'All our products are made in a kitchen that handles nuts, wheat, eggs and milk. We bake gluten-free bread on Tuesdays and Fridays only, but we cannot guarantee it is free from traces of gluten.',
      },
      {
        key: 'delivery',
        title: 'Delivery',
        content:
          'We deliver cakes within 5 miles of the shop for £6. Delivery is available Tuesday to Saturday between 10:00 and 16:00. We do not deliver bread or pastries.',
      },
    ],
    questions: [
      { text: 'r u open saturday afternoon? want to come by around 3', kind: 'answerable', answer: 'hours' },
      { text: 'hi its Maria, how far ahead do i need to order a birthday cake? party is on the 14th', kind: 'answerable', answer: 'custom-cakes' },
      { text: 'How much does a 6-inch custom cake start at, and do I have to pay anything upfront?', kind: 'answerable', answer: 'custom-cakes' },
      { text: 'do you make gluten free bread every day or only on some days?', kind: 'answerable', answer: 'allergens' },
      { text: 'can you deliver a cake to Hackney on a monday? its about 3 miles from you', kind: 'answerable', answer: 'delivery' },
      { text: 'could you deliver a box of croissants for an office brekfast? its for 20 people', kind: 'answerable', answer: 'delivery' },
      { text: 'what time do you shut on weekdays?', kind: 'paraphrase', answer: 'hours' },
      { text: "my little boy can't have almonds or cashews, is there anything he can eat safely?", kind: 'paraphrase', answer: 'allergens' },
      { text: 'could someone drop a birthday gateau round to my flat in Islington?', kind: 'paraphrase', answer: 'delivery' },
      { text: "I'd like a unicorn-themed sponge for my daughter with her name written on top. How does that work?", kind: 'paraphrase', answer: 'custom-cakes' },
      { text: 'can i pay by card or is it cash only?', kind: 'unanswerable' },
      { text: 'do you sell vegan cakes? my sister is vegan', kind: 'unanswerable' },
      { text: 'whats the weather like in london tomorrow', kind: 'off_topic' },
      { text: 'who won the champions league in 2019?', kind: 'off_topic' },
      { text: 'can i get a cake on saturday?', kind: 'ambiguous', options: ['hours', 'custom-cakes', 'delivery'] },
      { text: 'hey there', kind: 'greeting' },
      { text: 'can i speak to an actual person pls', kind: 'human' },
    ],
  },

  // ---------------------------------------------------------------- 3 articles
  {
    key: 'bike-repair',
    name: 'Spoke & Chain Cycle Repairs',
    language: 'en',
    articles: [
      {
        key: 'prices',
        title: 'Service prices',
        content:
          'A basic service costs £45 and a full service costs £95. Puncture repair is £12 per wheel, plus the price of a new tube if needed.',
      },
      {
        key: 'booking',
        title: 'Booking a repair',
        content:
          'Book online or call 0161 496 0722. Most repairs are ready within 2 working days. Drop-offs are accepted Monday to Saturday from 8:30.',
      },
      {
        key: 'ebikes',
        title: 'E-bikes',
        content:
          'We repair e-bikes with Bosch, Shimano and Bafang systems. We do not repair batteries or do motor software updates. E-bike services cost £20 more than standard services.',
      },
    ],
    questions: [
      { text: 'how much is a full service?', kind: 'answerable', answer: 'prices' },
      { text: 'hi, got a flat on my back wheel, what do you charge for a puncture? - Tom', kind: 'answerable', answer: 'prices' },
      { text: 'if i drop my bike off on tuesday morning when will it be ready', kind: 'answerable', answer: 'booking' },
      { text: 'whats your phone number to book a repair', kind: 'answerable', answer: 'booking' },
      { text: 'The Bosch battery on my Cube e-bike has died. Can you repair it?', kind: 'answerable', answer: 'ebikes' },
      { text: 'can i bring my bike in on a saturday? what time do you start', kind: 'answerable', answer: 'booking' },
      { text: 'how quickly can i get my bicycle back after leaving it with you?', kind: 'paraphrase', answer: 'booking' },
      { text: 'do you guys work on electric bicycles at all?', kind: 'paraphrase', answer: 'ebikes' },
      { text: 'whats the damage for a tune-up on a road bike?', kind: 'paraphrase', answer: 'prices' },
      { text: 'do you sell second hand bikes?', kind: 'unanswerable' },
      { text: 'can you collect my bike from my house in Salford? i have no car', kind: 'unanswerable' },
      { text: "what's 17 x 23", kind: 'off_topic' },
      { text: 'are you single? 😏', kind: 'off_topic' },
      { text: 'how much is a service', kind: 'ambiguous', options: ['prices', 'ebikes'] },
      { text: 'thanks a lot!', kind: 'greeting' },
    ],
  },

  // ---------------------------------------------------------------- 5 articles
  {
    key: 'dental',
    name: 'Brightside Dental',
    language: 'en',
    articles: [
      {
        key: 'new-patients',
        title: 'New patients',
        content:
          'New patients can register online or at reception. Your first check-up takes 45 minutes and costs $120, including X-rays. Please bring a photo ID and your insurance card.',
      },
      {
        key: 'insurance',
        title: 'Insurance',
        content:
          'We accept Delta Dental, Cigna and MetLife. We do not accept Medicaid. We bill your insurer directly; you pay any co-pay on the day.',
      },
      {
        key: 'emergencies',
        title: 'Emergency appointments',
        content:
          'For a dental emergency, call (512) 555-0148 before 10:00 and we will see you the same day. Outside opening hours, call the on-call dentist on (512) 555-0199.',
      },
      {
        key: 'hygiene',
        title: 'Cleaning and whitening',
        content:
          'A hygienist cleaning costs $95 and takes 30 minutes. In-office whitening costs $450 and take-home whitening kits cost $250.',
      },
      {
        key: 'cancellations',
        title: 'Cancellations',
        content:
          'Please cancel at least 24 hours before your appointment. Late cancellations and missed appointments are charged $50.',
      },
    ],
    questions: [
      { text: 'do you take MetLife insurance?', kind: 'answerable', answer: 'insurance' },
      { text: "hi i'm Priya, i chipped a tooth this morning and it really hurts. can i be seen today?", kind: 'answerable', answer: 'emergencies' },
      { text: 'how much is teeth whitening done at the office', kind: 'answerable', answer: 'hygiene' },
      { text: 'My appointment is tomorrow at 9am (Nov 30). If I cancel now, is there a fee?', kind: 'answerable', answer: 'cancellations' },
      { text: 'what do i need to bring to my first visit?', kind: 'answerable', answer: 'new-patients' },
      { text: 'is medicaid accepted', kind: 'answerable', answer: 'insurance' },
      { text: "I can't make it on thursday - is there a penalty if i let you know the evening prior?", kind: 'paraphrase', answer: 'cancellations' },
      { text: 'what would a scale and polish set me back?', kind: 'paraphrase', answer: 'hygiene' },
      { text: 'my kid knocked out a front tooth at football, what do we do right now??', kind: 'paraphrase', answer: 'emergencies' },
      { text: "I've just moved to Austin and want to join your practice, how do i do that?", kind: 'paraphrase', answer: 'new-patients' },
      { text: 'do you do Invisalign or braces?', kind: 'unanswerable' },
      { text: 'is there parking at the clinic?', kind: 'unanswerable' },
      { text: 'do you offer payment plans for a crown? its like $1200', kind: 'unanswerable' },
      { text: 'can you help me fix my python code, it says IndentationError: unexpected indent', kind: 'off_topic' },
      { text: "what's the capital of australia", kind: 'off_topic' },
      { text: 'how much is an appointment?', kind: 'ambiguous', options: ['new-patients', 'hygiene', 'insurance'] },
      { text: 'good morning!', kind: 'greeting' },
      { text: 'I would like to speak with the practice manager, please.', kind: 'human' },
    ],
  },

  // ---------------------------------------------------------------- 2 articles
  {
    key: 'saas-invoicing',
    name: 'Tallybook',
    language: 'en',
    articles: [
      {
        key: 'pricing',
        title: 'Plans and pricing',
        content:
          'The Starter plan is free for up to 5 invoices a month. The Pro plan costs $12 per month or $120 per year and includes unlimited invoices and 3 team members. You can cancel any time from Settings > Billing.',
      },
      {
        key: 'export',
        title: 'Exporting your data',
        content:
          'You can export invoices and clients as CSV or PDF from Reports > Export. Exports include everything from the last 7 years.',
      },
    ],
    questions: [
      { text: 'how much is Pro per year?', kind: 'answerable', answer: 'pricing' },
      { text: "hey, I'm on the free plan and already sent 5 invoices this month, can I send a 6th one?", kind: 'answerable', answer: 'pricing' },
      { text: 'how do I cancel my subscription', kind: 'answerable', answer: 'pricing' },
      { text: 'can i export my client list to csv?', kind: 'answerable', answer: 'export' },
      { text: 'My accountant needs all my invoices from 2021 as PDF. How do I get them out of Tallybook?', kind: 'answerable', answer: 'export' },
      { text: 'can my two coworkers use it too if I upgrade?', kind: 'paraphrase', answer: 'pricing' },
      { text: "what's the charge for the paid version if I pay annually?", kind: 'paraphrase', answer: 'pricing' },
      { text: 'how do i download a spreadsheet of all my stuff so i can move to another app?', kind: 'paraphrase', answer: 'export' },
      { text: 'do you integrate with QuickBooks?', kind: 'unanswerable' },
      { text: 'can I add my company logo to the invoices?', kind: 'unanswerable' },
      { text: 'is there an iphone app', kind: 'unanswerable' },
      { text: 'write a haiku about autumn', kind: 'off_topic' },
      { text: "what's the best deep dish pizza place in chicago?", kind: 'off_topic' },
      { text: 'hi', kind: 'greeting' },
      { text: 'i want to talk to someone from support, not a bot', kind: 'human' },
    ],
  },

  // ---------------------------------------------------------------- 6 articles
  {
    key: 'hostel',
    name: 'Harbour Lights Hostel Lisbon',
    language: 'en',
    articles: [
      {
        key: 'checkin',
        title: 'Check-in and check-out',
        content:
          'Check-in is from 15:00 to 23:00 and check-out is by 11:00. If you arrive after 23:00, email us beforehand and we will send you a key code.',
      },
      {
        key: 'luggage',
        title: 'Luggage storage',
        content:
          'Free luggage storage is available on your check-out day until 20:00. We also have lockers in every dorm; bring your own padlock or buy one at reception for €5.',
      },
      {
        key: 'breakfast',
        title: 'Breakfast',
        content:
          'Breakfast is served 7:30-10:30 in the common kitchen and costs €6. It includes bread, fruit, cereal, coffee and tea.',
      },
      {
        key: 'rooms',
        title: 'Rooms',
        content:
          'We have 6-bed and 8-bed mixed dorms, a 6-bed female-only dorm, and private double rooms with a shared bathroom. Towels can be rented for €2.',
      },
      {
        key: 'airport',
        title: 'Getting here from the airport',
        content:
          'Take the red metro line from the airport to Alameda, then the green line to Cais do Sodré. The hostel is a 4-minute walk from the station. A taxi costs about €15-20.',
      },
      {
        key: 'cancellation',
        title: 'Cancellation policy',
        content:
          'Free cancellation up to 48 hours before arrival. After that, the first night is charged. Groups of 8 or more must cancel 14 days ahead.',
      },
    ],
    questions: [
      { text: 'what time is check out?', kind: 'answerable', answer: 'checkin' },
      { text: 'Hi, my flight lands at 1am on Dec 12 (booking ref HL-20931). Can I still get in that late?', kind: 'answerable', answer: 'checkin' },
      { text: 'my bus leaves at 7pm on checkout day, can i keep my backpack with you till then?', kind: 'answerable', answer: 'luggage' },
      { text: 'is breakfast included in the price?', kind: 'answerable', answer: 'breakfast' },
      { text: 'do you have a female only dorm?', kind: 'answerable', answer: 'rooms' },
      { text: 'how do i get to you from the airport by metro', kind: 'answerable', answer: 'airport' },
      { text: 'need to cancel, we were meant to arrive tomorrow for 3 nights. do i get charged? - Lukas', kind: 'answerable', answer: 'cancellation' },
      { text: 'can my girlfriend and I get somewhere to ourselves, not with strangers?', kind: 'paraphrase', answer: 'rooms' },
      { text: 'is there anything to eat in the mornings and what does it set me back?', kind: 'paraphrase', answer: 'breakfast' },
      { text: 'just landed at LIS, whats the cheapest way to reach you on the underground?', kind: 'paraphrase', answer: 'airport' },
      { text: "is there somewhere secure for my laptop while i'm out sightseeing?", kind: 'paraphrase', answer: 'luggage' },
      { text: 'do you have a bar or sell beer?', kind: 'unanswerable' },
      { text: 'is there parking for a campervan?', kind: 'unanswerable' },
      { text: 'can i pay in cash when i arrive?', kind: 'unanswerable' },
      { text: 'how many legs does a spider have', kind: 'off_topic' },
      { text: 'can you translate "thank you very much" into japanese', kind: 'off_topic' },
      { text: 'what time does it start?', kind: 'ambiguous', options: ['checkin', 'breakfast'] },
      { text: 'ok bye, thanks!', kind: 'greeting' },
      { text: 'Is there a receptionist I can talk to?', kind: 'human' },
    ],
  },

  // ---------------------------------------------------------------- 3 articles
  {
    key: 'yoga',
    name: 'Still Point Yoga',
    language: 'en',
    articles: [
      {
        key: 'schedule',
        title: 'Class timetable',
        content:
          'Vinyasa is on Monday, Wednesday and Friday at 18:30. Gentle Hatha is on Tuesday and Thursday at 10:00, and Yin is on Sunday at 17:00. Classes last 60 minutes.',
      },
      {
        key: 'passes',
        title: 'Prices and passes',
        content:
          'A drop-in class is $22. A 10-class pass is $180 and is valid for 4 months. Unlimited monthly membership is $129.',
      },
      {
        key: 'first-class',
        title: 'Your first class',
        content:
          'Arrive 10 minutes early to fill in a health form. Mats are free to borrow, and we have showers. Beginners are welcome in every class, but Gentle Hatha is the best start.',
      },
    ],
    questions: [
      { text: 'when is yin yoga?', kind: 'answerable', answer: 'schedule' },
      { text: 'hi, its Jess! how much for a single drop in class?', kind: 'answerable', answer: 'passes' },
      { text: 'do I need to bring my own mat?', kind: 'answerable', answer: 'first-class' },
      { text: 'I bought a 10 class pass on 1 July, can I still use it in December?', kind: 'answerable', answer: 'passes' },
      { text: 'is there a vinyasa class on friday evening after work?', kind: 'answerable', answer: 'schedule' },
      { text: "i've never done this before and i'm pretty stiff, which session should i try?", kind: 'paraphrase', answer: 'first-class' },
      { text: 'is there an all-you-can-attend deal and what does it cost?', kind: 'paraphrase', answer: 'passes' },
      { text: 'what sessions are there on weekday mornings before lunch?', kind: 'paraphrase', answer: 'schedule' },
      { text: 'do you have private one-to-one sessions?', kind: 'unanswerable' },
      { text: 'is there a student discount?', kind: 'unanswerable' },
      { text: "what's a good recipe for banana bread", kind: 'off_topic' },
      { text: 'tell me a joke', kind: 'off_topic' },
      { text: 'how long does it last?', kind: 'ambiguous', options: ['schedule', 'passes'] },
      { text: 'thank you so much 🙏', kind: 'greeting' },
    ],
  },

  // ---------------------------------------------------------------- 5 articles
  {
    key: 'plant-shop',
    name: 'Leaf Post Plants',
    language: 'en',
    articles: [
      {
        key: 'shipping',
        title: 'Shipping',
        content:
          'We ship to the UK only. Standard delivery takes 2-4 working days and costs £4.95; it is free on orders over £40. We do not ship on Fridays so plants are not stuck in a depot over the weekend.',
      },
      {
        key: 'damaged',
        title: 'Damaged plants',
        content:
          'If your plant arrives damaged, send a photo to hello@leafpost.co.uk within 48 hours of delivery and we will send a replacement or a refund.',
      },
      {
        key: 'care',
        title: 'Plant care basics',
        content:
          'Every order comes with a care card. Most of our plants like bright, indirect light and watering once the top 2 cm of soil is dry. Do not leave pots standing in water.',
      },
      {
        key: 'pets',
        title: 'Pet-safe plants',
        content:
          'Plants marked with a paw icon are safe for cats and dogs, such as calathea, spider plant and boston fern. Monstera, pothos and peace lily are toxic to pets.',
      },
      {
        key: 'gift',
        title: 'Gift orders',
        content:
          'You can add a gift message for free at checkout. We never put prices in gift parcels. Gift wrapping costs £3.',
      },
    ],
    questions: [
      { text: 'do you ship to Ireland?', kind: 'answerable', answer: 'shipping' },
      { text: 'hey, order #48213 arrived this morning and the pot is cracked and the plant snapped in half, what do i do?', kind: 'answerable', answer: 'damaged' },
      { text: 'is a pothos ok to have around my cat?', kind: 'answerable', answer: 'pets' },
      { text: 'how much to gift wrap', kind: 'answerable', answer: 'gift' },
      { text: 'if i spend £42 is shipping free', kind: 'answerable', answer: 'shipping' },
      { text: "It's a present for my mum - will the price be shown anywhere in the box?", kind: 'answerable', answer: 'gift' },
      { text: 'how often should i give my new fern a drink?', kind: 'paraphrase', answer: 'care' },
      { text: "my pup chews everything green, which ones won't hurt him?", kind: 'paraphrase', answer: 'pets' },
      { text: 'if i buy something on thursday, when will it turn up at my door in Leeds?', kind: 'paraphrase', answer: 'shipping' },
      { text: 'do you sell pots and compost separately?', kind: 'unanswerable' },
      { text: 'can i pick up my order from your shop in Bristol instead?', kind: 'unanswerable' },
      { text: 'do you have a discount code for first orders?', kind: 'unanswerable' },
      { text: 'who is the prime minister of canada', kind: 'off_topic' },
      { text: 'can you recommend a good netflix series for tonight', kind: 'off_topic' },
      { text: 'the leaves on my plant are going brown, what do i do?', kind: 'ambiguous', options: ['damaged', 'care'] },
      { text: 'hello!', kind: 'greeting' },
    ],
  },

  // ---------------------------------------------------------------- 4 articles
  {
    key: 'plumber',
    name: 'Dave Kowalski Plumbing & Heating',
    language: 'en',
    articles: [
      {
        key: 'callout',
        title: 'Call-out fees',
        content:
          'Our call-out fee is $85, which includes the first 30 minutes of work. After that we charge $40 per 30 minutes, plus parts.',
      },
      {
        key: 'emergency',
        title: 'Emergency service',
        content:
          'We offer 24/7 emergency service for burst pipes, major leaks and no heat. Call 0412 555 318 any time. Night and weekend call-outs are charged at double rate.',
      },
      {
        key: 'area',
        title: 'Service area',
        content:
          'We cover Brisbane and suburbs within 30 km of the CBD, including Ipswich and Redcliffe. We do not work on the Gold Coast.',
      },
      {
        key: 'hot-water',
        title: 'Hot water systems',
        content:
          'We install and repair gas and electric hot water systems from Rheem, Rinnai and Dux. A new electric system installed starts from $1,450.',
      },
    ],
    questions: [
      { text: 'Hi, Mark here in Ipswich, do you come out this far?', kind: 'answerable', answer: 'area' },
      { text: "my hot water's gone cold, its a Rinnai gas unit, do you fix those?", kind: 'answerable', answer: 'hot-water' },
      { text: 'water is pouring out of a burst pipe under my sink and its 2am on sunday, can anyone come??', kind: 'answerable', answer: 'emergency' },
      { text: "what's the call out charge", kind: 'answerable', answer: 'callout' },
      { text: 'do you do jobs on the Gold Coast? im in Southport', kind: 'answerable', answer: 'area' },
      { text: 'roughly how much to put in a new electric hot water system?', kind: 'answerable', answer: 'hot-water' },
      { text: 'what does it cost just for you to turn up at my house?', kind: 'paraphrase', answer: 'callout' },
      { text: "it's nearly midnight and there's a flood in my bathroom coming from the ceiling, is somebody around?", kind: 'paraphrase', answer: 'emergency' },
      { text: 'how far out from the city do you go?', kind: 'paraphrase', answer: 'area' },
      { text: 'do you give free quotes?', kind: 'unanswerable' },
      { text: 'are you licensed and insured?', kind: 'unanswerable' },
      { text: 'can i pay by credit card and is there a surcharge', kind: 'unanswerable' },
      { text: 'how do i make a margarita', kind: 'off_topic' },
      { text: "what's 15% of 240", kind: 'off_topic' },
      { text: 'how much do you charge?', kind: 'ambiguous', options: ['callout', 'emergency', 'hot-water'] },
      { text: 'cheers mate, thanks', kind: 'greeting' },
      { text: 'can I talk to Dave directly please', kind: 'human' },
    ],
  },

  // ---------------------------------------------------------------- medium base, 18 articles
  {
    key: 'electronics-shop',
    name: 'Voltbay Electronics',
    language: 'en',
    articles: [
      {
        key: 'shipping-costs',
        title: 'Shipping costs',
        content:
          'Shipping within the Netherlands and Belgium is free on orders over €50; below that it costs €4.95. Shipping to Germany, France and Luxembourg costs €7.95. We do not ship to any other countries.',
      },
      {
        key: 'delivery-times',
        title: 'Delivery times',
        content:
          'Orders placed before 22:00 on a working day are shipped the same day. Delivery in the Netherlands takes 1 working day, and 2-4 working days to other countries.',
      },
      {
        key: 'tracking',
        title: 'Tracking your order',
        content:
          'You get an email with a PostNL or DHL tracking link as soon as your parcel leaves our warehouse. You can also see the status under My Account > Orders.',
      },
      {
        key: 'returns',
        title: 'Returns',
        content:
          'You can return any product within 30 days of delivery if it is unused and in its original packaging. Start a return under My Account > Returns and print the free return label. Opened headphones and earbuds can only be returned if faulty, for hygiene reasons.',
      },
      {
        key: 'refunds',
        title: 'Refunds',
        content:
          'Refunds are paid to your original payment method within 5 working days after we receive the return. Shipping costs are refunded only if you return the whole order.',
      },
      {
        key: 'warranty',
        title: 'Warranty',
        content:
          'All products have a 2-year warranty. If a product breaks within the warranty, register a claim under My Account > Warranty with your order number and a description of the fault. We repair or replace it, or refund you if neither is possible.',
      },
      {
        key: 'payment',
        title: 'Payment methods',
        content:
          'We accept iDEAL, Bancontact, Visa, Mastercard, PayPal and Klarna (pay in 30 days). We do not accept cash on delivery or cryptocurrency.',
      },
      {
        key: 'price-match',
        title: 'Price match',
        content:
          'If you find the same product cheaper at a Dutch or Belgian web shop within 14 days of buying it, we refund the difference. Marketplace sellers (like Bol.com partners or Amazon Marketplace) do not count.',
      },
      {
        key: 'order-changes',
        title: 'Changing or cancelling an order',
        content:
          'You can change or cancel an order for free until it is shipped, in My Account > Orders. After it is shipped, you need to use the normal return process.',
      },
      {
        key: 'pickup',
        title: 'Pickup point in Utrecht',
        content:
          'You can collect orders from our pickup point at Vaartsche Rijn 12, Utrecht, Monday to Saturday 10:00-18:00. Choose "Pickup Utrecht" at checkout; pickup is free and orders are ready after 2 hours.',
      },
      {
        key: 'trade-in',
        title: 'Trade-in',
        content:
          'Trade in your old smartphone, tablet or laptop and get store credit. Fill in the trade-in form for a quote, send the device with a free label, and we pay the credit within 7 days after checking it. Devices that do not switch on get a maximum of €10.',
      },
      {
        key: 'business',
        title: 'Business customers',
        content:
          'Companies can order on invoice with a 14-day payment term after registering a business account with their KvK and VAT number. Prices shown include 21% VAT; business invoices show VAT separately.',
      },
      {
        key: 'gift-cards',
        title: 'Gift cards',
        content:
          'Gift cards are available from €10 to €500 and are valid for 2 years. They can be used online and at the Utrecht pickup point, but cannot be exchanged for cash.',
      },
      {
        key: 'student',
        title: 'Student discount',
        content:
          'Students get 5% off laptops and tablets after verifying with a valid student email address. The discount cannot be combined with other promotions.',
      },
      {
        key: 'recycling',
        title: 'Recycling old devices',
        content:
          'When we deliver a new TV, fridge or washing machine, we take the old one with us for free. Small electronics and batteries can be dropped off at our Utrecht pickup point.',
      },
      {
        key: 'tv-mounting',
        title: 'TV wall mounting',
        content:
          'We can mount your TV on the wall for €89 (TVs up to 65 inches) or €129 (larger TVs). Book this at checkout; the mount itself is not included. Available in the Netherlands only.',
      },
      {
        key: 'account',
        title: 'Your account',
        content:
          'You can reset your password via "Forgot password" on the login page. To delete your account, email privacy@voltbay.nl; we delete it within 30 days.',
      },
      {
        key: 'contact',
        title: 'Contact us',
        content:
          'Our customer service team is available by chat and phone (+31 30 555 0142) Monday to Friday 9:00-17:30. We answer emails to support@voltbay.nl within 1 working day.',
      },
    ],
    questions: [
      // answerable
      { text: 'hi, do you ship to Vienna, Austria?', kind: 'answerable', answer: 'shipping-costs' },
      { text: 'i ordered a usb-c charger for €19, how much is shipping to Rotterdam?', kind: 'answerable', answer: 'shipping-costs' },
      { text: 'If I order tonight at 21:30 (it is a Tuesday), when will it arrive in Amsterdam?', kind: 'answerable', answer: 'delivery-times' },
      { text: 'where can i see where my parcel is? order #VB-558120', kind: 'answerable', answer: 'tracking' },
      { text: "Hi, I'm Sven. I opened my Sony WH-1000XM5 headphones and I just don't like them. Can I return them?", kind: 'answerable', answer: 'returns' },
      { text: 'got a kettle delivered on 2 November, today is 29 November, its still sealed. can i still return it?', kind: 'answerable', answer: 'returns' },
      { text: 'how long until i get my money after you receive my return?', kind: 'answerable', answer: 'refunds' },
      { text: "my Samsung Galaxy Tab S9 that I bought 18 months ago won't charge anymore, is it still under warranty?", kind: 'answerable', answer: 'warranty' },
      { text: 'can i pay with klarna', kind: 'answerable', answer: 'payment' },
      { text: 'saw the same Philips Hue starter kit €15 cheaper at Coolblue 3 days after I bought it from you, do you refund the difference?', kind: 'answerable', answer: 'price-match' },
      { text: 'I ordered the wrong colour phone case an hour ago (order 771203), can I still change it?', kind: 'answerable', answer: 'order-changes' },
      { text: 'what are the opening hours of the Utrecht pickup point on saturday?', kind: 'answerable', answer: 'pickup' },
      { text: "how much store credit will i get for an iPhone 11 that doesn't turn on anymore?", kind: 'answerable', answer: 'trade-in' },
      { text: 'we are a small company in Eindhoven, can we pay on invoice?', kind: 'answerable', answer: 'business' },
      { text: 'do gift cards expire?', kind: 'answerable', answer: 'gift-cards' },
      { text: 'how much to wall mount a 75 inch LG TV?', kind: 'answerable', answer: 'tv-mounting' },
      { text: 'I forgot my password and cant log in', kind: 'answerable', answer: 'account' },
      { text: 'do students get a discount on a MacBook Air?', kind: 'answerable', answer: 'student' },
      // paraphrase
      { text: "when your courier brings the Bosch I bought for laundry, can he haul away the ancient thing it's replacing?", kind: 'paraphrase', answer: 'recycling' },
      { text: 'is it possible to settle up with bitcoin?', kind: 'paraphrase', answer: 'payment' },
      { text: 'can I swing by and grab my stuff myself instead of waiting for the postman?', kind: 'paraphrase', answer: 'pickup' },
      { text: 'how do I get rid of my profile and all my personal info with you?', kind: 'paraphrase', answer: 'account' },
      { text: "I'm at uni - is there any reduction if i buy a notebook computer?", kind: 'paraphrase', answer: 'student' },
      { text: "my package hasn't come yet, how can I follow it?", kind: 'paraphrase', answer: 'tracking' },
      { text: 'the display on the monitor I got from you last summer just died, will you sort it out for nothing?', kind: 'paraphrase', answer: 'warranty' },
      { text: 'our firm needs paperwork with the tax split out for our bookkeeping, possible?', kind: 'paraphrase', answer: 'business' },
      { text: 'if I click buy at 8pm, could it be at my door in Utrecht tomorrow?', kind: 'paraphrase', answer: 'delivery-times' },
      { text: 'can your team hang my telly above the fireplace?', kind: 'paraphrase', answer: 'tv-mounting' },
      // unanswerable
      { text: 'do you sell refurbished iPhones?', kind: 'unanswerable' },
      { text: 'is the PS5 Pro back in stock?', kind: 'unanswerable' },
      { text: 'are you doing a black friday sale this year?', kind: 'unanswerable' },
      { text: 'is there a Voltbay app for android', kind: 'unanswerable' },
      { text: 'Does the Samsung 55" QLED you sell have HDMI 2.1 ports?', kind: 'unanswerable' },
      { text: 'are you hiring in your warehouse? looking for a part time job', kind: 'unanswerable' },
      // off_topic
      { text: "what's the weather going to be like in Utrecht this weekend?", kind: 'off_topic' },
      { text: 'can you write me a cover letter for a marketing job', kind: 'off_topic' },
      { text: 'what year did the berlin wall fall', kind: 'off_topic' },
      { text: 'solve 3x + 7 = 22', kind: 'off_topic' },
      { text: 'do you like pineapple on pizza lol', kind: 'off_topic' },
      // ambiguous
      { text: 'how do i get my money back?', kind: 'ambiguous', options: ['returns', 'refunds', 'price-match'] },
      { text: 'can i send my laptop back to you?', kind: 'ambiguous', options: ['returns', 'warranty', 'trade-in'] },
      { text: 'how many days does it take?', kind: 'ambiguous', options: ['delivery-times', 'refunds', 'trade-in'] },
      // greeting
      { text: 'hello', kind: 'greeting' },
      { text: 'great, thanks for the help, bye!', kind: 'greeting' },
      // human
      { text: 'I want to speak to a real person about my order', kind: 'human' },
      { text: 'Please connect me to a human agent.', kind: 'human' },
    ],
  },
];
