// The page's language and direction on the document itself (WCAG 3.1.1; right to left for
// Arabic): Streamlit's page says lang="en" whatever it shows, so each run's language, given in
// a hidden [data-page-language][data-page-direction] (streamlit_private.page_language), is put
// on the html element; and the page's scripts speak it: the browser's words in it come as JSON
// text in the hidden [data-page-words] beside it (parsed, never read as markup; shared.js's
// speakWith), and the page's explorers and scatters are told them (shared.js's PAGE_SPEECH).

import {
  PAGE_SPEECH, SPEECH_EVENT, speakWith, spoken, spokenWords,
} from "../../../encoder/web/shared.js";
import { TYPED_TEXT } from "./streamlit_private.js";
import { whenChanged } from "./when_still.js";

let pageWordsRead = null; // the [data-page-words] text last spoken
// What a reader types (sentences, answers) runs in its own direction, whatever the page's: an
// English sentence on an Arabic page reads left to right, its full stop at its end (dir="auto":
// the direction of its first strong letter): TYPED_TEXT.

function declareLanguage() {
  const said = [...document.querySelectorAll("[data-page-language]")].pop();
  if (!said) return;
  const root = document.documentElement;
  if (root.lang !== said.dataset.pageLanguage) root.lang = said.dataset.pageLanguage;
  if (root.dir !== said.dataset.pageDirection) root.dir = said.dataset.pageDirection;
  for (const field of document.querySelectorAll(TYPED_TEXT)) {
    if (field.dir !== "auto") field.dir = "auto";
  }
  const words = [...document.querySelectorAll("[data-page-words]")].pop();
  if (words && words.textContent !== pageWordsRead) {
    pageWordsRead = words.textContent;
    try {
      speakWith(JSON.parse(pageWordsRead), root.lang, root.dir);
    } catch (error) {
      speakWith({}, root.lang, root.dir);
    }
  } else if (spoken() !== root.lang) {
    speakWith(spokenWords(), root.lang, root.dir);
  } else {
    return;
  }
  // the page's modules that carry no words of their own speak these (shared.js's PAGE_SPEECH)
  window[PAGE_SPEECH] = { words: spokenWords(), lang: spoken(), direction: root.dir };
  window.dispatchEvent(new Event(SPEECH_EVENT));
}

// At the next frame after the page changes, not once it is still: the run names its language
// among its first elements, and the document says it as soon as they arrive (a language switch
// redraws every label, and the page is not still again until its charts are drawn).
whenChanged(declareLanguage);
