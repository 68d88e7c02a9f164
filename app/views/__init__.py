"""The page's views, one module each, declaring its session keys beside its drawing (app.registry
makes each a page), and their shared helpers: layout, widgets, changes (sentences about what
differs), figures (run-to-figure and run-to-table) and readings. A view imports only these
helpers, never the controls or another view."""
