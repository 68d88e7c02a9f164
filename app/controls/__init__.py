"""The controls: the sidebar, the session keys (app.controls.state) and the upload control.

Only app.main and the session glue above it import this package; nothing below it does."""
