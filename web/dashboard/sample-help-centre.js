// The sample help centre a new company can start from in one click ("Get started"): the
// articles in ./sample-help-centre/ (markdown, served with the dashboard's other files), the same
// ones `npm run demo` loads (scripts/demo/setup.ts reads that folder). Plain data and fetch, no
// DOM: test/web/get-started.test.ts checks every file of the folder is listed here.

export const SAMPLE_HELP_CENTRE_NAME = 'Sample help centre';

export const SAMPLE_FILES = ['contact.md', 'delivery.md', 'payments.md', 'returns.md', 'warranty.md'];

/** A markdown article's title: its first "# " heading, else its file name. */
export const titleOf = (content, file) => /^# (.+)$/m.exec(content)?.[1]?.trim() ?? file.replace(/\.md$/, '');

/** The sample articles as documents for POST /api/knowledge-bases/:id/documents: { file, title, content }. */
export async function sampleArticles(signal) {
  return Promise.all(
    SAMPLE_FILES.map(async (file) => {
      const res = await fetch(new URL(`./sample-help-centre/${file}`, import.meta.url), { signal });
      if (!res.ok) throw new Error(`The sample article ${file} could not be loaded (HTTP ${res.status}).`);
      const content = await res.text();
      return { file, title: titleOf(content, file), content };
    }),
  );
}
