/**
 * What the browser-side modules share: the DOM helper, the colour scales and the palette.
 *
 * Imported by every module and by the page's own scripts (app/assets/page).
 */

// Okabe & Ito's palette: distinct for every common colour vision deficiency
export const OKABE_ITO = {
  blue: "#0072B2", orange: "#E69F00", green: "#009E73", purple: "#CC79A7",
  skyBlue: "#56B4E9", vermillion: "#D55E00", yellow: "#F0E442", black: "#000000",
};

// Series told apart by colour (the explorer's heads, the scatter's token kinds, the charts' lines):
// every pair at least 10 apart (CIE76 ΔE) in normal vision and in simulated protanopia,
// deuteranopia and tritanopia (Machado et al. 2009, full severity), each at least 3:1 on white;
// encoder/web/__init__.py has the same list (tests/app/test_palette.py checks both)
// (blue, olive, green, magenta, vermillion, indigo, black, grey)
export const SERIES_COLOURS = ["#0072B2", "#6B5A00", "#00876A", "#C0488F", "#D55E00", "#3D2A8C",
  "#000000", "#8C8C8C"];

export const VIRIDIS = [
  [68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142],
  [31, 158, 137], [53, 183, 121], [110, 206, 88], [181, 222, 43], [253, 231, 37],
];

/** Viridis at `value` in [0, 1] (clamped) as [r, g, b]. */
export function viridis(value) {
  const x = Math.min(Math.max(value, 0), 1) * (VIRIDIS.length - 1);
  const i = Math.min(Math.floor(x), VIRIDIS.length - 2);
  const f = x - i;
  return VIRIDIS[i].map((c, j) => Math.round(c + f * (VIRIDIS[i + 1][j] - c)));
}

/** Blue (B less) - white - red (B more) at `value` in [-1, 1] (clamped) as [r, g, b], as the
 * page's B − A figures. */
export function diverging(value) {
  const x = Math.min(Math.max(value, -1), 1);
  const end = x < 0 ? [33, 102, 172] : [178, 24, 43];
  const f = Math.abs(x);
  return [255, 255, 255].map((c, j) => Math.round(c + f * (end[j] - c)));
}

/** [r, g, b] as a CSS colour. */
export const rgb = ([r, g, b]) => `rgb(${r},${g},${b})`;

/** A new element with these attributes and, if given, this text (user text: always as text,
 * never as HTML). */
export function element(tag, attributes = {}, text = null) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  if (text !== null) node.textContent = text;
  return node;
}

// ---------------------------------------------------------------------------- words

// The words of the page's language: {English message: its translation, or for a plural message
// its forms by CLDR category ({"one": ..., "other": ...})}, from the data's own (a figure's, a
// file's or a notebook's explorer) or the page's [data-page-words] (app/i18n/browser.py); none:
// English. Its direction ("rtl" or "ltr") comes with them, as the page's Python says it
// (app.i18n.RIGHT_TO_LEFT): the browser keeps no list of its own.
let WORDS = {};
let LANG = "en";
let DIRECTION = "ltr";
// A Streamlit page's language and words, which its script (app/assets/page/language.js) puts
// here, then telling the window's SPEECH_EVENT: the page's explorers and scatters carry no words
// of their own, so that a language switch sends their data again only as a reference, and they
// speak the page's (their glue's relabel). Nowhere else (a file, a notebook): none.
export const PAGE_SPEECH = "encoderExplorerSpeech";
export const SPEECH_EVENT = "encoder-explorer-speech";

/** Speak `lang` (a BCP 47 tag) with `words` (as above), written in `direction` ("rtl": right to
 * left; anything else: left to right), from now on; neither words nor lang given: the page's
 * language (PAGE_SPEECH), else English. */
export function speakWith(words, lang, direction) {
  if (words == null && lang == null) ({ words, lang, direction } = globalThis[PAGE_SPEECH] || {});
  WORDS = words && typeof words === "object" ? words : {};
  LANG = typeof lang === "string" && lang ? lang : "en";
  DIRECTION = direction === "rtl" ? "rtl" : "ltr";
}

/** The language spoken now ("en" when none was given). */
export const spoken = () => LANG;

/** The words spoken now (as `speakWith` takes them). */
export const spokenWords = () => WORDS;

/** Whether the language spoken is written right to left (Arabic), as its speaker said. */
export const rightToLeft = () => DIRECTION === "rtl";

/** `text` with each {name} replaced by values[name] (a name not given is left as it is). */
function fillIn(text, values) {
  if (!values) return text;
  return text.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g,
    (whole, name) => (Object.hasOwn(values, name) ? String(values[name]) : whole));
}

/** `message` in the language spoken, with `values` put in its {placeholders}. */
export function _(message, values) {
  const said = WORDS[message];
  return fillIn(typeof said === "string" && said ? said : message, values);
}

/** The form of `singular`/`plural` that `count` takes in the language spoken (Intl.PluralRules),
 * with `count` (as `number` writes it, unless `values` gives it written) and `values` put in its
 * placeholders. */
export function n_(singular, plural, count, values = {}) {
  const forms = WORDS[singular];
  let said = count === 1 ? singular : plural;
  if (forms && typeof forms === "object") {
    let category = "other";
    try {
      category = new Intl.PluralRules(LANG).select(count);
    } catch (error) { /* an unknown language: its "other" form */ }
    said = forms[category] || forms.other || said;
  }
  return fillIn(said, { count: number(count), ...values });
}

const FORMATS = new Map(); // "lang|digits|grouped" -> Intl.NumberFormat
/** `value` as the language spoken writes it ("0,715" in Spanish), with `digits` decimals, its
 * thousands grouped unless `grouped` is false (in English, as value.toFixed(digits), grouped
 * "1,234.500"); Western digits in every language, as the page's Python (app/i18n). */
export function number(value, digits = 0, grouped = true) {
  const key = `${LANG}|${digits}|${grouped}`;
  let format = FORMATS.get(key);
  if (!format) {
    const options = { minimumFractionDigits: digits, maximumFractionDigits: digits,
      useGrouping: grouped, numberingSystem: "latn" };
    try {
      format = new Intl.NumberFormat(LANG, options);
    } catch (error) {
      format = new Intl.NumberFormat("en", options);
    }
    FORMATS.set(key, format);
  }
  // the digits as toFixed rounds them (the exact binary value: 1.0005 -> "1.000"), then written
  // in the language's signs (a decimal string is formatted as it is, not rounded again)
  return Number.isFinite(value) ? format.format(value.toFixed(digits)) : format.format(value);
}
