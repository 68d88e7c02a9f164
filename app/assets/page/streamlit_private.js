// Streamlit's own DOM as the page's scripts read it: its private test ids (data-testid="st..."),
// which any Streamlit release may rename. The scripts' side of app/streamlit_private.py (one name
// for every private use: the Python's and the CSS's there, the scripts' here); no other .js names
// one (tests/test_layout.py).

// The box Streamlit gives each element (a chart's tools go in it, after the chart)
export const ELEMENT_BOX = "[data-testid=stElementContainer]";
// The links of the top navigation between views; the open one has aria-current="page"
export const VIEW_LINKS = "[data-testid=stTopNavLink]";
// The main area: the page scrolls in an ancestor of it, or in it
export const MAIN = "[data-testid=stMain]";
// A table's and a code block's region that scrolls when wider than its place
export const TABLE_SCROLLER = '[data-testid="stTable"] > div';
export const CODE_SCROLLER = '[data-testid="stCode"] pre';
// What a reader types (the sentences, an answer)
export const TYPED_TEXT = '[data-testid="stTextArea"] textarea, [data-testid="stTextInput"] input';
