import { Tokenizer, type TokenizerCallbacks } from 'htmlparser2';

/**
 * The element events of an HTML text (open with attributes, text, close), in time linear
 * in its length: htmlparser2's own tokenizer, and the tree rules of its `Parser` (implied
 * closes, void elements, SVG and MathML, `</p>` and `</br>` without an opening, a nested
 * `<form>` ignored) over a stack whose top is its end, with a count of each open name.
 * htmlparser2 12's `Parser` keeps the top at index 0 (`unshift` per element) and looks a
 * closing name up by `indexOf`: a page nested 60,000 deep, or many close tags of elements
 * that are not open, took seconds. The events are the same as that `Parser`'s with
 * `{ decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true }`.
 */
export interface HtmlHandler {
  onopentag(name: string, attribs: Record<string, string>): void;
  ontext(text: string): void;
  onclosetag(name: string): void;
}

const formTags = new Set(['input', 'option', 'optgroup', 'select', 'button', 'datalist', 'textarea']);
const pTag = new Set(['p']);
const headingTags = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'p']);
const tableSectionTags = new Set(['thead', 'tbody']);
const ddtTags = new Set(['dd', 'dt']);
const rtpTags = new Set(['rt', 'rp']);
const openImpliesClose = new Map<string, Set<string>>([
  ['tr', new Set(['tr', 'th', 'td'])],
  ['th', new Set(['th'])],
  ['td', new Set(['thead', 'th', 'td'])],
  ['body', new Set(['head', 'link', 'script'])],
  ['a', new Set(['a'])],
  ['li', new Set(['li'])],
  ['p', pTag],
  ['h1', headingTags],
  ['h2', headingTags],
  ['h3', headingTags],
  ['h4', headingTags],
  ['h5', headingTags],
  ['h6', headingTags],
  ['select', formTags],
  ['input', formTags],
  ['output', formTags],
  ['button', formTags],
  ['datalist', formTags],
  ['textarea', formTags],
  ['option', new Set(['option'])],
  ['optgroup', new Set(['optgroup', 'option'])],
  ['dd', ddtTags],
  ['dt', ddtTags],
  ...['address', 'article', 'aside', 'blockquote', 'details', 'div', 'dl', 'fieldset', 'figcaption', 'figure', 'footer', 'form', 'header', 'hr', 'main', 'nav', 'ol', 'pre', 'section', 'table', 'ul'].map(
    (name) => [name, pTag] as [string, Set<string>],
  ),
  ['rt', rtpTags],
  ['rp', rtpTags],
  ['tbody', tableSectionTags],
  ['tfoot', tableSectionTags],
]);
const voidElements = new Set(['area', 'base', 'basefont', 'br', 'col', 'command', 'embed', 'frame', 'hr', 'img', 'input', 'isindex', 'keygen', 'link', 'meta', 'param', 'source', 'track', 'wbr']);
const foreignContextElements = new Set(['math', 'svg']);
/** Compared with adjusted names (SVG casing), as htmlparser2 does. */
const htmlIntegrationElements = new Set(['mi', 'mo', 'mn', 'ms', 'mtext', 'annotation-xml', 'foreignObject', 'desc', 'title']);
const svgTagNameAdjustments = new Map(
  [
    'altGlyph', 'altGlyphDef', 'altGlyphItem', 'animateColor', 'animateMotion', 'animateTransform', 'clipPath', 'feBlend', 'feColorMatrix', 'feComponentTransfer',
    'feComposite', 'feConvolveMatrix', 'feDiffuseLighting', 'feDisplacementMap', 'feDistantLight', 'feDropShadow', 'feFlood', 'feFuncA', 'feFuncB', 'feFuncG', 'feFuncR',
    'feGaussianBlur', 'feImage', 'feMerge', 'feMergeNode', 'feMorphology', 'feOffset', 'fePointLight', 'feSpecularLighting', 'feSpotLight', 'feTile', 'feTurbulence',
    'foreignObject', 'glyphRef', 'linearGradient', 'radialGradient', 'textPath',
  ].map((name) => [name.toLowerCase(), name]),
);

const enum Foreign {
  None,
  Svg,
  MathML,
}

class TreeEvents implements TokenizerCallbacks {
  readonly #html: string;
  readonly #cbs: HtmlHandler;
  /** Open elements, innermost last. */
  readonly #stack: string[] = [];
  readonly #open = new Map<string, number>();
  readonly #foreign: Foreign[] = [Foreign.None];
  #tagname = '';
  #attribname = '';
  #attribvalue = '';
  #attribs: Record<string, string> | null = null;

  constructor(html: string, cbs: HtmlHandler) {
    this.#html = html;
    this.#cbs = cbs;
  }

  #isOpen(name: string): boolean {
    return (this.#open.get(name) ?? 0) > 0;
  }

