// The page's language and direction on the document itself (WCAG 3.1.1; right to left for
// Arabic): Streamlit's page says lang="en" whatever it shows, so each run's language, given in
// a hidden [data-page-language][data-page-direction] (streamlit_private.page_language), is put
// on the html element.
function declareLanguage() {
  const said = [...document.querySelectorAll("[data-page-language]")].pop();
  if (!said) return;
  const root = document.documentElement;
  if (root.lang !== said.dataset.pageLanguage) root.lang = said.dataset.pageLanguage;
  if (root.dir !== said.dataset.pageDirection) root.dir = said.dataset.pageDirection;
}

whenStill(declareLanguage, 50);
