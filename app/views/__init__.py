"""The page's views, one module each (app.registry lists them), and their shared helpers:
layout, widgets, changes (sentences about what differs) and figures (run-to-figure and
run-to-table). A view imports only these helpers, never the controls or another view."""
