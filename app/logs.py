"""The app's logging: one named logger per module (logging.getLogger(__name__)) under "app",
printed in Streamlit's own format, at the level ENCODER_EXPLORER_LOG_LEVEL names (default INFO).
Configured once, at the page's start (app.main)."""

from __future__ import annotations

import logging
import os
import sys

import streamlit as st

LEVEL_ENV = "ENCODER_EXPLORER_LOG_LEVEL"
LOGGERS = ("app", "encoder")  # the packages whose decisions an operator reads


def configure() -> None:
    """Streamlit's console format and the level from the environment, once per process (an
    unknown level name falls back to INFO, and says so)."""
    name = os.environ.get(LEVEL_ENV, "INFO").upper()
    level = logging.getLevelName(name)
    for package in LOGGERS:
        logger = logging.getLogger(package)
        if not logger.handlers:
            # the process's own stderr: a test runner's captured stream may close before a
            # session's models are released at exit
            handler = logging.StreamHandler(sys.__stderr__)
            handler.setFormatter(logging.Formatter(st.get_option("logger.messageFormat")))
            handler.formatter.default_msec_format = "%s.%03d"  # as Streamlit's own lines
            logger.addHandler(handler)
            logger.propagate = False
        logger.setLevel(level if isinstance(level, int) else logging.INFO)
    if not isinstance(level, int):
        logging.getLogger(__name__).warning("%s=%r is not a log level; using INFO", LEVEL_ENV, name)
