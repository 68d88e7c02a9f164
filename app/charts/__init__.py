"""Figure builders: captured data (numpy arrays, pandas frames) in, plotly figures out.

One module per figure family: `common` (fonts, colours, escaping, tick labels, HTML export),
`attention`, `norms`, `diagram` (the block diagram) and `training` (the Training view). No
streamlit here, so every chart also works in a notebook. Import the module you draw with.
"""
