"""The page's shared vocabulary, below both the views and the lesson: layout (tables, headers,
columns), widgets (pickers, `show`), figures, readings (what a head reads) and the sentences
both say (changes)."""