  isInForeignContext(): boolean {
    return this.#foreign[this.#foreign.length - 1] !== Foreign.None;
  }

  #readTagName(start: number, end: number): string {
    const name = this.#html.slice(start, end).toLowerCase();
    if (this.#foreign[this.#foreign.length - 1] === Foreign.Svg) return svgTagNameAdjustments.get(name) ?? name;
    if (this.#foreign.length > 1) {
      const adjusted = svgTagNameAdjustments.get(name);
      if (adjusted !== undefined && this.#isOpen(adjusted)) return adjusted;
    }
    if (!this.isInForeignContext()) return name === 'image' ? 'img' : name;
    return name;
  }

  #emitOpenTag(name: string): void {
    this.#tagname = name;
    if (name === 'form' && this.#isOpen('form')) {
      this.#tagname = '';
      return;
    }
    const impliesClose = openImpliesClose.get(name);
    if (impliesClose) {
      while (this.#stack.length > 0 && impliesClose.has(this.#stack[this.#stack.length - 1]!)) this.#popElement();
    }
    if (!voidElements.has(name)) {
      this.#stack.push(name);
      this.#open.set(name, (this.#open.get(name) ?? 0) + 1);
      if (name === 'svg') this.#foreign.push(Foreign.Svg);
      else if (name === 'math') this.#foreign.push(Foreign.MathML);
      else if (htmlIntegrationElements.has(name)) this.#foreign.push(Foreign.None);
    }
    this.#attribs = {};
  }

  #endOpenTag(): void {
    if (this.#attribs) {
      this.#cbs.onopentag(this.#tagname, this.#attribs);
      this.#attribs = null;
    }
    if (voidElements.has(this.#tagname)) this.#cbs.onclosetag(this.#tagname);
    this.#tagname = '';
  }

  #popElement(): void {
    const element = this.#stack.pop()!;
    this.#open.set(element, this.#open.get(element)! - 1);
    if (foreignContextElements.has(element) || htmlIntegrationElements.has(element)) this.#foreign.pop();
    this.#cbs.onclosetag(element);
  }

  #closeCurrentTag(): void {
    const name = this.#tagname;
    this.#endOpenTag();
    if (this.#stack[this.#stack.length - 1] === name) this.#popElement();
  }

  ontext(start: number, end: number): void {
    this.#cbs.ontext(this.#html.slice(start, end));
  }

  ontextentity(codepoint: number): void {
    this.#cbs.ontext(String.fromCodePoint(codepoint));
  }

  onopentagname(start: number, end: number): void {
    this.#emitOpenTag(this.#readTagName(start, end));
  }

  onopentagend(): void {
    this.#endOpenTag();
  }

  onclosetag(start: number, end: number): void {
    const name = this.#readTagName(start, end);
    if (!voidElements.has(name)) {
      if (this.#isOpen(name)) {
        let popped;
        do {
          popped = this.#stack[this.#stack.length - 1];
          this.#popElement();
        } while (popped !== name);
      } else if (name === 'p') {
        this.#emitOpenTag('p');
        this.#closeCurrentTag();
      }
    } else if (name === 'br') {
      this.#cbs.onopentag('br', {});
      this.#cbs.onclosetag('br');
    }
  }

  onselfclosingtag(): void {
    if (this.isInForeignContext()) this.#closeCurrentTag();
    else this.#endOpenTag();
  }

  onattribname(start: number, end: number): void {
    this.#attribname = this.#html.slice(start, end).toLowerCase();
  }

  onattribdata(start: number, end: number): void {
    this.#attribvalue += this.#html.slice(start, end);
  }

  onattribentity(codepoint: number): void {
    this.#attribvalue += String.fromCodePoint(codepoint);
  }

  onattribend(): void {
    if (this.#attribs && !Object.hasOwn(this.#attribs, this.#attribname)) this.#attribs[this.#attribname] = this.#attribvalue;
    this.#attribvalue = '';
  }

  oncdata(start: number, end: number, offset: number): void {
    // HTML, not XML: CDATA is text only inside SVG or MathML, else a comment.
    if (this.isInForeignContext()) this.#cbs.ontext(this.#html.slice(start, end - offset));
  }

  oncomment(): void {}
  ondeclaration(): void {}
  onprocessinginstruction(): void {}

  onend(): void {
    for (let i = this.#stack.length - 1; i >= 0; i--) this.#cbs.onclosetag(this.#stack[i]!);
  }
}

/** Calls the handler for each element event of the text, in order. */
export function parseHtml(html: string, handler: HtmlHandler): void {
  const tokenizer = new Tokenizer({ xmlMode: false, decodeEntities: true }, new TreeEvents(html, handler));
  tokenizer.write(html);
  tokenizer.end();
}
