import t from 'tap';
import { extractDocument, formatOf } from '../../gateway/knowledge/extract.js';
import { htmlToBlocks } from '../../gateway/knowledge/html.js';
import { pdfLinesToBlocks } from '../../gateway/knowledge/pdf.js';
import { missingPhrases } from '../../lib/agents/evaluate.js';
import { chunkBlocks, chunkContent, MAX_WORDS, parseBlocks, TARGET_WORDS } from '../../lib/knowledge/chunker.js';
import { withoutStopWords } from '../../lib/knowledge/stop-words.js';

// The pure text side of knowledge: structure, chunks, formats, phrase checks.
t.test('chunks follow the headings: nested paths, no chunk spans two sections', async (t) => {
  const chunks = chunkContent('Intro text.\n\n# Guide\n\n## Setup\n\nPlug it in.\n\n### Cables\n\nUse the short cable.\n\n## Use\n\nPress start.\n\n# Other\n\nMore.', 'markdown');
  t.same(chunks.map((c) => [c.headings.join(' › '), c.text]), [
    ['', 'Intro text.'],
    ['Guide › Setup', 'Plug it in.'],
    ['Guide › Setup › Cables', 'Use the short cable.'],
    ['Guide › Use', 'Press start.'],
    ['Other', 'More.'],
  ]);
  t.same(chunks.map((c) => c.position), [0, 1, 2, 3, 4]);
  t.same(chunkContent('# Not a heading in plain text', 'text').map((c) => c.headings), [[]]);
});

t.test('long sections: a few hundred words per chunk, sentences kept, overlap', async (t) => {
  const para = (n: number) => Array.from({ length: n }, (_, i) => `Word${i} is here.`).join(' ');
  const chunks = chunkBlocks([{ kind: 'heading', level: 1, text: 'Long' }, { kind: 'paragraph', text: para(400) }, { kind: 'paragraph', text: para(50) }]);
  t.ok(chunks.length >= 4, `${chunks.length} chunks`);
  for (const c of chunks) t.ok(c.words <= MAX_WORDS + 50, `${c.words} words`);
  t.ok(chunks.slice(1).every((c) => c.text.startsWith('…')), 'each continuation starts with the end of the chunk before');
  const noBreaks = 'x '.repeat(1000).trim();
  const cut = chunkBlocks([{ kind: 'paragraph', text: noBreaks }]);
  t.ok(cut.every((c) => c.words <= TARGET_WORDS + 60), 'text without sentence ends is cut by words');
});

t.test('markdown, HTML, PDF lines → blocks', async (t) => {
  const md = await extractDocument({ format: 'markdown', text: 'Title\n=====\n\nSee [the guide](https://x.example) and **this**.\n\n```\ncode line\n```\n\n> quoted' });
  t.equal(md.title, 'Title');
  t.same(parseBlocks(md.content, { headings: true }), [
    { kind: 'heading', level: 1, text: 'Title' },
    { kind: 'paragraph', text: 'See the guide and this.' },
    { kind: 'paragraph', text: 'code line' },
    { kind: 'paragraph', text: 'quoted' },
  ]);
  const html = htmlToBlocks('<title>T &amp; C</title><div>Menu</div><article><h2>Terms</h2><p>Fees &euro;5&nbsp;each.<br>Second line</p><table><tr><td>a</td><td>b</td></tr></table></article><script>x()</script>');
  t.equal(html.title, 'T & C');
  t.same(html.blocks, [{ kind: 'heading', level: 2, text: 'Terms' }, { kind: 'paragraph', text: 'Fees €5 each.\nSecond line' }, { kind: 'paragraph', text: 'a | b' }], 'the article only; entities decoded; cells joined');
  const pdf = pdfLinesToBlocks([[{ text: 'Big title', size: 24, y: 700 }, { text: 'Body line one', size: 10, y: 670 }, { text: 'continues here.', size: 10, y: 658 }, { text: 'New paragraph.', size: 10, y: 620 }, { text: 'Sub', size: 14, y: 600 }, { text: 'More body text here.', size: 10, y: 585 }]]);
  t.same(pdf, [
    { kind: 'heading', level: 1, text: 'Big title' },
    { kind: 'paragraph', text: 'Body line one continues here.' },
    { kind: 'paragraph', text: 'New paragraph.' },
    { kind: 'heading', level: 2, text: 'Sub' },
    { kind: 'paragraph', text: 'More body text here.' },
  ]);
  await t.rejects(extractDocument({ format: 'html', text: '<script>only()</script>' }), { name: 'ExtractionError', message: 'the document has no text to index' });
  t.same(['a.PDF', 'b.md', 'c.htm', 'd.txt', 'e.docx', null].map((n) => formatOf(n)), ['pdf', 'markdown', 'html', 'text', null, null]);
  t.equal(formatOf('/page', 'text/html; charset=utf-8'), 'html');
});

t.test('questions lose their asking words; phrases are matched loosely', async (t) => {
  t.equal(withoutStopWords('What are your opening hours?'), 'opening hours');
  t.equal(withoutStopWords('Подскажите, сколько стоит доставка?'), 'стоит доставка');
  t.equal(withoutStopWords('how?'), '');
  t.same(missingPhrases('Доставка — 3 дня.  Ёлки   ЗЕЛЁНЫЕ', ['доставка', 'елки зеленые', '5 дней']), ['5 дней']);
});
