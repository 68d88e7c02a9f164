from app.user_text import literal


def test_every_markdown_and_streamlit_marker_is_escaped():
    assert literal("**b** _i_ `c` [l](u) :red[x] $x$ # h") == (
        r"\*\*b\*\* \_i\_ \`c\` \[l\]\(u\) \:red\[x\] \$x\$ \# h"
    )


def test_plain_words_and_unicode_are_untouched():
    assert literal("Hello 世界 🍕") == "Hello 世界 🍕"
